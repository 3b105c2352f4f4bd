// The cost of batchFirst: false (PyTorch's default sequence-first [L, B, E] layout) on the wasm
// build: the layer reads such a call through one batch-first copy of each input and copies the
// output back (src/mha/layer/sequence_first.hpp). Each row times the same call both ways, alternating,
// pass after pass (each first in every other pass), in one process: node bench/sequence-first.mjs [--passes=4]
// ratio = batch-first ms / sequence-first ms (< 1: the copies cost that share).
// --backend=webgpu: the same on the WebGPU backend in Node (Dawn, npm 'webgpu'; on these CPU-only
// machines SwiftShader: LD_LIBRARY_PATH=/usr/lib/chromium
// VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json), where the copies are
// swap_leading_axes.wgsl dispatches (bindings/js/webgpu/sequence-first.js): forwardAsync from CPU
// arrays to CPU arrays, one warm-up call of each layout first (it compiles the kernels).
import { create, globals } from 'webgpu';

import { init } from '../bindings/js/index.js';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray } from './shapes.mjs';
import { median } from './timing.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 4);
const WEBGPU = args.backend === 'webgpu';

const ROWS = WEBGPU ? [  // (smaller on WebGPU: a software adapter is slow)
  { B: 8, L: 64, E: 256, H: 4, S: 0 },
  { B: 4, L: 64, E: 256, H: 4, S: 128 },
  { B: 64, L: 1, E: 512, H: 8, S: 0 },
] : [  // B x L x E x H; self-attention, and cross-attention with S = 2L keys
  { B: 8, L: 128, E: 512, H: 8, S: 0 },
  { B: 32, L: 64, E: 256, H: 4, S: 0 },
  { B: 8, L: 128, E: 512, H: 8, S: 256 },
  { B: 64, L: 1, E: 512, H: 8, S: 0 },  // one decoder position per sequence (PyTorch's helper's shape, larger)
];

let backend;
if (WEBGPU) {
  Object.assign(globalThis, globals);
  backend = await init({ backend: 'webgpu', gpu: create([]) });
}
const { MultiHeadAttention } = WEBGPU ? backend : await loadBuild('mha-simd');
const call = (layer, args) => (WEBGPU ? layer.forwardAsync(...args) : layer.forward(...args));
async function timeCall(layer, args) {
  const t = performance.now();
  await call(layer, args);
  return performance.now() - t;
}

function layers({ E, H }) {
  const bf = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
  return [bf, new MultiHeadAttention({ embedDim: E, numHeads: H, batchFirst: false }).loadStateDict(bf.stateDict())];
}

const results = ROWS.map(() => ({ bf: [], sf: [] }));
for (let pass = 0; pass < PASSES; pass++) {
  for (const [i, row] of ROWS.entries()) {
    const { B, L, E, S } = row;
    const [bf, sf] = layers(row);
    const q = randomArray(B * L * E, 11), kv = S ? randomArray(B * S * E, 12) : null;
    const bfArgs = [{ data: q, shape: [B, L, E] }, kv && { data: kv, shape: [B, S, E] }, kv && { data: kv, shape: [B, S, E] }];
    const sfArgs = [{ data: q, shape: [L, B, E] }, kv && { data: kv, shape: [S, B, E] }, kv && { data: kv, shape: [S, B, E] }];
    if (WEBGPU) await Promise.all([call(bf, bfArgs), call(sf, sfArgs)]);  // (warm-up: the kernels compile)
    const both = [async () => results[i].bf.push(await timeCall(bf, bfArgs)), async () => results[i].sf.push(await timeCall(sf, sfArgs))];
    for (const measure of pass % 2 ? both.reverse() : both) await measure();  // (each goes first in every other pass)
    bf.dispose();
    sf.dispose();
  }
  process.stderr.write(`pass ${pass + 1}/${PASSES}\n`);
}

console.log(WEBGPU ? `\n#### batchFirst: false, WebGPU (${backend.adapterInfo.description}); the same call batch-first, same run\n`
  : '\n#### batchFirst: false, wasm 1 thread (mha-simd); the same call batch-first, same run\n');
console.log('| shape (B x L x E x H) | keys | batch-first ms | sequence-first ms | batch-first / sequence-first |');
console.log('|---|---|---:|---:|---:|');
ROWS.forEach((row, i) => {
  const bf = median(results[i].bf), sf = median(results[i].sf);
  console.log(`| ${row.B}x${row.L}x${row.E}x${row.H} | ${row.S ? `cross, S = ${row.S}` : 'self'} | ${bf.toFixed(2)} | ${sf.toFixed(2)} | ${(bf / sf).toFixed(3)} |`);
});
process.exit(0);  // (Dawn's device keeps the event loop alive)
