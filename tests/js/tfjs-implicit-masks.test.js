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
