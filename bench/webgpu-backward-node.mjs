// The backward pass: our WebGPU backend against our wasm (one thread) in Node, on Dawn (npm
// 'webgpu'): a self-attention layer's forwardAsync({ grad: true }) then backwardAsync(dOut) per
// shape, median of 3 steps after one warm-up step (which compiles the shaders), from CPU arrays
// to CPU arrays (the gradients read back). On this CPU-only machine Dawn runs on SwiftShader (a
// software adapter): the ratio says where a software adapter stands, not a GPU.
//   LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/webgpu-backward-node.mjs
import { create, globals } from 'webgpu';

import { init } from '../bindings/js/index.js';

Object.assign(globalThis, globals);
const gpu = create([]);
const webgpu = await init({ backend: 'webgpu', gpu });
const wasm = await init({ threads: 1 });
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`adapter: ${webgpu.adapterInfo.description} (fallback: ${webgpu.adapterInfo.isFallbackAdapter})`);
console.log('B x L x E x H      | WebGPU forward + backward ms | wasm 1 thread ms | WebGPU / wasm');
const shapes = process.argv.includes('--quick') ? [[1, 64, 256, 4]] : [[1, 64, 256, 4], [1, 128, 512, 8], [8, 64, 256, 4]];
for (const [B, L, E, H] of shapes) {
  const random = (n) => Float32Array.from({ length: n }, () => Math.random() - 0.5);
  const query = { data: random(B * L * E), shape: [B, L, E] };
  const dOut = { data: random(B * L * E), shape: [B, L, E] };
  const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(onCpu.stateDict());
  const step = async (layer) => (await layer.forwardAsync(query, null, null, { grad: true, causal: true })).backwardAsync(dOut);
  await step(onGpu);
  await step(onCpu);
  const gpuMs = [], cpuMs = [];
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    await step(onGpu);
    gpuMs.push(performance.now() - t);
    t = performance.now();
    await step(onCpu);
    cpuMs.push(performance.now() - t);
  }
  const g = median(gpuMs), c = median(cpuMs);
  console.log(`${`${B} x ${L} x ${E} x ${H}`.padEnd(18)} | ${g.toFixed(1).padStart(28)} | ${c.toFixed(2).padStart(16)} | ${(g / c).toFixed(0).padStart(12)}x`);
  onGpu.dispose();
  onCpu.dispose();
}
process.exit(0);  // (Dawn's device keeps the event loop alive)
