// The page side of bench/ort-interop.mjs: onnxruntime-web's WebGPU device shared with mha-wasm's
// WebGPU backend, and GPU buffers passed both ways. One chain per build, in a page of its own:
// query -> ort (output kept on the GPU) -> mha-wasm (its GPU buffer in, outputLocation 'gpu') ->
// ort (Tensor.fromGpuBuffer of our buffer) -> read back once, against the wasm layer three times.
import { fusedAttentionModel } from './onnx-graph.mjs';
import { benchWeights, randomArray } from './shapes.mjs';

export async function run({ build, shape }) {
  const { init } = await import('/bindings/js/index.js');
  const ort = await import(build === 'jsep' ? '/bench/node_modules/onnxruntime-web/dist/ort.all.bundle.min.mjs'
    : '/bench/node_modules/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs');
  ort.env.wasm.wasmPaths = '/bench/node_modules/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = 1;
  const { B, L, E, H } = shape;
  const weights = benchWeights(E);
  let mha = null, shared;
  // native: it takes our device (a session option); JSEP: it makes its own (ort.env.webgpu.device
  // set before the session is ignored), which we take after the session is created.
  if (build === 'native') mha = await init({ backend: 'webgpu' });
  const session = await ort.InferenceSession.create(fusedAttentionModel({ ...shape, S: L }, weights, false), {
    executionProviders: [mha ? { name: 'webgpu', device: mha.device } : 'webgpu'],
    preferredOutputLocation: 'gpu-buffer',
  });
  if (!mha) {
    const device = await ort.env.webgpu.device;
    mha = await init({ backend: 'webgpu', device });
    shared = 'ort.env.webgpu.device (after InferenceSession.create)';
  } else {
    shared = 'mha.device passed as executionProviders [{ name: "webgpu", device }]';
  }
  const wasm = await init({ threads: 1 });
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(weights);
  const reference = new wasm.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(weights);
  const query = randomArray(B * L * E, 7);
  let mapped = 0;
  const mapAsync = GPUBuffer.prototype.mapAsync;
  GPUBuffer.prototype.mapAsync = function counted(...args) { mapped += 1; return mapAsync.apply(this, args); };
  try {
    const first = (await session.run({ query: new ort.Tensor('float32', query, [B, L, E]) })).output;
    const ours = await layer.forwardAsync({ buffer: first.gpuBuffer, shape: [B, L, E] }, null, null, { outputLocation: 'gpu' });
    const back = ort.Tensor.fromGpuBuffer(ours.output.buffer, { dataType: 'float32', dims: [B, L, E] });
    const third = (await session.run({ query: back })).output;
    const mappedBeforeRead = mapped;
    const got = await third.getData();
    let want = { data: query, shape: [B, L, E] };
    for (let i = 0; i < 3; i++) want = reference.forward(want).output;
    let worst = 0, scale = 0;
    want.data.forEach((x, i) => { worst = Math.max(worst, Math.abs(got[i] - x)); scale = Math.max(scale, Math.abs(x)); });
    first.dispose(); third.dispose(); back.dispose?.(); ours.output.dispose();
    const ortDevice = await ort.env.webgpu.device;  // (native: what it reports for the device it was given)
    return { build, shared, sameDevice: ortDevice === mha.device, mappedBeforeRead, error: worst / scale, adapter: mha.adapterInfo.architecture };
  } finally {
    GPUBuffer.prototype.mapAsync = mapAsync;
    layer.dispose(); reference.dispose();
    await session.release();
  }
}
