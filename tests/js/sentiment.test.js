// The sentiment classifier (tools/train_sentiment.py -> web/sentiment/, web/sentiment.js) against
// the same model built from the exported weights in tfjs-layers (Embedding, Conv1D, Keras'
// MultiHeadAttention, Flatten, Dense): the same probability (|diff| <= 1e-4) and attention weights;
// against the trainer's own probabilities (torch); and examples/sentiment.mjs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { init, readSafetensors } from '../../bindings/js/index.js';
import { SentimentModel, sentimentWords } from '../../web/sentiment.js';
import { KerasReference, tf } from './keras-reference.js';

const dir = new URL('../../web/sentiment/', import.meta.url);
const weights = readSafetensors(readFileSync(new URL('sentiment.safetensors', dir)));
const vocab = JSON.parse(readFileSync(new URL('vocab.json', dir), 'utf8'));
const metrics = JSON.parse(readFileSync(new URL('metrics.json', dir), 'utf8'));
let model;

before(async () => {
  model = new SentimentModel(await init(), weights, vocab);
});
after(() => model?.dispose());

const SENTENCES = [
  'the film was wonderful', 'the film was not good at all', 'not bad at all', 'i did not like this movie',
  'the acting was great but it was too long', 'the plot was slow but the ending was wonderful',
  'although the cast was brilliant, the script was lazy', 'Zorgle blick the FILM was superb!!!', '',
  'the story was good '.repeat(12),  // longer than 32 words: cut after 32
];

/** The classifier as tfjs-layers computes it from the exported weights (Keras' layers, Keras' layouts). */
function tfjsReference(sentences) {
  const w = (name) => tf.tensor(weights.tensors[name].data, weights.tensors[name].shape);
  const embedding = tf.layers.embedding({ inputDim: 3001, outputDim: 32, weights: [w('embedding/embeddings')] });
  const conv = tf.layers.conv1d({ filters: 100, kernelSize: 4, padding: 'same', weights: [w('conv1d/kernel'), w('conv1d/bias')] });
  const attention = new KerasReference({ numHeads: 4, keyDim: 128 });
  const flatten = tf.layers.flatten();
  const dense = tf.layers.dense({ units: 1, activation: 'sigmoid', weights: [w('dense/kernel'), w('dense/bias')] });
  const ids = tf.tensor2d(sentences.flatMap((s) => Array.from(model.encode(s).ids)), [sentences.length, 32], 'int32');
  const x = conv.apply(embedding.apply(ids));
  attention.callAndReturnAttentionScores(x, { value: x });  // builds its sublayers
  const sub = { query: attention._queryDense, key: attention._keyDense, value: attention._valueDense, attention_output: attention._outputDense };
  for (const [name, layer] of Object.entries(sub)) layer.setWeights([w(`multi_head_attention/${name}/kernel`), w(`multi_head_attention/${name}/bias`)]);
  const [y, scores] = attention.callAndReturnAttentionScores(x, { value: x });
  return { probabilities: dense.apply(flatten.apply(y)).dataSync(), scores: scores.dataSync() };
}

test('Keras\' Tokenizer and pad_sequences: filters, lower case, 0 = padding, 1 = unknown, cut after 32', () => {
  assert.deepEqual(sentimentWords('The FILM, was (not) "good"!', vocab), ['the', 'film', 'was', 'not', 'good']);
  assert.deepEqual(sentimentWords("wasn't", vocab), ["wasn't"], 'apostrophes stay, as in Keras');
  const { ids, labels, words } = model.encode('the zorgle film');
  assert.equal(words, 3);
  assert.equal(ids.length, 32);
  assert.equal(ids[1], vocab.oov);
  assert.equal(labels[1], 'zorgle?');
  assert.deepEqual(Array.from(ids.subarray(3)), new Array(29).fill(0));
  assert.equal(model.encode('the story was good '.repeat(12)).words, 32);
});

test('the same probability and attention weights as the model built in tfjs-layers from the exported weights', () => {
  const reference = tfjsReference(SENTENCES);
  let worstP = 0;
  let worstW = 0;
  SENTENCES.forEach((text, n) => {
    const ours = model.predict(text);
    worstP = Math.max(worstP, Math.abs(ours.probability - reference.probabilities[n]));
    assert.ok(Math.abs(ours.probability - reference.probabilities[n]) <= 1e-4, `${JSON.stringify(text)}: ${ours.probability} vs ${reference.probabilities[n]}`);
    assert.equal(ours.weights.length, 4 * 32 * 32);
    for (let i = 0; i < ours.weights.length; i++) worstW = Math.max(worstW, Math.abs(ours.weights[i] - reference.scores[n * 4096 + i]));
  });
  assert.ok(worstW <= 1e-5, `attention weights differ by ${worstW}`);
  console.log(`# largest |ours - tfjs-layers|: probability ${worstP.toExponential(2)}, attention weights ${worstW.toExponential(2)}`);
});

test('the trainer\'s probabilities (torch) and its held-out accuracy', () => {
  for (const { text, probability } of metrics.probes) {
    assert.ok(Math.abs(model.predict(text).probability - probability) <= 1e-4, text);
  }
  const { all, negated, contrast } = metrics.heldOutAccuracy;
  assert.ok(all >= 0.9 && negated >= 0.85 && contrast >= 0.85, JSON.stringify(metrics.heldOutAccuracy));
  assert.equal(model.predict('the film was wonderful').label, 'positive');
  assert.equal(model.predict('the film was not good at all').label, 'negative');
  assert.equal(model.predict('the acting was great but it was too long').label, 'negative');
});

test('examples/sentiment.mjs prints the label, the probability and each head\'s words', () => {
  const out = execFileSync(process.execPath, [new URL('../../examples/sentiment.mjs', import.meta.url).pathname, 'the film was not good at all'], { encoding: 'utf8' });
  assert.match(out, /^"the film was not good at all": negative \(p\(positive\) = 0\.\d{4}\)$/m);
  for (let h = 0; h < 4; h++) assert.match(out, new RegExp(`^  head ${h} attends to: (\\S+ \\d\\.\\d\\d(, )?){3}$`, 'm'));
});

test('a weights file without a tensor, or with a wrong shape, is named', async () => {
  const mha = await init();
  const { 'conv1d/bias': _, ...missing } = weights.tensors;
  assert.throws(() => new SentimentModel(mha, { tensors: missing }, vocab),
    { name: 'TypeError', message: "sentiment model: the weights file has no tensor 'conv1d/bias'" });
  const wrong = { ...weights.tensors, 'dense/bias': { dtype: 'F32', shape: [2], data: new Float32Array(2) } };
  assert.throws(() => new SentimentModel(mha, { tensors: wrong }, vocab),
    { name: 'RangeError', message: "sentiment model: 'dense/bias' must be F32 [1], got F32 [2]" });
});
