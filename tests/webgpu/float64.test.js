// dtype 'float64' on the WebGPU backend: refused when the layer is made, saying why (WGSL, the
// shading language, has no 64-bit float type); the wasm backend's float64 layer is the one to use.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { modules } from './devices.js';

const [[label, mha]] = await modules();

test(`dtype 'float64' is refused by name, saying WGSL has no f64 (${label})`, () => {
  assert.throws(() => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, dtype: 'float64' }), {
    name: 'TypeError',
    message: "MultiHeadAttention: dtype 'float64' is not supported by the WebGPU backend (WGSL has no 64-bit floats: "
      + 'f64 is not a WebGPU shader type); use the wasm backend, whose float64 layer computes in float64',
  });
  // dtype 'float32', the default, stays a WebGPU layer.
  const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, dtype: 'float32' });
  assert.equal(layer.backend, 'webgpu');
  layer.dispose();
});
