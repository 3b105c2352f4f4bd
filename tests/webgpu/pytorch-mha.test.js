// PyTorch's own nn.MultiheadAttention tests on the WebGPU backend: the same cases, fixtures and
// checks as the wasm backend's port (tests/js/pytorch-mha.test.js; the case table and the checks
// are tests/js/pytorch-mha-cases.js), through forwardAsync and backwardAsync, held to the same
// tolerances. Titles keep PyTorch's test names. Every fixture case runs, each of its draws, but
// the float64 ones: WGSL has no f64, so each asserts that the layer refuses dtype 'float64' by name.
// The cases the wasm port does not run (float16 tensors, in Chromium; a mock of PyTorch's
// internals) are listed there with the reason, and its API-only checks (invalid shapes: the C++
// plan's, which both backends ask) are not repeated here.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { casesOf, checkDraw, largestErrorLine, threeDMaskRowByRow } from '../js/pytorch-mha-cases.js';
import { modules } from './devices.js';

const [[label, mha]] = await modules();
/** The WebGPU layer, called as pytorch-mha-cases.js calls a backend. */
const WEBGPU = {
  MultiHeadAttention: mha.MultiHeadAttention,
  forward: (layer, ...args) => layer.forwardAsync(...args),
  backward: (result, dOut) => result.backwardAsync(dOut),
};

let passing = 0, refused = 0;
function fixtureTest(c, extraCheck) {
  if (c.draws.some((draw) => draw.config.dtype === 'float64')) {
    test(`${c.name} (refused: WGSL has no f64)`, () => {
      assert.throws(() => new mha.MultiHeadAttention(c.draws[0].config),
        { name: 'TypeError', message: /^MultiHeadAttention: dtype 'float64' is not supported by the WebGPU backend/ });
      refused++;
    });
    return;
  }
  test(c.name, async () => {
    for (const draw of c.draws) await checkDraw(draw, WEBGPU);
    await extraCheck?.(c, WEBGPU);
    passing++;
  });
}

describe(`PyTorch's MHA tests on WebGPU (${label})`, () => {
  describe('test/nn/test_multihead_attention.py', () => {
    for (const c of casesOf('test/nn/test_multihead_attention.py')) {
      fixtureTest(c, c.name === 'test_multihead_attn_3d_attn_mask' ? threeDMaskRowByRow : undefined);
    }
  });
  describe('common_modules.py: module_inputs_torch_nn_MultiheadAttention (test/test_modules.py)', () => {
    for (const c of casesOf('torch/testing/_internal/common_modules.py')) fixtureTest(c);
  });
  describe('test/test_transformers.py', () => {
    for (const c of casesOf('test/test_transformers.py')) fixtureTest(c);
  });
});

after(() => {
  console.log(`# PyTorch's MHA fixture cases on WebGPU: ${passing} pass, ${refused} float64 ones refused by name; `
    + `largest absolute error: ${largestErrorLine()}`);
});
