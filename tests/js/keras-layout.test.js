// Keras' layout in one place (bindings/js/keras/layout.js), as both Keras surfaces use it:
// mha.KerasMultiHeadAttention and mha-wasm/tfjs's layer. Their weights round-trip in every
// configuration (the core's one in_proj_weight included), a rank-2 mask is Keras' [T, S] even
// when batch = query length, and the Keras 3.15 options they do not implement pass only at
// their defaults (tfjs-bad-inputs.table.js and bad-inputs.table.js hold the refusals' messages).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { init, stateDictFromKeras } from '../../bindings/js/index.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { kerasLayoutFromStateDict, kerasWeightShapes, stateDictFromKerasLayout } from '../../bindings/js/keras/layout.js';
import { seededFloats } from './seeded.js';

const mha = await init();
const tf = await loadTfjs('cpu');
const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const made = [];
const keras = (config) => { const layer = new mha.KerasMultiHeadAttention(config); made.push(layer); return layer; };
after(() => { for (const layer of made) layer.dispose(); });

const product = (shape) => shape.reduce((a, b) => a * b, 1);
/** Random weights of `shapes` (name -> shape), in their order, as { data, shape }. */
const randomWeights = (shapes) => Object.values(shapes).map((shape, i) => ({ data: seededFloats(product(shape), 20 + i, 0.3), shape }));

function assertClose(got, want, what, tolerance = 1e-5) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= tolerance * (1 + Math.abs(want[i])), `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

test('getWeights when the core keeps q, k and v in one in_proj_weight (2 heads x 4 on 8 features)', () => {
  const layer = keras({ numHeads: 2, keyDim: 4, queryDim: 8 });
  const weights = randomWeights(layer.weightShapes());
  assert.ok('in_proj_weight' in layer.layer.stateDictShapes(), 'this configuration is the in_proj one');
  const got = layer.setWeights(weights).getWeights();
  assert.deepEqual(got.map((w) => w.shape), weights.map((w) => w.shape));
  got.forEach((w, i) => assert.deepEqual(w.data, weights[i].data, `weight ${i}`));
});

test('layout.js: Keras weights -> state dict -> Keras weights is the identity, and matches stateDictFromKeras', () => {
  const sizes = { numHeads: 3, keyDim: 2, valueDim: 5, queryDim: 7, keyInputDim: 4, valueInputDim: 6, outputShape: 9, useBias: true };
  const shapes = kerasWeightShapes(sizes);
  assert.deepEqual(shapes['attention_output/kernel'], [3, 5, 9]);
  const weights = randomWeights(shapes);
  const byName = Object.fromEntries(Object.keys(shapes).map((name, i) => [name, weights[i].data]));
  const stateDict = stateDictFromKerasLayout(byName, sizes);
  assert.deepEqual(stateDict, { ...stateDictFromKeras(weights) });
  assert.deepEqual(kerasLayoutFromStateDict(stateDict, sizes), byName);
  const noBias = { ...sizes, useBias: false };
  assert.deepEqual(Object.keys(kerasWeightShapes(noBias)), ['query/kernel', 'key/kernel', 'value/kernel', 'attention_output/kernel']);
});

test('a rank-2 attentionMask is Keras\' [T, S] on both surfaces, also when batch = query length', () => {
  const B = 2, T = 2, S = 2, E = 4;
  const q = seededFloats(B * T * E, 1), v = seededFloats(B * S * E, 2);
  const mask2 = [1, 0, 1, 1];  // [T, S]: query row 0 attends to key 0 only
  const mask3 = [...mask2, ...mask2];  // the same, per batch row
  const layer = keras({ numHeads: 2, keyDim: 2, queryDim: E });
  const weights = randomWeights(layer.weightShapes());
  layer.setWeights(weights);
  const call = (data, shape) => layer.call({ data: q, shape: [B, T, E] }, { data: v, shape: [B, S, E] }, null,
    { attentionMask: { data: Uint8Array.from(data), shape } }).output.data;
  const want = call(mask3, [B, T, S]);
  assertClose(call(mask2, [T, S]), want, 'KerasMultiHeadAttention [T, S]');

  const tfjsLayer = multiHeadAttention({ numHeads: 2, keyDim: 2 });
  const query = tf.tensor(q, [B, T, E]), value = tf.tensor(v, [B, S, E]);
  tfjsLayer.apply(query, { value });
  tfjsLayer.setWeights(weights.map((w) => tf.tensor(w.data, w.shape)));
  const tfjsCall = (data, shape) => tfjsLayer.apply(query, { value, attentionMask: tf.tensor(data, shape) }).dataSync();
  assertClose(tfjsCall(mask2, [T, S]), want, 'tfjs [T, S]');
  assertClose(tfjsCall(mask3, [B, T, S]), want, 'tfjs [B, T, S]');
  tfjsLayer.dispose();
});

test('useGate: false and slidingWindow: null (Keras 3.15\'s defaults) are accepted and change nothing', () => {
  const x = { data: seededFloats(2 * 3 * 8, 5), shape: [2, 3, 8] };
  const plain = keras({ numHeads: 2, keyDim: 4, valueDim: 3, queryDim: 8 });
  const withDefaults = keras({ numHeads: 2, keyDim: 4, valueDim: 3, queryDim: 8, useGate: false, slidingWindow: null });
  const weights = randomWeights(plain.weightShapes());
  assert.deepEqual(withDefaults.setWeights(weights).call(x, x).output, plain.setWeights(weights).call(x, x).output);

  const t = tf.tensor(x.data, x.shape);
  const a = multiHeadAttention({ numHeads: 2, keyDim: 4, valueDim: 3 });
  const b = multiHeadAttention({ numHeads: 2, keyDim: 4, valueDim: 3, useGate: false, slidingWindow: null });
  a.apply(t, { value: t });
  b.apply(t, { value: t });
  b.setWeights(a.getWeights());
  assert.deepEqual(b.apply(t, { value: t }).dataSync(), a.apply(t, { value: t }).dataSync());
  assert.deepEqual(Object.keys(b.getConfig()), Object.keys(a.getConfig()), 'getConfig unchanged');
  a.dispose();
  b.dispose();
});
