// The cost of dtype: 'float64' on the wasm build: a float64 layer (src/mha/float64/float64_attention.cpp,
// plain loops over doubles) against the float32 layer (SIMD kernels) on the same shape and
// weights, each forward pass, and a training step (forward with grad + backward), timed
// alternating, pass after pass (each first in every other pass), in one process:
// node bench/float64.mjs [--passes=3]
// GFLOPS counts the forward pass's FLOPs (bench/shapes.mjs' flops), a training step's as 3 times
// them (backward about twice forward); ratio = float64 ms / float32 ms.
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { flops, label, randomArray } from './shapes.mjs';
import { median, time } from './timing.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 3);
const SHAPE = { B: 1, L: 128, S: 128, E: 256, H: 4 };  // self-attention

const { MultiHeadAttention } = await loadBuild('mha-simd');
const { B, L, E, H } = SHAPE;
const f32 = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
const f64 = new MultiHeadAttention({ embedDim: E, numHeads: H, dtype: 'float64' });
f64.loadStateDict(Object.fromEntries(Object.entries(f32.stateDict()).map(([k, v]) => [k, Float64Array.from(v)])));
const q32 = randomArray(B * L * E, 11), q64 = Float64Array.from(q32);
const x32 = { data: q32, shape: [B, L, E] }, x64 = { data: q64, shape: [B, L, E] };
const d32 = { data: randomArray(B * L * E, 12), shape: [B, L, E] }, d64 = { data: Float64Array.from(d32.data), shape: [B, L, E] };

const CALLS = {
  forward: [() => f32.forward(x32), () => f64.forward(x64)],
  'training step (forward with grad, backward)': [
    () => f32.forward(x32, null, null, { grad: true }).backward(d32),
    () => f64.forward(x64, null, null, { grad: true }).backward(d64),
  ],
};
const results = Object.fromEntries(Object.keys(CALLS).map((name) => [name, { f32: [], f64: [] }]));
for (let pass = 0; pass < PASSES; pass++) {
  for (const [name, [call32, call64]] of Object.entries(CALLS)) {
    const both = [() => results[name].f32.push(time(call32)), () => results[name].f64.push(time(call64))];
    (pass % 2 ? both.reverse() : both).forEach((measure) => measure());
  }
  process.stderr.write(`pass ${pass + 1}/${PASSES}\n`);
}
f32.dispose();
f64.dispose();

console.log(`\n#### dtype 'float64' against float32, wasm 1 thread (mha-simd), shape ${label(SHAPE)}, same run\n`);
console.log('| call | float32 ms | float32 GFLOPS | float64 ms | float64 GFLOPS | float64 / float32 |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [name, r] of Object.entries(results)) {
  const work = flops(SHAPE) * (name === 'forward' ? 1 : 3);
  const ms32 = median(r.f32), ms64 = median(r.f64);
  console.log(`| ${name} | ${ms32.toFixed(2)} | ${(work / ms32 / 1e6).toFixed(2)} | ${ms64.toFixed(2)} | `
    + `${(work / ms64 / 1e6).toFixed(2)} | ${(ms64 / ms32).toFixed(1)}x |`);
}
