// KerasMultiHeadAttention on a WebGPU module (callAsync only) against the TensorFlow team's port
// of Keras' MultiHeadAttention (@tensorflow/tfjs-layers, tests/js/keras-reference.js): the
// configurations of tests/js/keras.test.js, same weights in Keras layout, same inputs and masks,
// |ours - keras| <= 1e-5 + 1e-4 |keras| for outputs and scores, with and without subgroups;
// attentionAxes and errors against the wasm module's Keras layer.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { KerasReference, tf } from '../js/keras-reference.js';
import { seededFloats } from '../js/seeded.js';
import { modules } from './devices.js';

const wasm = await init();
const devices = await modules();

const close = (got, want, what) => {
  assert.equal(got.length, want.length, `${what}: length`);
  want.forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= 1e-5 + 1e-4 * Math.abs(w), `${what}[${i}]: ${got[i]} vs Keras ${w}`));
};

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
  { name: 'valueDim != keyDim', H: 3, keyDim: 3, valueDim: 5, B: 2, T: 4, q: 7 },
  { name: 'outputShape != queryDim', H: 2, keyDim: 4, outputShape: 11, B: 1, T: 6, q: 8 },
  { name: 'useBias: false', H: 2, keyDim: 5, useBias: false, B: 2, T: 4, q: 6 },
  { name: 'cross-attention, key != value, different sizes', H: 2, keyDim: 4, valueDim: 3, B: 2, T: 4, S: 6, q: 6, kIn: 3, vIn: 9 },
  { name: 'attention_mask [B, T, S]', H: 2, keyDim: 4, B: 2, T: 5, S: 6, q: 8, kIn: 8, vIn: 8, mask: '3d' },
  { name: 'a padding mask per batch row [B, S] (valueMask: Keras\' value_mask)', H: 2, keyDim: 4, B: 3, T: 4, S: 5, q: 8, kIn: 8, vIn: 8, mask: '2d' },
  { name: 'use_causal_mask and attention_mask', H: 2, keyDim: 4, B: 2, T: 6, q: 8, causal: true, mask: '3d' },
  { name: "the tutorial's layer: 4 heads x keyDim 128 on 100 features, 32 tokens", H: 4, keyDim: 128, B: 2, T: 32, q: 100 },
];

for (const [label, mha] of devices) {
  describe(`KerasMultiHeadAttention on WebGPU against tfjs-layers (Keras) (${label})`, () => {
    for (const c of CASES) {
      test(c.name, async () => {
        const S = c.S ?? c.T, kIn = c.kIn ?? c.q, vIn = c.vIn ?? c.q, cross = c.S !== undefined || c.kIn !== undefined;
        const reference = new KerasReference({
          numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, useBias: c.useBias, outputShape: c.outputShape,
        });
        const query = { data: seededFloats(c.B * c.T * c.q, 1), shape: [c.B, c.T, c.q] };
        const value = cross ? { data: seededFloats(c.B * S * vIn, 2), shape: [c.B, S, vIn] } : query;
        const key = cross ? { data: seededFloats(c.B * S * kIn, 3), shape: [c.B, S, kIn] } : null;
        const t = (x) => tf.tensor(x.data, x.shape);
        let mask = null, refMask = null;  // 1 = attend; every row keeps key 0
        if (c.mask === '3d') {
          const full = Uint8Array.from({ length: c.B * c.T * S }, (_, i) => (i % S === 0 || (i * 7919) % 5 !== 0 ? 1 : 0));
          mask = { data: full, shape: [c.B, c.T, S] };
          refMask = tf.tensor(full, [c.B, c.T, S], 'bool');
        } else if (c.mask === '2d') {
          const rows = Uint8Array.from({ length: c.B * S }, (_, i) => (i % S === 0 || (i * 31) % 3 !== 0 ? 1 : 0));
          mask = { data: rows, shape: [c.B, S] };
          const expanded = new Uint8Array(c.B * c.T * S);
          for (let b = 0; b < c.B; b++) for (let i = 0; i < c.T; i++) expanded.set(rows.subarray(b * S, (b + 1) * S), (b * c.T + i) * S);
          refMask = tf.tensor(expanded, [c.B, c.T, S], 'bool');
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
          const { output, scores } = await layer.callAsync(query, value, key, {
            ...(mask ? { [c.mask === '2d' ? 'valueMask' : 'attentionMask']: mask } : {}), useCausalMask: c.causal ?? false, returnAttentionScores: true,
          });
          assert.deepEqual(output.shape, refOut.shape);
          assert.deepEqual(scores.shape, [c.B, c.H, c.T, S]);
          close(output.data, refOut.dataSync(), 'output');
          close(scores.data, refScores.dataSync(), 'scores');
        } finally {
          layer.dispose();
        }
      });
    }

    test('attentionAxes over a rank-4 input, q4 weights, and errors: the wasm Keras layer\'s', async () => {
      const config = { numHeads: 2, keyDim: 3, attentionAxes: [1], queryDim: 4, weightDtype: 'q4' };
      const cpu = new wasm.KerasMultiHeadAttention(config), gpu = new mha.KerasMultiHeadAttention(config);
      const weights = Object.values(cpu.weightShapes()).map((s, i) => ({ data: seededFloats(s.reduce((a, b) => a * b, 1), i + 1), shape: s }));
      cpu.setWeights(weights);
      gpu.setWeights(weights);
      const x = { data: seededFloats(2 * 5 * 3 * 4, 7), shape: [2, 5, 3, 4] };
      const want = await cpu.callAsync(x, x, null, { returnAttentionScores: true });
      const got = await gpu.callAsync(x, x, null, { returnAttentionScores: true });
      assert.deepEqual(got.output.shape, want.output.shape);
      close(got.output.data, want.output.data, 'output');  // (prefill: the wasm q4 GEMM is dequantized-float math)
      close(got.scores.data, want.scores.data, 'scores');
      assert.throws(() => gpu.call(x, x), { name: 'TypeError', message: /^call: a WebGPU layer runs asynchronously.*callAsync/ });
      const y = { data: seededFloats(2 * 3 * 4, 8), shape: [2, 3, 4] };
      for (const [args, options] of [[[y, { data: new Float32Array(10), shape: [2, 5, 1] }], {}], [[y, y], { attentionMask: { data: new Uint8Array(5), shape: [5] } }], [[y, y], { bogus: 1 }]]) {
        const message = async (layer) => layer.callAsync(...args, null, options).then(() => null, (e) => [e.name, e.message]);
        const expected = await message(cpu);
        assert.ok(expected);
        assert.deepEqual(await message(gpu), expected);
      }
      cpu.dispose();
      gpu.dispose();
    });
  });
}
