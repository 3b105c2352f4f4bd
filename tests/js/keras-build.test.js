// KerasMultiHeadAttention sized as Keras builds a layer: the input sizes, when not given, come
// from the first call or from setWeights' tensor shapes, and give the same numbers as a layer
// given them up front; getWeights() returns exactly what setWeights() took (Keras' order and
// layouts). (keras.test.js checks the numbers against Keras' own port.)
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { seededFloats } from './seeded.js';

const mha = await init();
const made = [];
const keras = (config) => { const layer = new mha.KerasMultiHeadAttention(config); made.push(layer); return layer; };
after(() => { for (const layer of made) layer.dispose(); });

const H = 4, keyDim = 6, valueDim = 5, B = 2, T = 3, S = 4, queryDim = 10, valueInputDim = 7, keyInputDim = 9;
const query = { data: seededFloats(B * T * queryDim, 1), shape: [B, T, queryDim] };
const value = { data: seededFloats(B * S * valueInputDim, 2), shape: [B, S, valueInputDim] };
const key = { data: seededFloats(B * S * keyInputDim, 3), shape: [B, S, keyInputDim] };
const sized = keras({ numHeads: H, keyDim, valueDim, queryDim, valueInputDim, keyInputDim });
/** Random weights in get_weights() order and layouts. */
const weights = Object.values(sized.weightShapes()).map((shape, i) => ({
  data: seededFloats(shape.reduce((a, b) => a * b, 1), 10 + i, 0.3), shape }));
sized.setWeights(weights);
const expected = sized.call(query, value, key, { returnAttentionScores: true });

test('input sizes not given: the first call builds the layer, then setWeights, same numbers', () => {
  const layer = keras({ numHeads: H, keyDim, valueDim });
  assert.equal(layer.built, false);
  // Built by the call, with Keras' initial weights (glorot_uniform kernels, zero biases), as Keras' layer.
  const initial = layer.call(query, value, key);
  assert.deepEqual(initial.output.shape, expected.output.shape);
  assert.ok(initial.output.data.some((x) => x !== 0));
  assert.equal(layer.built, true);
  assert.deepEqual(layer.config, sized.config);
  const got = layer.setWeights(weights).call(query, value, key, { returnAttentionScores: true });
  assert.deepEqual(got.output, expected.output);
  assert.deepEqual(got.scores, expected.scores);
});

test('input sizes not given: setWeights with { data, shape } tensors builds the layer', () => {
  const layer = keras({ numHeads: H, keyDim, valueDim }).setWeights(weights);
  assert.deepEqual(layer.config, sized.config);
  assert.deepEqual(layer.call(query, value, key).output, expected.output);
  const byName = Object.fromEntries(Object.keys(sized.weightShapes()).map((name, i) => [name, weights[i]]));
  assert.deepEqual(keras({ numHeads: H, keyDim, valueDim }).setWeights(byName).config, sized.config);
});

test('key omitted: keyInputDim is the value\'s size, as in Keras', () => {
  const layer = keras({ numHeads: 2, keyDim: 3 });
  layer.call(query, value);
  assert.equal(layer.config.keyInputDim, valueInputDim);
  assert.equal(layer.config.outputShape, queryDim);
});

test('getWeights() returns what setWeights() took: Keras\' order, shapes and values, as copies', () => {
  const got = sized.getWeights();
  assert.deepEqual(got.map((w) => w.shape), Object.values(sized.weightShapes()));
  assert.deepEqual(got, weights);
  got[0].data[0] += 1;
  assert.deepEqual(sized.getWeights(), weights, 'a copy: changing it changes nothing');
  const noBias = keras({ numHeads: 2, keyDim: 3, queryDim: 4, useBias: false });
  const kernels = Object.values(noBias.weightShapes()).map((shape, i) => ({
    data: seededFloats(shape.reduce((a, b) => a * b, 1), 40 + i), shape }));
  assert.equal(kernels.length, 4);
  assert.deepEqual(noBias.setWeights(kernels).getWeights(), kernels);
});

test('an unbuilt layer says what to pass', () => {
  const layer = keras({ numHeads: 2, keyDim: 3 });
  assert.throws(() => layer.weightShapes(), { name: 'TypeError', message: /^weightShapes: the layer is not built yet/ });
  assert.throws(() => layer.layer, { name: 'TypeError', message: /^KerasMultiHeadAttention\.layer: the layer is not built yet/ });
  layer.dispose();  // an unbuilt layer owns no memory: dispose() is fine
});

test('getWeights() in every configuration: heads x keyDim = the input size (the core fuses q, k, v), gated, without biases, a tuple output', () => {
  for (const [config, shapes] of [
    [{ numHeads: 2, keyDim: 4, queryDim: 8 }, ['8,2,4', '2,4', '8,2,4', '2,4', '8,2,4', '2,4', '2,4,8', '8']],
    [{ numHeads: 2, keyDim: 4, queryDim: 8, useGate: true }, ['8,2,4', '2,4', '8,2,4', '2,4', '8,2,4', '2,4', '8,2,4', '2,4', '2,4,8', '8']],
    [{ numHeads: 2, keyDim: 4, queryDim: 8, useBias: false }, ['8,2,4', '8,2,4', '8,2,4', '2,4,8']],
    [{ numHeads: 2, keyDim: 4, queryDim: 8, outputShape: [2, 4] }, ['8,2,4', '2,4', '8,2,4', '2,4', '8,2,4', '2,4', '2,4,2,4', '2,4']],
  ]) {
    const layer = keras({ ...config, seed: 1 });
    const weights = layer.getWeights();
    assert.deepEqual(weights.map((w) => w.shape.join(',')), shapes, JSON.stringify(config));
    // Keras' initial weights: glorot-uniform kernels (nonzero), zero biases; a round trip changes nothing.
    assert.ok(weights[0].data.some((x) => x !== 0));
    layer.setWeights(weights);
    assert.deepEqual(layer.getWeights(), weights);
  }
});
