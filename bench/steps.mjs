// The cost of forward's capture and patch options (docs/steps.md) against a default call of the
// same shape, on the SIMD build, one thread:
//   node bench/steps.mjs [--passes=5]
// Each row alternates with the default call, pass after pass, in one process; a cell is the
// median over passes of the mean of 20 calls after a warm-up.
// With --webgpu, the same rows on the WebGPU backend in Node (Dawn, npm 'webgpu'; here on
// SwiftShader, which needs LD_LIBRARY_PATH=/usr/lib/chromium
// VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json): forwardAsync from CPU arrays to
// CPU arrays (the captured steps read back), 3 calls a cell, against the default forwardAsync.
import { loadBuild } from '../tools/load-wasm-build.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 5);
const E = 256, H = 8, L = 128;

const WEBGPU = 'webgpu' in args;
const CALLS = WEBGPU ? 3 : 20;
let MultiHeadAttention;
if (WEBGPU) {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const { init } = await import('../bindings/js/index.js');
  const mha = await init({ backend: 'webgpu', gpu: create([]) });
  console.log(`WebGPU adapter: ${mha.adapterInfo.vendor} ${mha.adapterInfo.architecture} ${mha.adapterInfo.description} (fallback: ${mha.adapterInfo.isFallbackAdapter})`);
  ({ MultiHeadAttention } = mha);
} else {
  ({ MultiHeadAttention } = await loadBuild('mha-simd'));
}
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
const x = { data: Float32Array.from({ length: L * E }, (_, i) => Math.sin(i)), shape: [1, L, E] };
const zeros = { data: new Float32Array(L * E), shape: [1, L, H, E / H] };
const rows = {
  'needWeights (per head)': { needWeights: true, averageWeights: false },
  "capture: ['z']": { capture: ['z'] },
  'capture: true': { capture: true },
  'patch: z of head 0': { patch: { z: zeros, heads: [0] } },
};
const time = WEBGPU ? async (options) => {
  await layer.forwardAsync(x, null, null, options);
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) await layer.forwardAsync(x, null, null, options);
  return (performance.now() - started) / CALLS;
} : (options) => {
  layer.forward(x, null, null, options);
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) layer.forward(x, null, null, options);
  return (performance.now() - started) / CALLS;
};
const median = (a) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];
console.log(`embedDim ${E}, ${H} heads, L = S = ${L}, causal; ms per call (median of ${PASSES} passes)`);
for (const [name, options] of Object.entries(rows)) {
  const base = [], row = [];
  for (let p = 0; p < PASSES; p++) {
    base.push(await time({ causal: true }));
    row.push(await time({ causal: true, ...options }));
  }
  console.log(`${name.padEnd(24)} ${median(row).toFixed(2).padStart(7)}   default ${median(base).toFixed(2).padStart(6)}   ×${(median(row) / median(base)).toFixed(1)}`);
}
layer.dispose();
