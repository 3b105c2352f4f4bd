// Implicit masks on mha-wasm/tfjs's layer (Keras' supports_masking): Embedding(maskZero) masks on
// the query and the value, in a functional model (predict) and in eager calls (tfjs' kerasMask),
// give what the equivalent explicit attentionMask gives ([B, T, S]: query token t and value token
// s both real, as Keras' _compute_attention_mask combines them); computeMask passes the query's on.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { tf } from './keras-reference.js';

const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const QUERY_IDS = [[1, 2, 3, 0, 0], [3, 3, 1, 1, 2], [1, 0, 0, 0, 0]], VALUE_IDS = [[5, 4, 0], [3, 0, 0], [2, 1, 1]];

function close(got, want, what) {
  const a = got.dataSync(), b = want.dataSync();
  assert.equal(a.length, b.length);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= 1e-6, `${what}[${i}]: ${x} vs ${b[i]}`));
}

test('Embedding(maskZero) masks on query and value: a model\'s predict and an eager call equal the explicit [B, T, S] mask', () => {
  const queryIds = tf.input({ shape: [5] }), valueIds = tf.input({ shape: [3] });
  const queryEmbedding = tf.layers.embedding({ inputDim: 4, outputDim: 8, maskZero: true });
  const valueEmbedding = tf.layers.embedding({ inputDim: 6, outputDim: 8, maskZero: true });
  const layer = multiHeadAttention({ numHeads: 2, keyDim: 2 });
  assert.equal(layer.supportsMasking, true);
  const model = tf.model({ inputs: [queryIds, valueIds], outputs: layer.apply(queryEmbedding.apply(queryIds), { value: valueEmbedding.apply(valueIds) }) });
  const q = tf.tensor(QUERY_IDS), v = tf.tensor(VALUE_IDS);
  const predicted = model.predict([q, v]);

  // The explicit mask, on copies of the embeddings that carry no implicit mask.
  const Q = tf.add(queryEmbedding.apply(q), 0), V = tf.add(valueEmbedding.apply(v), 0);
  const mask = tf.logicalAnd(tf.expandDims(tf.notEqual(q, 0), 2), tf.expandDims(tf.notEqual(v, 0), 1));  // [B, T, S]
  const explicit = layer.apply(Q, { value: V, attentionMask: mask });
  close(predicted, explicit, 'model with implicit masks vs explicit mask');
  const unmasked = layer.apply(Q, { value: V });
  assert.ok(tf.max(tf.abs(tf.sub(predicted, unmasked))).dataSync()[0] > 1e-3, 'the masks change the output');

  // Eager: the embeddings' own kerasMask, and the query's mask passed on.
  close(layer.apply(queryEmbedding.apply(q), { value: valueEmbedding.apply(v) }), explicit, 'eager kerasMask vs explicit mask');
  const queryMask = tf.notEqual(q, 0);
  assert.equal(layer.computeMask([Q, V], [queryMask, tf.notEqual(v, 0)]), queryMask);
  assert.equal(layer.computeMask([Q, V], null), null);
});

