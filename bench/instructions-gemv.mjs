// Instructions of one decode GEMV per f16 and q4 variant (src/mha/kernels/gemv_variants.hpp),
// counted by callgrind: a Linear layer of the weightDtype, one row, `calls` products, each
// variant forced by MHA_KERNELS (so nothing is calibrated under callgrind), the mha-simd build.
// Counts repeat exactly where timings on a loaded machine do not.
//
//   node bench/instructions-gemv.mjs [--shape=896,4864] [--calls=5] [--dtypes=f16,q4] [--variants=widen,even-odd,1p]
// (--shape=IN,OUT: Qwen2.5-0.5B's MLP up projection by default, 4.4 M weights.) As
// bench/instructions.mjs: each count is (1 + calls) products minus 1, over calls, in millions,
// with V8 on --no-liftoff --single-threaded so the wasm is compiled once.
import { spawnSync } from 'node:child_process';

const args = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));

if (args.child) {  // one process: load, then `calls` one-row products
  const [inF, outF, calls] = args.child.split(',').map(Number);
  const { init } = await import('../bindings/js/index.js');
  const mha = await init({ simd: true, threads: 1 });
  const weight = new Float32Array(outF * inF).map((_, i) => Math.sin(i) * 0.05);
  const layer = new mha.Linear({ inFeatures: inF, outFeatures: outF, weightDtype: args.dtype }).loadWeights({ weight });
  const x = { data: new Float32Array(inF).map((_, i) => Math.cos(i)), shape: [1, inF] };
  for (let c = 0; c < calls; ++c) layer.forward(x);
  layer.dispose();
  process.exit(0);
}

const [inF, outF] = (args.shape ?? '896,4864').split(',').map(Number);
const CALLS = Number(args.calls ?? 5);
const dtypes = (args.dtypes ?? 'f16,q4').split(',');

function count(dtype, kernel, variant, calls) {
  const run = spawnSync('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', '--callgrind-out-file=/dev/null',
    process.execPath, '--no-liftoff', '--single-threaded', new URL(import.meta.url).pathname,
    `--child=${inF},${outF},${calls}`, `--dtype=${dtype}`],
  { encoding: 'utf8', maxBuffer: 1 << 26,
    env: { ...process.env, MHA_KERNEL_CACHE: 'off', MHA_KERNELS: `gemm=4x8,gemv_f16=widen,gemv_q4=1p,${kernel}=${variant}` } });
  const found = /Collected : (\d+)/.exec(run.stderr ?? '');
  if (run.status !== 0 || !found) throw new Error(`callgrind failed on ${dtype} ${variant}: ${run.stderr}`);
  return Number(found[1]);
}

const { loadBuild } = await import('../tools/load-wasm-build.mjs');
const { module } = await loadBuild('mha-simd');
const choice = JSON.parse(module.kernelChoice());  // (the variants' names; calibrated here, outside callgrind)
console.log(`instructions per one-row product, ${inF} -> ${outF} (callgrind, mha-simd, 1 thread; calls=${CALLS}) — ${new Date().toISOString().slice(0, 10)}`);
console.log('| weightDtype | variant | M instructions | per weight | against the first |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const dtype of dtypes) {
  const kernel = `gemv_${dtype}`;
  let first;
  for (const variant of choice[kernel].variants.filter((v) => !args.variants || args.variants.split(',').includes(v))) {
    const m = (count(dtype, kernel, variant, 1 + CALLS) - count(dtype, kernel, variant, 1)) / CALLS / 1e6;
    first ??= m;
    console.log(`| ${dtype} | ${variant}${variant === choice[kernel].variant ? ' (calibrated here)' : ''} | ${m.toFixed(2)} | ${(m * 1e6 / (inF * outF)).toFixed(3)} | ${(m / first).toFixed(3)} |`);
  }
}
