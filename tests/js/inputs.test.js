// What callers pass, in the forms they have it: masks of every accepted data kind give exactly the
// Uint8Array / Float32Array mask's numbers (in both layers), non-finite inputs do what docs/api.md
// says (spread to their own batch item only; named by checkFinite: true), and rotary: true is the
// whole head at base 10000.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { seededFloats } from './seeded.js';

const mha = await init();
const E = 8, H = 2, B = 2, L = 3, S = 4;
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 3 });
const keras = new mha.KerasMultiHeadAttention({ numHeads: H, keyDim: 4, queryDim: E });
after(() => { layer.dispose(); keras.dispose(); });
const query = { data: seededFloats(B * L * E, 11), shape: [B, L, E] };
const key = { data: seededFloats(B * S * E, 12), shape: [B, S, E] };
const value = { data: seededFloats(B * S * E, 13), shape: [B, S, E] };

const padding = [0, 0, 1, 1, 0, 0, 0, 1];  // [B, S]: the last keys of each row are padding
const BOOL_FORMS = {
  Uint8ClampedArray: Uint8ClampedArray.from(padding), Int8Array: Int8Array.from(padding),
  Uint16Array: Uint16Array.from(padding), Int16Array: Int16Array.from(padding.map((x) => -x)),
  Uint32Array: Uint32Array.from(padding), Int32Array: Int32Array.from(padding.map((x) => 7 * x)),
  BigInt64Array: BigInt64Array.from(padding.map(BigInt)), BigUint64Array: BigUint64Array.from(padding.map(BigInt)),
  'boolean[]': padding.map(Boolean),
};

describe('masks of every accepted kind', () => {
  const reference = layer.forward(query, key, value, { keyPaddingMask: { data: Uint8Array.from(padding), shape: [B, S] }, needWeights: true });
  for (const [kind, data] of Object.entries(BOOL_FORMS)) {
    test(`keyPaddingMask ${kind} = Uint8Array`, () => {
      const got = layer.forward(query, key, value, { keyPaddingMask: { data, shape: [B, S] }, needWeights: true });
      assert.deepEqual(got.output.data, reference.output.data);
      assert.deepEqual(got.weights.data, reference.weights.data);
    });
  }
  test('a Float64Array float mask = the same Float32Array mask', () => {
    const float = Float64Array.from({ length: L * S }, (_, i) => (i % 3 === 0 ? -Infinity : 0.25 * i));
    const want = layer.forward(query, key, value, { attnMask: { data: Float32Array.from(float), shape: [L, S] } });
    const got = layer.forward(query, key, value, { attnMask: { data: float, shape: [L, S] } });
    assert.deepEqual(got.output.data, want.output.data);
  });
  test('the caller\'s mask is not changed', () => {
    const data = Int32Array.from(padding);
    layer.forward(query, key, value, { keyPaddingMask: { data, shape: [B, S] } });
    assert.deepEqual([...data], padding);
  });
  test('Keras\' attentionMask: the same kinds, 1 = attend', () => {
    const kq = { data: seededFloats(L * E, 21), shape: [1, L, E] }, kv = { data: seededFloats(S * E, 22), shape: [1, S, E] };
    keras.setWeights(Object.values(keras.weightShapes()).map((shape, i) => ({
      data: seededFloats(shape.reduce((a, b) => a * b, 1), 30 + i, 0.3), shape })));
    const allowed = [1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 1];  // [1, L, S]
    const want = keras.call(kq, kv, null, { attentionMask: { data: Uint8Array.from(allowed), shape: [1, L, S] }, returnAttentionScores: true });
    for (const data of [Int32Array.from(allowed), allowed.map(Boolean), BigInt64Array.from(allowed.map(BigInt)), Float64Array.from(allowed)]) {
      const got = keras.call(kq, kv, null, { attentionMask: { data, shape: [1, L, S] }, returnAttentionScores: true });
      assert.deepEqual(got.output.data, want.output.data, data.constructor.name);
      assert.deepEqual(got.scores.data, want.scores.data, data.constructor.name);
    }
    assert.equal(want.scores.data[2], 0, 'a blocked key gets no weight');
  });
});

describe('NaN and Infinity in the inputs (docs/api.md)', () => {
  test('one NaN in an unmasked key turns its own batch item\'s output to NaN, and only that one', () => {
    const poisoned = { data: key.data.slice(), shape: key.shape };
    poisoned.data[1 * S * E + 0 * E + 3] = NaN;  // batch item 1, key 0
    const { output } = layer.forward(query, poisoned, value);
    const item = (b) => output.data.subarray(b * L * E, (b + 1) * L * E);
    assert.ok(item(1).every(Number.isNaN), 'every output of batch item 1 is NaN');
    assert.deepEqual(item(0), layer.forward(query, key, value).output.data.subarray(0, L * E), 'batch item 0 unchanged');
  });
  test('a NaN at a masked key does not reach the output', () => {
    const poisoned = { data: key.data.slice(), shape: key.shape };
    poisoned.data[0 * S * E + 3 * E + 1] = NaN;  // batch item 0, key 3: padding
    const keyPaddingMask = { data: Uint8Array.from(padding), shape: [B, S] };
    assert.deepEqual(layer.forward(query, poisoned, value, { keyPaddingMask }).output.data,
      layer.forward(query, key, value, { keyPaddingMask }).output.data);
  });
  test('checkFinite: true changes nothing for finite inputs, and allows -Infinity in a float mask', () => {
    const attnMask = { data: Float32Array.from({ length: L * S }, (_, i) => (i === 1 ? -Infinity : 0)), shape: [L, S] };
    assert.deepEqual(layer.forward(query, key, value, { attnMask, checkFinite: true }).output.data,
      layer.forward(query, key, value, { attnMask }).output.data);
  });
  test('checkFinite: true names the first non-finite element, masked positions included', () => {
    const poisoned = { data: value.data.slice(), shape: value.shape };
    poisoned.data[S * E + 2 * E + 7] = Infinity;
    poisoned.data[S * E + 3 * E] = NaN;
    assert.throws(() => layer.forward(query, key, poisoned, { checkFinite: true }), {
      name: 'RangeError', message: 'forward: checkFinite: value.data[55] is Infinity (index [1, 2, 7] of shape [2, 4, 8])' });
  });
});

test('rotary: true and rotary: {} are the whole head at base 10000', () => {
  const make = (rotary) => new mha.MultiHeadAttention({ embedDim: E, numHeads: H, rotary }).initialize({ seed: 5 });
  const layers = [make(true), make({}), make({ dim: E / H, base: 10000 })];
  try {
    assert.deepEqual(layers[0].config.rotary, { dim: 4, base: 10000, interleaved: false });
    const [a, b, c] = layers.map((l) => l.forward(query, null, null, { causal: true }).output.data);
    assert.deepEqual(a, c);
    assert.deepEqual(b, c);
    const plain = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 5 });
    assert.notDeepEqual(plain.forward(query, null, null, { causal: true }).output.data, c, 'rotary changes the numbers');
    plain.dispose();
  } finally {
    for (const l of layers) l.dispose();
  }
});