test('a model with Embedding(maskZero) before the layer trains and predicts as the same model given the explicit mask', async () => {
  const T = 6, ids = [[3, 5, 2, 0, 0, 0], [7, 1, 1, 4, 9, 0], [2, 0, 0, 0, 0, 0], [8, 8, 3, 6, 1, 2]];
  const labels = [[1], [0], [1], [0]];
  const build = (implicit) => {
    const tokens = tf.input({ shape: [T], dtype: 'int32' });
    const maskInput = tf.input({ shape: [T, T], dtype: 'bool' });
    const x = tf.layers.embedding({ inputDim: 10, outputDim: 8, maskZero: implicit, name: 'embedding' }).apply(tokens);
    const attention = multiHeadAttention({ numHeads: 2, keyDim: 4, name: 'attention' });
    const y = implicit ? attention.apply(x, { value: x }) : attention.apply(x, { value: x, attentionMask: maskInput });
    const out = tf.layers.dense({ units: 1, activation: 'sigmoid', name: 'dense' }).apply(tf.layers.flatten().apply(y));
    const model = tf.model({ inputs: implicit ? tokens : [tokens, maskInput], outputs: out });
    model.compile({ optimizer: tf.train.sgd(0.5), loss: 'binaryCrossentropy' });
    return model;
  };
  const withImplicit = build(true), withExplicit = build(false);
  withExplicit.setWeights(withImplicit.getWeights());
  const x = tf.tensor(ids, [4, T], 'int32');
  const real = tf.notEqual(x, 0);
  const mask = tf.logicalAnd(tf.expandDims(real, 2), tf.expandDims(real, 1));
  const y = tf.tensor(labels);
  close(withImplicit.predict(x), withExplicit.predict([x, mask]), 'predictions before training');
  const unmasked = withExplicit.predict([x, tf.onesLike(mask)]);
  assert.ok(tf.max(tf.abs(tf.sub(unmasked, withImplicit.predict(x)))).dataSync()[0] > 1e-4, 'the implicit mask changes the predictions');
  await withImplicit.fit(x, y, { epochs: 3, batchSize: 4, shuffle: false, verbose: 0 });
  await withExplicit.fit([x, mask], y, { epochs: 3, batchSize: 4, shuffle: false, verbose: 0 });
  const after = (a, b, what) => {
    const d = tf.max(tf.abs(tf.sub(a, b))).dataSync()[0];
    assert.ok(d <= 1e-5, `${what}: off by ${d}`);
  };
  after(withImplicit.predict(x), withExplicit.predict([x, mask]), 'predictions after 3 epochs');
  withImplicit.getWeights().forEach((w, i) => after(w, withExplicit.getWeights()[i], `weight ${i} after training`));
});

test('eager: the output carries the query\'s Embedding(maskZero) mask (Keras\' compute_mask), so a layer after it keeps the padding', () => {
  const queryEmbedding = tf.layers.embedding({ inputDim: 4, outputDim: 8, maskZero: true });
  const valueEmbedding = tf.layers.embedding({ inputDim: 6, outputDim: 8, maskZero: true });
  const layer = multiHeadAttention({ numHeads: 2, keyDim: 2 }), next = multiHeadAttention({ numHeads: 2, keyDim: 2 });
  const q = tf.tensor(QUERY_IDS), v = tf.tensor(VALUE_IDS);
  const queryMask = tf.notEqual(q, 0);

  // tfjs' eager apply calls computeMask(inputs) without the masks: the query's kerasMask is the one.
  const output = layer.apply(queryEmbedding.apply(q), { value: valueEmbedding.apply(v) });
  assert.ok(output.kerasMask, 'the output has a kerasMask');
  assert.deepEqual(output.kerasMask.arraySync(), queryMask.arraySync());
  const [withScores, scores] = layer.apply(queryEmbedding.apply(q), { value: valueEmbedding.apply(v), returnAttentionScores: true });
  assert.deepEqual(withScores.kerasMask.arraySync(), queryMask.arraySync());
  assert.equal(scores.kerasMask ?? null, null);
  // Without an implicit mask on the query, none on the output (the value's is not passed on).
  assert.equal(layer.apply(tf.add(queryEmbedding.apply(q), 0), { value: valueEmbedding.apply(v) }).kerasMask ?? null, null);

  // The next layer's self-attention then masks the padded tokens, as the explicit [B, T, T] mask does.
  const chained = next.apply(output, { value: output });
  const plain = tf.add(output, 0);  // (a copy without the implicit mask)
  const explicit = next.apply(plain, { value: plain, attentionMask: tf.logicalAnd(tf.expandDims(queryMask, 2), tf.expandDims(queryMask, 1)) });
  close(chained, explicit, 'the next layer with the passed-on mask vs the explicit mask');
});
