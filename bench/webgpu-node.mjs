// Our WebGPU backend against our wasm (one thread) in Node, on Dawn (npm 'webgpu'): a
// self-attention layer with its projections per shape, median of 3 calls after one warm-up call
// (which compiles the shaders), from CPU arrays to CPU arrays. On this CPU-only machine Dawn runs
// on SwiftShader (a software adapter): the ratio says where a software adapter stands, not a GPU.
//   LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/webgpu-node.mjs [--gemm=gemm,gemm_tiled]
// --gemm: an A/B of the float32 GEMM kernels in the same run (bindings/js/webgpu/gemm.js), one
// WebGPU column per kernel, each call alternating; without it, the kernel init picks.
import { create, globals } from 'webgpu';

import { init } from '../bindings/js/index.js';
import { setGemmKernel } from '../bindings/js/webgpu/kernel-plan.js';

Object.assign(globalThis, globals);
const gpu = create([]);
const webgpu = await init({ backend: 'webgpu', gpu });
const wasm = await init({ threads: 1 });
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const KERNELS = args.gemm ? args.gemm.split(',') : null;
console.log(`adapter: ${webgpu.adapterInfo.description} (fallback: ${webgpu.adapterInfo.isFallbackAdapter})`);
if (KERNELS) {
  console.log(`GEMM A/B, ${new Date().toISOString()}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`B x L x E x H      | ${KERNELS.map((k) => `${k} ms`.padStart(15)).join(' | ')} | wasm 1 thread ms`);
  for (const [B, L, E, H] of [[1, 1, 512, 8], [1, 128, 512, 8], [8, 64, 256, 4], [1, 512, 768, 12]]) {
    const query = { data: Float32Array.from({ length: B * L * E }, () => Math.random() - 0.5), shape: [B, L, E] };
    const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
    const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
    const ms = KERNELS.map(() => []), cpuMs = [];
    for (let i = 0; i < 4; i++) {  // (the first round compiles: not counted)
      for (const [j, kernel] of KERNELS.entries()) {
        setGemmKernel(webgpu.device, kernel);
        const t = performance.now();
        await onGpu.forwardAsync(query);
        if (i > 0) ms[j].push(performance.now() - t);
      }
      const t = performance.now();
      onCpu.forward(query);
      if (i > 0) cpuMs.push(performance.now() - t);
    }
    console.log(`${`${B} x ${L} x ${E} x ${H}`.padEnd(18)} | ${ms.map((m) => median(m).toFixed(1).padStart(15)).join(' | ')} | ${median(cpuMs).toFixed(2)}`);
    onGpu.dispose();
    onCpu.dispose();
  }
  process.exit(0);
}
console.log('B x L x E x H      | WebGPU ms | GFLOPS | wasm 1 thread ms | WebGPU / wasm');
for (const [B, L, E, H] of [[1, 1, 512, 8], [1, 128, 512, 8], [8, 64, 256, 4], [1, 512, 768, 12]]) {
  const query = { data: Float32Array.from({ length: B * L * E }, () => Math.random() - 0.5), shape: [B, L, E] };
  const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  await onGpu.forwardAsync(query);
  onCpu.forward(query);
  const gpuMs = [], cpuMs = [];
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    await onGpu.forwardAsync(query);
    gpuMs.push(performance.now() - t);
    t = performance.now();
    onCpu.forward(query);
    cpuMs.push(performance.now() - t);
  }
  const flops = 8 * B * L * E * E + 4 * B * L * L * E;  // q, k, v, out projections + q.k and p.v
  const g = median(gpuMs), c = median(cpuMs);
  console.log(`${`${B} x ${L} x ${E} x ${H}`.padEnd(18)} | ${g.toFixed(1).padStart(9)} | ${(flops / g / 1e6).toFixed(2).padStart(6)} | `
    + `${c.toFixed(2).padStart(16)} | ${(g / c).toFixed(0).padStart(12)}x`);
  onGpu.dispose();
  onCpu.dispose();
}
// Decode steps: one token against a cache of `cached` tokens (E 512, 8 heads), the cache on the GPU
// (flash-decoding) and in wasm memory.
console.log('\ndecode step, E 512 x H 8 | WebGPU ms | wasm 1 thread ms | WebGPU / wasm');
for (const cached of [1024, 4096]) {
  const E = 512, H = 8;
  const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const gpuCache = onGpu.createCache({ capacity: cached + 8 });
  const cpuCache = onCpu.createCache({ capacity: cached + 8 });
  const prompt = { data: Float32Array.from({ length: cached * E }, () => Math.random() - 0.5), shape: [1, cached, E] };
  await onGpu.forwardAsync(prompt, null, null, { cache: gpuCache });
  onCpu.forward(prompt, null, null, { cache: cpuCache });
  const token = { data: Float32Array.from({ length: E }, () => Math.random() - 0.5), shape: [1, 1, E] };
  await onGpu.forwardAsync(token, null, null, { cache: gpuCache });  // (compiles the decode kernels)
  onCpu.forward(token, null, null, { cache: cpuCache });
  const gpuMs = [], cpuMs = [];
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    await onGpu.forwardAsync(token, null, null, { cache: gpuCache });
    gpuMs.push(performance.now() - t);
    t = performance.now();
    onCpu.forward(token, null, null, { cache: cpuCache });
    cpuMs.push(performance.now() - t);
  }
  const g = median(gpuMs), c = median(cpuMs);
  console.log(`${`${cached} cached tokens`.padEnd(24)} | ${g.toFixed(1).padStart(9)} | ${c.toFixed(2).padStart(16)} | ${(g / c).toFixed(0).padStart(12)}x`);
  onGpu.dispose();
  onCpu.dispose();
}
process.exit(0);  // (Dawn's device keeps the event loop alive)
