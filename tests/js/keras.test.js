// KerasMultiHeadAttention against the TensorFlow team's port of Keras' MultiHeadAttention
// (@tensorflow/tfjs-layers, bundled with esbuild into build/ on the fly): same weights in Keras
// layout, same inputs and masks, |ours - keras| <= 1e-5 + 1e-4 |keras| for outputs and scores.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { KerasReference, tf } from './keras-reference.js';
import { seededFloats } from './seeded.js';

const mha = await init();
const TOLERANCE = { absolute: 1e-5, relative: 1e-4 };

function assertClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    worst = Math.max(worst, d);
    if (!(d <= TOLERANCE.absolute + TOLERANCE.relative * Math.abs(want[i]))) assert.fail(`${what}[${i}]: ${got[i]} vs Keras ${want[i]}`);
  }
  return worst;
}

/** Random weights in Keras layout, set on the reference's sublayers; returns them as get_weights() would. */
function randomKerasWeights(reference, seed) {
  const list = [];
  for (const dense of [reference._queryDense, reference._keyDense, reference._valueDense, reference._outputDense]) {
    const values = dense.getWeights().map((w, i) => {
      const n = w.shape.reduce((a, b) => a * b, 1);
      return tf.tensor(seededFloats(n, seed++, i === 0 ? 1 / Math.sqrt(w.shape[0]) : 0.5), w.shape);
    });
    dense.setWeights(values);
    for (const v of values) list.push({ data: v.dataSync().slice(), shape: v.shape });
  }
  return list;
}

const CASES = [
  { name: 'self-attention, keyDim = queryDim / numHeads', H: 2, keyDim: 4, B: 2, T: 5, q: 8 },
  { name: 'keyDim free of queryDim / numHeads', H: 2, keyDim: 6, B: 2, T: 5, q: 8 },
  { name: 'valueDim != keyDim', H: 3, keyDim: 3, valueDim: 5, B: 2, T: 4, q: 7 },
  { name: 'outputShape != queryDim', H: 2, keyDim: 4, outputShape: 11, B: 1, T: 6, q: 8 },
  { name: 'useBias: false', H: 2, keyDim: 5, useBias: false, B: 2, T: 4, q: 6 },
  { name: 'one head', H: 1, keyDim: 7, B: 2, T: 3, q: 5 },
  { name: 'cross-attention, key != value, different sizes', H: 2, keyDim: 4, valueDim: 3, B: 2, T: 4, S: 6, q: 6, kIn: 3, vIn: 9 },
  { name: 'attention_mask [B, T, S]', H: 2, keyDim: 4, B: 2, T: 5, S: 6, q: 8, kIn: 8, vIn: 8, mask: '3d' },
  { name: 'a padding mask per batch row [B, S] (valueMask: Keras\' value_mask)', H: 2, keyDim: 4, B: 3, T: 4, S: 5, q: 8, kIn: 8, vIn: 8, mask: '2d' },
  { name: 'use_causal_mask', H: 4, keyDim: 3, B: 2, T: 6, q: 12, causal: true },
  { name: 'use_causal_mask and attention_mask', H: 2, keyDim: 4, B: 2, T: 6, q: 8, causal: true, mask: '3d' },
  { name: 'return_attention_scores [B, H, T, S]', H: 3, keyDim: 2, valueDim: 4, B: 2, T: 3, S: 7, q: 6, kIn: 6, vIn: 6 },
  { name: "the tutorial's layer: 4 heads x keyDim 128 on 100 features, 32 tokens", H: 4, keyDim: 128, B: 2, T: 32, q: 100, causal: false },
];

