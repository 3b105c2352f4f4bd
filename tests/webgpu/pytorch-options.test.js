// PyTorch's nn.MultiheadAttention options that only the wasm backend has yet (issue 40): the
// WebGPU layer refuses each by name when it is made, never running a call with it ignored.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { modules } from './devices.js';

const [[, mha]] = await modules();

describe('PyTorch options the WebGPU backend refuses by name', () => {
  test('batchFirst: false (sequence-first tensors)', () => {
    assert.throws(() => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, batchFirst: false }),
      { name: 'TypeError', message: /^MultiHeadAttention: batchFirst: false is not supported by the WebGPU backend yet/ });
  });

  for (const name of ['addBiasKv', 'addZeroAttn']) {
    test(`${name}: true (appended keys)`, () => {
      assert.throws(() => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, [name]: true }),
        { name: 'TypeError', message: new RegExp(`^MultiHeadAttention: ${name} is not supported by the WebGPU backend yet`) });
    });
  }

  test('staticK and staticV (forward options)', async () => {
    const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize({ seed: 1 });
    const x = { data: new Float32Array(2 * 3 * 8), shape: [2, 3, 8] };
    for (const name of ['staticK', 'staticV']) {
      await assert.rejects(layer.forwardAsync(x, x, x, { [name]: { data: new Float32Array(4 * 3 * 4), shape: [4, 3, 4] } }),
        { name: 'TypeError', message: new RegExp(`^forwardAsync: ${name} is not supported by the WebGPU backend yet`) });
    }
    layer.dispose();
  });

  test('batchFirst: true is the default layout and is taken', () => {
    const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, batchFirst: true });
    assert.equal(layer.config.batchFirst, undefined);  // (the config shows batchFirst only when false)
    layer.dispose();
  });
});
