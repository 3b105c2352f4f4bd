// The page side of bench/webgpu.mjs: one implementation of one layer, timed in the browser that
// loaded this module. Each implementation runs in a page of its own (the runner opens a fresh one),
// so two onnxruntime-web builds never share a page.
import { fusedAttentionModel, groupQueryAttentionStepModel } from './onnx-graph.mjs';
import { benchWeights, decodeWeights, randomArray } from './shapes.mjs';

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

/** Our package on `backend`: WebGPU on a device of its own (null when the browser has no adapter), else wasm with `threads`. */
async function initOurs({ backend, threads, subgroups }) {
  const { init } = await import('/bindings/js/index.js');
  if (backend !== 'webgpu') return { mha: await init({ threads }), device: null };
  const device = await gpuDevice(subgroups);
  if (!device) return null;
  return { mha: await init({ backend: 'webgpu', device }), device };
}

/** What ran our layer: the adapter's vendor and architecture, or the wasm build and its threads. */
function ourDevice(mha) {
  const adapter = mha.adapterInfo ? `${mha.adapterInfo.vendor} ${mha.adapterInfo.architecture}`.trim() : null;
  return adapter ?? `${mha.build.name} × ${mha.build.numThreads}`;
}

/** onnxruntime-web, single-threaded on wasm: 'jsep' the default import (its TypeScript-generated WGSL), 'native' onnxruntime-web/webgpu. */
async function importOrt(build) {
  const ort = await import(build === 'jsep' ? '/bench/node_modules/onnxruntime-web/dist/ort.all.bundle.min.mjs'
    : '/bench/node_modules/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs');
  ort.env.wasm.wasmPaths = '/bench/node_modules/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = 1;
  return ort;
}

async function ours({ shape, passes, backend, threads, subgroups }) {
  const ours = await initOurs({ backend, threads, subgroups });
  if (!ours) return { skipped: 'no WebGPU adapter' };
  const { mha, device } = ours;
  const { B, L, E, H } = shape;
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(benchWeights(E));
  const query = { data: randomArray(B * L * E, 7), shape: [B, L, E] };
  try {
    const result = await time(async () => (await layer.forwardAsync(query)).output.data, passes);
    return { ...result, device: ourDevice(mha) };
  } finally {
    layer.dispose();
    device?.destroy();
  }
}

async function onnxruntime({ shape, passes, build, subgroups }) {
  const ort = await importOrt(build);
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

/** The history (the P cached tokens) and the new token of a decode row, as bench/webgpu.mjs makes them. */
export const decodeHistory = ({ P, E }) => randomArray(P * E, 5);
export const decodeToken = ({ E }) => randomArray(E, 8);

/**
 * A decode step of our layer: the cache (on the GPU for 'webgpu', in wasm memory for 'wasm')
 * filled by a prefill of the P history tokens, then one token per step, truncated back to P
 * before each so every step attends to P + 1 tokens, as onnxruntime's does.
 */
async function oursDecode({ shape, passes, backend, threads, subgroups }) {
  const ours = await initOurs({ backend, threads, subgroups });
  if (!ours) return { skipped: 'no WebGPU adapter' };
  const { mha, device } = ours;
  const { E, H, Hkv, P } = shape;
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv }).loadStateDict(decodeWeights(shape));
  const cache = layer.createCache({ capacity: P + 1 });
  const call = (x) => (device ? layer.forwardAsync(x, null, null, { cache }) : layer.forward(x, null, null, { cache }));
  try {
    const history = decodeHistory(shape);
    for (let done = 0; done < P; done += 512) {
      const n = Math.min(512, P - done);
      await call({ data: history.subarray(done * E, (done + n) * E), shape: [1, n, E] });
    }
    const token = { data: decodeToken(shape), shape: [1, 1, E] };
    const result = await time(async () => {
      cache.truncate(P);
      return (await call(token)).output.data;
    }, passes);
    return { ...result, device: ourDevice(mha) };
  } finally {
    cache.dispose();
    layer.dispose();
    device?.destroy();
  }
}

