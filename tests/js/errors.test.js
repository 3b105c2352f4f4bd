// Errors that must leave state alone: a failed load keeps the old weights; dispose() is idempotent.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';

const mha = await init();
const E = 8, H = 2;
const f32 = (n, v = 0.1) => new Float32Array(n).fill(v);
const stateDict = () => ({
  in_proj_weight: f32(3 * E * E), in_proj_bias: f32(3 * E), 'out_proj.weight': f32(E * E), 'out_proj.bias': f32(E),
});
const x = (B, L) => ({ data: f32(B * L * E), shape: [B, L, E] });

function loaded() {
  return new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
}

// The table of bad inputs (one call, one error, one message each) is tests/js/bad-inputs.table.js,
// run by bad-inputs.test.js and rendered to docs/bad-inputs.md. These are the stateful cases.
describe('bad input', () => {
  test('a failed loadStateDict leaves the old weights in place', () => {
    const layer = loaded();
    const before = layer.forward(x(1, 2)).output.data;
    assert.throws(() => layer.loadStateDict({ ...stateDict(), in_proj_weight: f32(192, 5), 'out_proj.bias': f32(3) }), RangeError);
    assert.deepEqual(layer.forward(x(1, 2)).output.data, before);
    layer.dispose();
  });

  test('dispose() twice is harmless', () => {
    const layer = loaded();
    layer.dispose();
    layer.dispose();
    assert.equal(layer.alive, false);
  });
});
