// CommonJS users' types (index.d.cts, tfjs.d.cts): tests/stages/40-package.sh type-checks this file
// with tsc --strict against the installed package. It reaches a type of every room (core, keras,
// webgpu, formats) and of mha-wasm/tfjs through require; the @ts-expect-error lines fail the check
// if a type decays to any. Never run: its functions exist for the type check.
import mha = require('mha-wasm');
import mhaTfjs = require('mha-wasm/tfjs');

async function wasmLayer(): Promise<Float32Array> {
  const module: mha.MhaModule = await mha.init({ threads: 1 });
  const layer = new module.MultiHeadAttention({ embedDim: 4, numHeads: 2 });
  const result = layer.forward({ data: new Float32Array(8), shape: [2, 4] }, null, null, { needWeights: true });
  // @ts-expect-error  needWeights: true types the weights as non-null
  const none: null = result.weights;
  void none;
  return result.weights.data;
}

async function kerasLayer(module: mha.MhaModule): Promise<mha.KerasCallResult> {
  const config: mha.KerasConfig = { numHeads: 2, keyDim: 2 };
  // @ts-expect-error  keyDim is required
  const missing: mha.KerasConfig = { numHeads: 2 };
  void missing;
  const x: mha.Tensor = { data: new Float32Array(8), shape: [1, 2, 4] };
  return new module.KerasMultiHeadAttention(config).call(x, x);
}

async function webgpuLayer(gpu: mha.WebGpuEntry): Promise<mha.GpuTensor> {
  const module: mha.WebGpuModule = await mha.init({ backend: 'webgpu', gpu });
  const layer: mha.WebGpuMultiHeadAttention = new module.MultiHeadAttention({ embedDim: 4, numHeads: 2 });
  // @ts-expect-error  the WebGPU module has no linear (the wasm module's)
  void module.linear;
  const { output } = await layer.forwardAsync({ data: new Float32Array(8), shape: [2, 4] }, null, null, { outputLocation: 'gpu' });
  return output;
}

async function formats(bytes: Uint8Array): Promise<mha.SafetensorsFile> {
  const esm = await mha.load();
  const model: mha.OnnxModel = esm.readOnnx(bytes);
  void model;
  return esm.readSafetensors(bytes);
}

async function tfjsLayer(tf: mhaTfjs.Tfjs): Promise<mhaTfjs.MultiHeadAttentionLayer> {
  const options: mhaTfjs.MhaTfjsOptions = { webgpu: false, threads: 1 };
  const bound: mhaTfjs.MhaTfjs = await mhaTfjs.mhaTfjs(tf, options);
  // @ts-expect-error  numHeads and keyDim are required
  bound.multiHeadAttention({});
  return bound.multiHeadAttention({ numHeads: 2, keyDim: 2 });
}