describe('KerasMultiHeadAttention against tfjs-layers MultiHeadAttention (Keras)', () => {
  let largest = 0;
  for (const c of CASES) {
    test(c.name, () => {
      const S = c.S ?? c.T, kIn = c.kIn ?? c.q, vIn = c.vIn ?? c.q, cross = c.S !== undefined || c.kIn !== undefined;
      const reference = new KerasReference({
        numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, useBias: c.useBias, outputShape: c.outputShape,
      });
      const query = { data: seededFloats(c.B * c.T * c.q, 1), shape: [c.B, c.T, c.q] };
      const value = cross ? { data: seededFloats(c.B * S * vIn, 2), shape: [c.B, S, vIn] } : query;
      const key = cross ? { data: seededFloats(c.B * S * kIn, 3), shape: [c.B, S, kIn] } : null;
      const t = (x) => tf.tensor(x.data, x.shape);
      // Masks: 1 = attend; every row keeps key 0, so no row is fully masked (where the port differs).
      let mask = null, refMask = null;
      if (c.mask) {
        const full = Uint8Array.from({ length: c.B * c.T * S }, (_, i) => (i % S === 0 || (i * 7919) % 5 !== 0 ? 1 : 0));
        if (c.mask === '3d') {
          mask = { data: full, shape: [c.B, c.T, S] };
          refMask = tf.tensor(full, [c.B, c.T, S], 'bool');
        } else {
          const rows = Uint8Array.from({ length: c.B * S }, (_, i) => (i % S === 0 || (i * 31) % 3 !== 0 ? 1 : 0));
          mask = { data: rows, shape: [c.B, S] };
          const expanded = new Uint8Array(c.B * c.T * S);
          for (let b = 0; b < c.B; b++) for (let i = 0; i < c.T; i++) expanded.set(rows.subarray(b * S, (b + 1) * S), (b * c.T + i) * S);
          refMask = tf.tensor(expanded, [c.B, c.T, S], 'bool');
        }
      }
      reference.callAndReturnAttentionScores(t(query), { value: t(value), ...(key ? { key: t(key) } : {}) });  // builds it
      const weights = randomKerasWeights(reference, 10);
      const [refOut, refScores] = reference.callAndReturnAttentionScores(t(query), {
        value: t(value), ...(key ? { key: t(key) } : {}), attentionMask: refMask, useCausalMask: c.causal ?? false,
      });

      const layer = new mha.KerasMultiHeadAttention({
        numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, useBias: c.useBias, outputShape: c.outputShape,
        queryDim: c.q, keyInputDim: kIn, valueInputDim: vIn,
      });
      try {
        layer.setWeights(weights);
        const { output, scores } = layer.call(query, value, key, {
          ...(mask ? { [c.mask === '2d' ? 'valueMask' : 'attentionMask']: mask } : {}), useCausalMask: c.causal ?? false, returnAttentionScores: true,
        });
        assert.deepEqual(output.shape, refOut.shape);
        assert.deepEqual(scores.shape, [c.B, c.H, c.T, S]);
        largest = Math.max(largest, assertClose(output.data, refOut.dataSync(), 'output'));
        largest = Math.max(largest, assertClose(scores.data, refScores.dataSync(), 'scores'));
      } finally {
        layer.dispose();
      }
    });
  }
  test('a map of Keras names loads the same weights as the get_weights() list', () => {
    const layer = new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 3, queryDim: 4 });
    const shapes = layer.weightShapes();
    assert.deepEqual(Object.keys(shapes), ['query/kernel', 'query/bias', 'key/kernel', 'key/bias', 'value/kernel', 'value/bias',
      'attention_output/kernel', 'attention_output/bias']);
    assert.deepEqual(shapes['attention_output/kernel'], [2, 3, 4]);
    const list = Object.values(shapes).map((s, i) => ({ data: seededFloats(s.reduce((a, b) => a * b, 1), i + 1), shape: s }));
    const x = { data: seededFloats(12, 9), shape: [1, 3, 4] };
    const fromList = layer.setWeights(list).call(x, x).output.data;
    const fromMap = layer.setWeights(Object.fromEntries(Object.keys(shapes).map((k, i) => [k, list[i]]))).call(x, x).output.data;
    assert.deepEqual(fromMap, fromList);
    assert.throws(() => layer.setWeights(list.slice(1)), { name: 'RangeError', message: /setWeights: expected 8 arrays/ });
    layer.dispose();
  });
  test('a query row that may attend to nothing gives zeros before the output projection (Keras 3)', () => {
    const layer = new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 3, queryDim: 4 });
    const shapes = layer.weightShapes();
    const list = Object.values(shapes).map((s, i) => ({ data: seededFloats(s.reduce((a, b) => a * b, 1), i + 1), shape: s }));
    layer.setWeights(list);
    const x = { data: seededFloats(12, 9), shape: [1, 3, 4] };
    const attentionMask = { data: Uint8Array.from([1, 1, 1, 0, 0, 0, 1, 0, 1]), shape: [1, 3, 3] };
    const { output, scores } = layer.call(x, x, null, { attentionMask, returnAttentionScores: true });
    assert.deepEqual([...output.data.subarray(4, 8)], [...list[7].data]);  // row 1 = the output bias
    for (let h = 0; h < 2; h++) assert.deepEqual([...scores.data.subarray(h * 9 + 3, h * 9 + 6)], [0, 0, 0]);
    layer.dispose();
  });
  after(() => console.log(`# largest |ours - Keras| over ${CASES.length} configurations: ${largest.toExponential(3)}`));
});

