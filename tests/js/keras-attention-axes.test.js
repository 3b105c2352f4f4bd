// KerasMultiHeadAttention's attentionAxes against tfjs-layers' port of Keras (Keras' formula: the
// einsum equations of _build_attention_equation over the chosen axes), on [B, rows, columns, F]
// grids and a rank-5 input: the same weights give the same outputs and scores.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { KerasReference, tf } from './keras-reference.js';
import { seededFloats } from './seeded.js';

const mha = await init({ threads: 1 });

const CASES = [
  { axes: [2], shape: [2, 3, 5, 8], H: 2, keyDim: 3 },
  { axes: [1], shape: [2, 3, 5, 8], H: 2, keyDim: 3, valueDim: 4, outputShape: 6 },
  { axes: [1, 2], shape: [2, 3, 4, 6], H: 3, keyDim: 2 },
  { axes: [1, 3], shape: [1, 2, 3, 4, 6], H: 2, keyDim: 2 },
  { axes: 2, shape: [1, 4, 3, 5], H: 1, keyDim: 4, cross: [1, 4, 6, 7] },
];

function assertClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]))) assert.fail(`${what}[${i}]: ${got[i]} vs Keras ${want[i]}`);
  }
}

for (const c of CASES) {
  test(`attentionAxes ${JSON.stringify(c.axes)} on [${c.shape}]${c.cross ? ` with value [${c.cross}]` : ''}`, () => {
    const size = (s) => s.reduce((a, b) => a * b, 1);
    const query = { data: seededFloats(size(c.shape), 1), shape: c.shape };
    const value = c.cross ? { data: seededFloats(size(c.cross), 2), shape: c.cross } : query;
    const port = new KerasReference({ numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, outputShape: c.outputShape, attentionAxes: c.axes });
    const t = (x) => tf.tensor(x.data, x.shape);
    port.call(t(query), { value: t(value) });  // builds it
    const dense = [port._queryDense, port._keyDense, port._valueDense, port._outputDense].flatMap((d) => d.trainableWeights);
    dense.forEach((v, i) => v.write(tf.tensor(seededFloats(size(v.shape), 10 + i, 0.4), v.shape)));
    const [want, wantScores] = port.callAndReturnAttentionScores(t(query), { value: t(value) });

    const layer = new mha.KerasMultiHeadAttention({
      numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, outputShape: c.outputShape, attentionAxes: c.axes,
      queryDim: c.shape[c.shape.length - 1], valueInputDim: value.shape[value.shape.length - 1],
    });
    try {
      layer.setWeights(dense.map((v) => ({ data: v.read().dataSync(), shape: v.shape })));
      const { output, scores } = layer.call(query, value, null, { returnAttentionScores: true });
      assert.deepEqual(output.shape, want.shape);
      assert.deepEqual(scores.shape, wantScores.shape);
      assertClose(output.data, want.dataSync(), 'output');
      assertClose(scores.data, wantScores.dataSync(), 'scores');
    } finally {
      layer.dispose();
    }
  });
}

test('attentionAxes errors name the call and the expected axes', () => {
  const make = (attentionAxes) => new mha.KerasMultiHeadAttention({ numHeads: 1, keyDim: 2, queryDim: 4, attentionAxes });
  assert.throws(() => make('rows'), { name: 'TypeError', message: 'KerasMultiHeadAttention: attentionAxes must be an integer or a non-empty list of integers, got "rows"' });
  const x = { data: new Float32Array(24), shape: [1, 2, 3, 4] };
  const layer = make([3]);
  assert.throws(() => layer.call(x, x), { name: 'RangeError', message: 'call: attentionAxes [3] must name axes between 1 and 2 (not the batch or features) of a rank-4 input' });
  layer.dispose();
  const rows = make([1]);
  const mask = { data: new Uint8Array(4).fill(1), shape: [2, 2] };
  assert.throws(() => rows.call(x, x, null, { attentionMask: mask }), { name: 'Error', message: 'call: attentionMask is not supported with attentionAxes on inputs of rank > 3 yet' });
  // Keras' causal mask is [1, T, S] from axis 1: a causal mask over one attended axis as long as axis 1.
  const columns = make([2]);
  assert.throws(() => columns.call(x, x, null, { useCausalMask: true }), { name: 'RangeError', message: "call: useCausalMask on a rank-4 input needs one attention axis as long as axis 1 (Keras' causal mask is [1, T, S] from axis 1, broadcast over the attended axes), got attentionAxes [2]" });
  columns.dispose();
  assert.throws(() => rows.call(x, { data: new Float32Array(16), shape: [1, 2, 2, 4] }), { name: 'RangeError', message: "call: value's non-attended axes [1, 2] must equal the query's [1, 3]" });
  rows.dispose();
});
