// Where our WebGPU backend beats or loses to our wasm backend, in Node on Dawn (npm 'webgpu'): a
// sweep of prefill lengths (self-attention with projections, causal) and of decode-step cache
// lengths (one token, the cache on the GPU / in wasm memory), from CPU arrays to CPU arrays, the
// median of --passes calls after one warm-up call each. On this CPU-only machine Dawn runs on
// SwiftShader (a software adapter): the crossover it finds is that adapter's, not a GPU's.
//   LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/webgpu-crossover-node.mjs [--passes=3]
import { create, globals } from 'webgpu';

import { init } from '../bindings/js/index.js';

Object.assign(globalThis, globals);
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 3);
const webgpu = await init({ backend: 'webgpu', gpu: create([]) });
const wasm = await init({ threads: 1 });
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const rand = (n) => Float32Array.from({ length: n }, () => Math.random() - 0.5);

/** Median ms of `step` (async) over PASSES calls after one. */
async function time(step) {
  await step();
  const ms = [];
  for (let i = 0; i < PASSES; i++) {
    const t = performance.now();
    await step();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

function row(what, g, c) {
  const verdict = g < c ? `WebGPU ${(c / g).toFixed(1)}x faster` : `wasm ${(g / c).toFixed(1)}x faster`;
  console.log(`| ${what} | ${g.toFixed(1)} | ${c.toFixed(2)} | ${verdict} |`);
}

console.log(`adapter: ${webgpu.adapterInfo.description} (fallback: ${webgpu.adapterInfo.isFallbackAdapter}); ${new Date().toISOString()}, `
  + `load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}; median of ${PASSES}\n`);
console.log('| call | WebGPU ms | wasm 1 thread ms | which wins |');
console.log('| --- | ---: | ---: | --- |');
for (const [B, L, E, H] of [[1, 16, 64, 2], [1, 1, 512, 8], [1, 16, 512, 8], [1, 64, 512, 8], [1, 256, 512, 8], [1, 1024, 512, 8], [1, 1024, 1024, 16]]) {
  const query = { data: rand(B * L * E), shape: [B, L, E] };
  const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const g = await time(() => onGpu.forwardAsync(query, null, null, { causal: true }));
  const c = await time(() => onCpu.forward(query, null, null, { causal: true }));
  row(`prefill ${B} x ${L} x ${E} x ${H}, causal`, g, c);
  onGpu.dispose();
  onCpu.dispose();
}
for (const cached of [64, 256, 1024, 4096]) {
  const E = 512, H = 8;
  const onGpu = new webgpu.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const onCpu = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize();
  const gpuCache = onGpu.createCache({ capacity: cached + 1 });
  const cpuCache = onCpu.createCache({ capacity: cached + 1 });
  for (let done = 0; done < cached; done += 512) {
    const n = Math.min(512, cached - done);
    const chunk = { data: rand(n * E), shape: [1, n, E] };
    await onGpu.forwardAsync(chunk, null, null, { cache: gpuCache });
    onCpu.forward(chunk, null, null, { cache: cpuCache });
  }
  const token = { data: rand(E), shape: [1, 1, E] };
  // (each step truncated back, so every one attends to `cached` + 1 tokens)
  const g = await time(() => onGpu.forwardAsync(token, null, null, { cache: gpuCache.truncate(cached) }));
  const c = await time(() => onCpu.forward(token, null, null, { cache: cpuCache.truncate(cached) }));
  row(`decode step, ${cached} cached, E ${E} x H ${H}`, g, c);
  onGpu.dispose();
  onCpu.dispose();
}
process.exit(0);  // (Dawn's device keeps the event loop alive)