describe('KerasMultiHeadAttention dropout', () => {
  test('training applies dropout to the output; scores are Keras\' (before dropout); training: false is the plain layer', () => {
    const [H, keyDim, B, T, q] = [2, 4, 2, 6, 8];
    const make = (dropout) => {
      const layer = new mha.KerasMultiHeadAttention({ numHeads: H, keyDim, queryDim: q, dropout, seed: 3 });
      const shapes = layer.weightShapes();
      layer.setWeights(Object.values(shapes).map((shape, i) => seededFloats(shape.reduce((a, b) => a * b, 1), 50 + i, 0.4)));
      return layer;
    };
    const plain = make(0), dropped = make(0.5);
    const x = { data: seededFloats(B * T * q, 7), shape: [B, T, q] };
    try {
      const want = plain.call(x, x, null, { returnAttentionScores: true });
      const inference = dropped.call(x, x, null, { returnAttentionScores: true });
      assert.deepEqual(inference.output.data, want.output.data);
      const trained = dropped.call(x, x, null, { returnAttentionScores: true, training: true, seed: 11 });
      assert.deepEqual(trained.scores.shape, [B, H, T, T]);
      assertClose(trained.scores.data, want.scores.data, 'scores under dropout');
      const differing = trained.output.data.filter((v, i) => Math.abs(v - want.output.data[i]) > 1e-4).length;
      assert.ok(differing > trained.output.data.length / 4, `dropout changed ${differing} of ${trained.output.data.length} outputs`);
      const again = dropped.call(x, x, null, { training: true, seed: 11 });
      assert.deepEqual(again.output.data, trained.output.data, 'same seed, same output');
      // The PyTorch-style layer underneath returns the weights after dropout: 0 or twice Keras'.
      const torchStyle = dropped.layer.forward(x, x, x, { training: true, seed: 11, needWeights: true, averageWeights: false });
      torchStyle.weights.data.forEach((w, i) => {
        assert.ok(w === 0 || Math.abs(w - 2 * want.scores.data[i]) < 1e-5, `weights[${i}] = ${w}, scores ${want.scores.data[i]}`);
      });
    } finally {
      plain.dispose();
      dropped.dispose();
    }
  });
});

// Keras' kernel_constraint / bias_constraint: the plain layer's weight update is setWeights (it has
// no optimizer), so the constraint projects the weights given there, with Keras' formulas.
describe('KerasMultiHeadAttention kernelConstraint / biasConstraint', () => {
  const sizes = { numHeads: 2, keyDim: 3, queryDim: 4 };
  const signed = (layer) => layer.getWeights().map(({ shape }, i) => ({ data: Float32Array.from(seededFloats(shape.reduce((a, b) => a * b, 1), 11 + i), (v) => v - 0.5), shape }));

  test("nonNeg on the kernels: setWeights zeroes each kernel's negative entries, the biases stay", () => {
    const layer = new mha.KerasMultiHeadAttention({ ...sizes, kernelConstraint: 'nonNeg' });
    const given = signed(layer);
    assert.ok(given.every((w) => w.data.some((v) => v < 0)), 'every weight given has negative entries');
    layer.setWeights(given);
    layer.getWeights().forEach((w, i) => {
      const name = Object.keys(layer.weightShapes())[i];
      const want = name.endsWith('/kernel') ? given[i].data.map((v) => Math.max(v, 0)) : given[i].data;
      assert.deepEqual(Array.from(w.data), Array.from(want), name);
    });
    assert.deepEqual(layer.weights.map((w) => [w.name, w.constraint?.getClassName() ?? null]), Object.keys(layer.weightShapes())
      .map((name) => [`multi_head_attention/${name}`, name.endsWith('/kernel') ? 'NonNeg' : null]));
    layer.dispose();
  });

  test("maxNorm ({ maxValue: 0.5 }) on the biases: Keras' w * clip(norm, 0, max) / (1e-7 + norm) over axis 0", () => {
    const layer = new mha.KerasMultiHeadAttention({ ...sizes, biasConstraint: { className: 'MaxNorm', config: { maxValue: 0.5 } } });
    const given = signed(layer);
    layer.setWeights(given);
    const bias = layer.getWeights()[1], b = given[1];  // query/bias [H, keyDim]: norms over the heads
    assert.deepEqual(bias.shape, [2, 3]);
    for (let d = 0; d < 3; d++) {
      const norm = Math.hypot(b.data[d], b.data[3 + d]);
      for (const h of [0, 1]) assert.ok(Math.abs(bias.data[h * 3 + d] - b.data[h * 3 + d] * (Math.min(norm, 0.5) / (1e-7 + norm))) < 1e-6, `[${h}, ${d}]`);
    }
    assert.deepEqual(Array.from(layer.getWeights()[0].data), Array.from(given[0].data), 'the kernels stay');
    layer.dispose();
  });

  test('getConfig writes the constraints, fromConfig reads them back', () => {
    const layer = new mha.KerasMultiHeadAttention({ ...sizes, kernelConstraint: 'unit_norm', biasConstraint: 'nonNeg' });
    const config = layer.getConfig();
    assert.deepEqual([config.kernelConstraint, config.biasConstraint], [{ className: 'UnitNorm', config: { axis: 0 } }, { className: 'NonNeg', config: {} }]);
    const copy = mha.KerasMultiHeadAttention.fromConfig(config), given = signed(layer);
    layer.setWeights(given);
    copy.setWeights(given);
    assert.deepEqual(copy.getWeights(), layer.getWeights());
    const plain = new mha.KerasMultiHeadAttention(sizes);
    assert.equal('kernelConstraint' in plain.getConfig(), false, 'none: left out');
    for (const made of [layer, copy, plain]) made.dispose();
  });
});
