// The output gate (config gate: true) is not on the WebGPU backend yet: a WebGPU layer refuses it
// by name at construction, rather than running an ungated layer.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { modules } from './devices.js';

const [[, mha]] = await modules();

test('a WebGPU layer with gate: true is a TypeError naming the gate; gate: false is the plain layer', () => {
  assert.throws(() => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, gate: true }), {
    name: 'TypeError',
    message: 'MultiHeadAttention: gate: the WebGPU backend does not run the output gate yet; use the wasm layer (mha.MultiHeadAttention) for a gated layer',
  });
  const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, gate: false });
  try {
    assert.equal(layer.config.gate, undefined);
    assert.ok(!('gate_proj.weight' in layer.stateDictShapes()));
  } finally {
    layer.dispose();
  }
});
