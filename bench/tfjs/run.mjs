#!/usr/bin/env node
// Issue 26's speed table in one run: the tutorial model's training step on tfjs' cpu and wasm
// backends (tfjs alone, with parts frozen, with the fast gradient kernels, with mha-wasm's layer),
// model.fit epochs, and the attention layer alone against direct mha-wasm calls. Each measurement
// runs in its own process, one thread. Prints a markdown table.
//
//   node bench/tfjs/run.mjs [--steps=3] [--slow-steps=1] [--epochs=2] [--clock=cpu|wall]
// --clock=cpu (the default) reports every figure in each process' CPU time (one thread, so about
// an idle machine's wall time; other jobs on a shared machine inflate it far less); wall: wall time.
import { execFileSync } from 'node:child_process';

const args = process.argv.slice(2);
const option = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const here = (file) => new URL(file, import.meta.url).pathname;
const run = (script, extra) => execFileSync(process.execPath, [here(script), ...extra], { encoding: 'utf8', maxBuffer: 1 << 24 })
  .trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));

const clock = option('clock', 'cpu');
if (clock !== 'cpu' && clock !== 'wall') throw new Error(`--clock must be cpu or wall, got ${clock}`);
const stepSeconds = (r) => (clock === 'cpu' ? r?.cpu_seconds : r?.seconds);
const fitMedian = (r) => (clock === 'cpu' ? r.cpu_median : r.median);
console.log(`clock: ${clock === 'cpu' ? 'each process\' CPU time (user + system)' : 'wall time'}\n`);
const steps = {};
for (const backend of ['cpu', 'wasm']) {
  for (const r of run('./training-steps.mjs', [`--backend=${backend}`, `--steps=${option('steps', 3)}`, `--slow-steps=${option('slow-steps', 1)}`])) {
    (steps[r.row] ??= {})[backend] = r;
  }
}
const cell = (r) => (stepSeconds(r) == null ? (r?.note ?? '-') : stepSeconds(r).toFixed(stepSeconds(r) < 1 ? 3 : 2));
console.log('| the tutorial\'s model, seconds per training step (batch 64) | tfjs cpu backend | tfjs wasm backend |\n|---|---:|---:|');
for (const [row, byBackend] of Object.entries(steps)) console.log(`| ${row} | ${cell(byBackend.cpu)} | ${cell(byBackend.wasm)} |`);

const fits = Object.fromEntries(['cpu', 'wasm'].map((b) => [b, run('./fit-epochs.mjs', [`--backend=${b}`, `--epochs=${option('epochs', 2)}`])[0]]));
const baseline = stepSeconds(steps['everything, attention from tfjs ops (tfjs alone)']?.cpu);
const stepsPerEpoch = Math.ceil(fits.cpu.samples * 0.8 / 64);
console.log('\n| model.fit, 2400 sentences, validationSplit 0.2, batch 64 | tfjs cpu backend | tfjs wasm backend |\n|---|---:|---:|');
console.log(`| seconds per epoch, mha-wasm attention + fast kernels (median of ${fits.cpu.epochs}) | ${fitMedian(fits.cpu)} | ${fitMedian(fits.wasm)} |`);
console.log(`| 10 epochs (10 x the median) | ${(10 * fitMedian(fits.cpu)).toFixed(0)} s | ${(10 * fitMedian(fits.wasm)).toFixed(0)} s |`);
if (baseline) {
  const estimate = baseline * stepsPerEpoch;
  console.log(`| tfjs alone, attention from tfjs ops: ${stepsPerEpoch} steps x ${baseline.toFixed(1)} s (its measured step; validation not counted) | ${estimate.toFixed(0)} s | cannot run |`);
  console.log(`| speed-up per epoch over tfjs alone on cpu | ${(estimate / fitMedian(fits.cpu)).toFixed(0)}x | ${(estimate / fitMedian(fits.wasm)).toFixed(0)}x |`);
}

console.log('\n| the attention layer alone (64 x 32 x 100, 4 heads x 128), ms | tfjs layer cpu | direct | ratio | tfjs layer wasm | direct | ratio |\n|---|---:|---:|---:|---:|---:|---:|');
const overhead = Object.fromEntries(['cpu', 'wasm'].map((b) => [b, run('./attention-overhead.mjs', [`--backend=${b}`, `--clock=${clock}`])]));
for (const [i, { what }] of overhead.cpu.entries()) {
  const c = overhead.cpu[i], w = overhead.wasm[i];
  console.log(`| ${what} | ${c.ms} | ${c.direct_ms} | ${c.ratio} | ${w.ms} | ${w.direct_ms} | ${w.ratio} |`);
}