/**
 * A decode step of onnxruntime-web's GroupQueryAttention graph with its cache on the GPU:
 * past_key / past_value are GPU buffers (on its device, filled once with the float64 reference's
 * projections of the history, fetched from the runner), present_key / present_value stay on the
 * GPU ('gpu-buffer'). `shared`: the past buffers hold P + 1 rows and are passed as the present
 * outputs too (onnxruntime's shared past/present buffer: the step writes its token in place);
 * otherwise each step returns a new present of P + 1 rows (a copy of the cache), disposed.
 * `capture` (with `shared`: its GroupQueryAttention refuses graph capture without the shared
 * buffer): enableGraphCapture, every input and the output in GPU buffers of ours.
 */
async function onnxruntimeDecode({ shape, passes, build, subgroups, shared, capture, data }) {
  const ort = await importOrt(build);
  const { E, H, Hkv, P } = shape;
  const Dh = E / H, rows = shared ? P + 1 : P;
  const device = build === 'native' ? await gpuDevice(subgroups) : null;
  if (build === 'native' && !device) return { skipped: 'no WebGPU adapter' };
  const session = await ort.InferenceSession.create(groupQueryAttentionStepModel(shape, decodeWeights(shape)), {
    executionProviders: [device ? { name: 'webgpu', device } : 'webgpu'],
    preferredOutputLocation: capture ? 'gpu-buffer' : { output: 'cpu', present_key: 'gpu-buffer', present_value: 'gpu-buffer' },
    ...(capture ? { enableGraphCapture: true } : {}),
  });
  const gpu = device ?? await ort.env.webgpu.device;  // (JSEP's own device, made by the session)
  const buffers = [];
  const past = async (name) => {
    const values = new Float32Array(await (await fetch(`${data}-${name}.bin`)).arrayBuffer());
    const buffer = gpu.createBuffer({ size: Hkv * rows * Dh * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    for (let h = 0; h < Hkv; h++) gpu.queue.writeBuffer(buffer, h * rows * Dh * 4, values, h * P * Dh, P * Dh);
    buffers.push(buffer);
    return ort.Tensor.fromGpuBuffer(buffer, { dataType: 'float32', dims: [1, Hkv, rows, Dh] });
  };
  // With graph capture every input is a GPU buffer too (its precondition).
  const onGpu = (array, dims, dataType) => {
    const buffer = gpu.createBuffer({ size: Math.max(16, array.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    gpu.queue.writeBuffer(buffer, 0, array);
    buffers.push(buffer);
    const download = async () => {  // (getData of a tensor on a buffer of ours: read it back)
      const staging = gpu.createBuffer({ size: buffer.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const encoder = gpu.createCommandEncoder();
      encoder.copyBufferToBuffer(buffer, 0, staging, 0, buffer.size);
      gpu.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const out = new Float32Array(staging.getMappedRange().slice(0, array.byteLength));
      staging.destroy();
      return out;
    };
    return ort.Tensor.fromGpuBuffer(buffer, { dataType, dims, download });
  };
  const input = (array, dims, dataType) => (capture ? onGpu(array, dims, dataType) : new ort.Tensor(dataType, array, dims));
  const feeds = {
    query: input(decodeToken(shape), [1, 1, E], 'float32'),
    past_key: await past('past_key'), past_value: await past('past_value'),
    seqlens_k: input(Int32Array.of(P), [1], 'int32'),
    total_sequence_length: input(Int32Array.of(P + 1), [1], 'int32'),
  };
  // (graph capture also wants the output in a buffer of the caller's)
  const fetches = shared ? { output: capture ? onGpu(new Float32Array(E), [1, 1, E], 'float32') : null,
    present_key: feeds.past_key, present_value: feeds.past_value } : undefined;
  try {
    return await time(async () => {
      const { output, present_key: presentKey, present_value: presentValue } = await session.run(feeds, fetches);
      if (presentKey.dims[2] !== P + 1) throw new Error(`present_key has ${presentKey.dims[2]} rows, not ${P + 1}`);
      const result = await output.getData();
      if (!shared) {
        presentKey.dispose();
        presentValue.dispose();
      }
      return result;
    }, passes);
  } finally {
    await session.release();
    for (const buffer of buffers) buffer.destroy();
  }
}

/** Runs one implementation ({ impl, shape, passes, threads, subgroups }); the output comes back as base64. */
export async function run(job) {
  const result = job.shape.P !== undefined ? await (job.impl === 'ort' ? onnxruntimeDecode(job) : oursDecode(job))
    : await (job.impl === 'ort' ? onnxruntime(job) : ours(job));
  if (result.skipped) return result;
  return { ms: result.ms, device: result.device ?? null, output: toBase64(result.output) };
}
