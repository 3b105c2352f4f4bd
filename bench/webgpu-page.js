// The page side of bench/webgpu.mjs: one implementation of one layer, timed in the browser that
// loaded this module. Each implementation runs in a page of its own (the runner opens a fresh one),
// so two onnxruntime-web builds never share a page.
import { fusedAttentionModel } from './onnx-graph.mjs';
import { benchWeights, randomArray } from './shapes.mjs';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function toBase64(floats) {
  const bytes = new Uint8Array(floats.buffer, floats.byteOffset, floats.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

/** A WebGPU device with or without the subgroups feature (null when the browser has no adapter). */
async function gpuDevice(subgroups) {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) return null;
  return adapter.requestDevice({ requiredFeatures: subgroups && adapter.features.has('subgroups') ? ['subgroups'] : [] });
}

/** Times `step` (which resolves with the output as a Float32Array): one warm-up call, then `passes`. */
async function time(step, passes) {
  let output = await step();
  const ms = [];
  for (let p = 0; p < passes; p++) {
    const start = performance.now();
    output = await step();
    ms.push(performance.now() - start);
  }
  return { ms: median(ms), output };
}

async function ours({ shape, passes, backend, threads, subgroups }) {
  const { init } = await import('/bindings/js/index.js');
  const { B, L, E, H } = shape;
  let mha, device = null;
  if (backend === 'webgpu') {
    device = await gpuDevice(subgroups);
    if (!device) return { skipped: 'no WebGPU adapter' };
    mha = await init({ backend: 'webgpu', device });
  } else {
    mha = await init({ threads });
  }
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(benchWeights(E));
  const query = { data: randomArray(B * L * E, 7), shape: [B, L, E] };
  try {
    const result = await time(async () => (await layer.forwardAsync(query)).output.data, passes);
    const adapter = mha.adapterInfo ? `${mha.adapterInfo.vendor} ${mha.adapterInfo.architecture}`.trim() : null;
    return { ...result, device: adapter ?? `${mha.build.name} × ${mha.build.numThreads}` };
  } finally {
    layer.dispose();
    device?.destroy();
  }
}

async function onnxruntime({ shape, passes, build, subgroups }) {
  // 'jsep': the default import (its TypeScript-generated WGSL); 'native': onnxruntime-web/webgpu.
  const ort = await import(build === 'jsep' ? '/bench/node_modules/onnxruntime-web/dist/ort.all.bundle.min.mjs'
    : '/bench/node_modules/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs');
  ort.env.wasm.wasmPaths = '/bench/node_modules/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = 1;
  const { B, L, E } = shape;
  // The native build takes a device (with or without subgroups); JSEP makes its own.
  const device = build === 'native' ? await gpuDevice(subgroups) : null;
  if (build === 'native' && !device) return { skipped: 'no WebGPU adapter' };
  const session = await ort.InferenceSession.create(fusedAttentionModel(shape, benchWeights(E), false), {
    executionProviders: [device ? { name: 'webgpu', device } : 'webgpu'],
  });
  const query = randomArray(B * L * E, 7);
  try {
    return await time(async () => {
      const { output } = await session.run({ query: new ort.Tensor('float32', query, [B, L, E]) });
      const data = await output.getData();
      output.dispose?.();
      return data;
    }, passes);
  } finally {
    await session.release();
  }
}

/** Runs one implementation ({ impl, shape, passes, threads, subgroups }); the output comes back as base64. */
export async function run(job) {
  const result = job.impl === 'ort' ? await onnxruntime(job) : await ours(job);
  if (result.skipped) return result;
  return { ms: result.ms, device: result.device ?? null, output: toBase64(result.output) };
}
