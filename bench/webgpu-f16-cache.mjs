// A decode step (one token, E 512 x 8 heads) against a KV cache of 1024 and 2048 tokens on the
// GPU, float32 cache against f16 cache, on a device with shader-f16 (where the adapter has it)
// and one without: median of 7 steps after a warm-up step, from a Float32Array to a Float32Array.
// The adapter is whichever VK_ICD_FILENAMES selects (docs/webgpu.md gives the commands). An
// optional argument is another checkout's bindings/js/index.js (to time an older version).
//   node bench/webgpu-f16-cache.mjs [path/to/bindings/js/index.js]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { create, globals } from 'webgpu';

const { init } = await import(process.argv[2] ? pathToFileURL(resolve(process.argv[2])).href : '../bindings/js/index.js');
Object.assign(globalThis, globals);
const gpu = create([]);
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const adapters = [];

async function module(f16) {
  const adapter = await gpu.requestAdapter();
  adapters.push(adapter);
  const device = await adapter.requestDevice({
    requiredFeatures: f16 ? ['shader-f16'] : [],
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize },
  });
  return init({ backend: 'webgpu', device });
}

const probe = await gpu.requestAdapter();
const hasF16 = probe.features.has('shader-f16');
console.log(`adapter: ${probe.info.description}; shader-f16 ${hasF16}; bindings ${process.argv[2] ?? 'this checkout'}`);
console.log('device            | cached | f32 cache ms | f16 cache ms');
for (const f16 of hasF16 ? [true, false] : [false]) {
  const mha = await module(f16);
  for (const cached of (process.env.CACHED ?? "1024,2048").split(",").map(Number)) {
    const E = 512, H = 8;
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
    const prompt = { data: Float32Array.from({ length: cached * E }, () => Math.random() - 0.5), shape: [1, cached, E] };
    const token = { data: Float32Array.from({ length: E }, () => Math.random() - 0.5), shape: [1, 1, E] };
    const times = {};
    for (const dtype of ['f32', 'f16']) {
      const cache = layer.createCache({ capacity: cached + 16, dtype });
      await layer.forwardAsync(prompt, null, null, { cache });
      await layer.forwardAsync(token, null, null, { cache });  // (compiles the decode kernels)
      const ms = [];
      for (let i = 0; i < 7; i++) {
        const t = performance.now();
        await layer.forwardAsync(token, null, null, { cache });
        ms.push(performance.now() - t);
      }
      times[dtype] = median(ms);
      cache.dispose();
    }
    console.log(`${(f16 ? 'shader-f16' : 'without shader-f16').padEnd(17)} | ${String(cached).padStart(6)} | `
      + `${times.f32.toFixed(1).padStart(12)} | ${times.f16.toFixed(1).padStart(12)}`);
    layer.dispose();
  }
}
process.exit(0);
