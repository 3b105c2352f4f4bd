// PyTorch's own nn.MultiheadAttention tests on the WebGPU backend: the same cases, fixtures and
// checks as the wasm backend's port (tests/js/pytorch-mha.test.js; the case table and the checks
// are tests/js/pytorch-mha-cases.js), through forwardAsync and backwardAsync, held to the same
// tolerances. Titles keep PyTorch's test names. Every fixture case runs, each of its draws; the
// cases the wasm port does not run (float16 / float64 tensors, a mock of PyTorch's internals) are
// listed there with the reason, and its API-only checks (invalid shapes: the C++ plan's, which
// both backends ask) are not repeated here.
import { after, describe, test } from 'node:test';

import { casesOf, checkDraw, largestErrorSeen, threeDMaskRowByRow } from '../js/pytorch-mha-cases.js';
import { modules } from './devices.js';

const [[label, mha]] = await modules();
/** The WebGPU layer, called as pytorch-mha-cases.js calls a backend. */
const WEBGPU = {
  MultiHeadAttention: mha.MultiHeadAttention,
  forward: (layer, ...args) => layer.forwardAsync(...args),
  backward: (result, dOut) => result.backwardAsync(dOut),
};

let passing = 0;
function fixtureTest(c, extraCheck) {
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
  console.log(`# PyTorch's MHA fixture cases on WebGPU: ${passing} pass; largest absolute error: ${largestErrorSeen().toExponential(3)}`);
});
