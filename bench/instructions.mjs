// Instructions per forward call and per training step, counted by callgrind, for A/B comparisons
// on a machine too busy for wall-clock timing (the counts do not move with the load). Each
// checkout must have its own dist/ built (the mha-simd build is the one counted).
//
//   node bench/instructions.mjs <checkout A> <checkout B> [--shapes=0,3] [--calls=5]
//                               [--config-a=JSON] [--config-b=JSON] [--training=16,96,192,3,64|no]
//                               [--kernels-a=SPEC] [--kernels-b=SPEC]
// The configs are added to each side's layer: the same checkout twice with --config-b='{"batchFirst":false}'
// counts what the sequence-first layout costs, with --config-b='{"dtype":"float64"}' a float64 layer's.
//
// A checkout with kernel variants (src/mha/kernels/kernel_choice.hpp) runs the variants its
// calibration picks on this machine, asked once outside callgrind (whose slowed clock would pick
// at random), or the ones MHA_KERNELS=gemm=NAME,flash=NAME,exp=NAME names, or --kernels-a / --kernels-b
// (one spec per side: a checkout refuses a kernel its build lacks); the table says which.
// --training=B,L,E,H,Dh adds a row for one training step (forward with grad: true and its backward,
// bench/instructions-training.mjs) on that self-attention shape, without the configs; no leaves
// it out. The default, 16x96x192x3x64 (3 heads of 64), is issue 49's.
//
// For each shape and checkout it runs a forward script twice under callgrind, with 1 call and
// with 1 + calls: the difference divided by calls is one call, start-up and compilation excluded.
// V8 runs with --no-liftoff --single-threaded, so the wasm is compiled once by TurboFan on the
// main thread and the counts repeat (to within about 1% of one call: give more --calls for less).
import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { label, SHAPES } from './shapes.mjs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const args = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--'))
  .map((a) => (a.includes('=') ? [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a.slice(2)])));  // (a spec's own '=' kept)
if (positional.length !== 2) {
  console.error('usage: node bench/instructions.mjs <checkout A> <checkout B> [--shapes=0,3] [--calls=5] [--config-a=JSON] [--config-b=JSON] [--training=B,L,E,H,Dh|no]');
  process.exit(2);
}
const checkouts = positional.map((p) => path.resolve(p));
const shapes = (args.shapes ?? '0,3,5').split(',').filter(Boolean).map((i) => SHAPES[Number(i)]);  // --shapes= : none
const CALLS = Number(args.calls ?? 5);
const configs = [args['config-a'] ?? '{}', args['config-b'] ?? '{}'];
const training = (args.training ?? '16,96,192,3,64') === 'no' ? null : args.training ?? '16,96,192,3,64';

/**
 * The variants a checkout's mha-simd build calibrates to here, as MHA_KERNELS' spec
 * ("gemm=4x8,flash=4x128,exp=estrin5": every kernel its build has; null: a build without variants).
 */
function calibratedKernels(checkout) {
  if (process.env.MHA_KERNELS) return process.env.MHA_KERNELS;
  const script = `const { loadBuild } = await import(${JSON.stringify(`${checkout}/tools/load-wasm-build.mjs`)});`
    + "const { module } = await loadBuild('mha-simd');"
    + 'const c = module.kernelChoice ? JSON.parse(module.kernelChoice()) : {};'
    + 'console.log(Object.entries(c).map(([k, v]) => `${k}=${v.variant}`).join(","));';
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return run.stdout.trim() || null;
}
const kernelSpecs = checkouts.map((c, i) => args[`kernels-${'ab'[i]}`] ?? calibratedKernels(c));

/** Instructions callgrind counts for `node <script> <checkout> ...scriptArgs` (one process), with `kernels` (an MHA_KERNELS spec). */
function instructions(script, checkout, scriptArgs, what, kernels) {
  const run = spawnSync('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', '--callgrind-out-file=/dev/null',
    process.execPath, '--no-liftoff', '--single-threaded', new URL(script, import.meta.url).pathname, checkout, ...scriptArgs],
  { encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, ...(kernels ? { MHA_KERNELS: kernels } : {}) } });
  const found = /Collected : (\d+)/.exec(run.stderr ?? '');  // valgrind's summary, on stderr
  if (run.status !== 0 || !found) throw new Error(`callgrind failed on ${checkout} ${what}: ${run.error?.message ?? run.stderr}`);
  return Number(found[1]);
}

/** Millions of instructions of one call: (1 + CALLS calls) - (1 call), over CALLS. */
function perCall(count) {
  return (count(1 + CALLS) - count(1)) / CALLS / 1e6;
}

const row = (name, [a, b]) => console.log(`| ${name} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(3)} |`);

console.log(`instructions per forward call${training ? ' and per training step' : ''} (callgrind, mha-simd, 1 thread; calls=${CALLS}) — ${new Date().toISOString().slice(0, 10)}`);
const kernelNote = (i) => (kernelSpecs[i] ? ` (kernels ${kernelSpecs[i]})` : '');
console.log(`A: ${checkouts[0]} ${configs[0]}${kernelNote(0)}\nB: ${checkouts[1]} ${configs[1]}${kernelNote(1)}\n`);
console.log('| shape | A (M instr.) | B (M instr.) | B / A |');
console.log('| --- | ---: | ---: | ---: |');
for (const s of shapes) {
  row(label(s), checkouts.map((c, i) => perCall((calls) => instructions('instructions-forward.mjs', c,
    [...[s.B, s.L, s.S, s.E, s.H, calls].map(String), configs[i]], label(s), kernelSpecs[i]))));
}
if (training) {
  const [B, L, E, H, Dh = E / H] = training.split(',').map(Number);
  const name = `training step ${B}x${L}x${E}x${H}x${Dh}`;
  row(name, checkouts.map((c, i) => perCall((calls) => instructions('instructions-training.mjs', c,
    [B, L, E, H, Dh, calls].map(String), name, kernelSpecs[i]))));
}
