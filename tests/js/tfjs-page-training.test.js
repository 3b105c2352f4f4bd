// The demo page's training run (web/sentiment-train/session.js) in Node: a short model.fit through
// the same code the page's worker runs; its progress and history; Stop between batches; and the
// weights and vocabulary it hands to the page, loaded into web/sentiment.js's SentimentModel (what
// the Sentiment tab then classifies with), give the trained tfjs model's own predictions and its
// tokenization (Keras' Tokenizer without an oov token: unknown words dropped; truncating 'pre').
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { SentimentModel } from '../../web/sentiment.js';
import { buildSentimentModel, TUTORIAL } from '../../web/sentiment-train/model.js';
import { checkTrainingSettings, PAGE_TRAINING_DEFAULTS, trainSentiment } from '../../web/sentiment-train/session.js';
import { fitTokenizer } from '../../web/sentiment-train/tokenizer.js';

const tf = await loadTfjs('cpu');
const api = await mhaTfjs(tf, { threads: 1 });
const corpus = JSON.parse(await readFile(new URL('../../web/sentiment-train/corpus.json', import.meta.url), 'utf8'));
const SENTENCES = ['i loved this movie', 'the acting was not good at all', 'Saw the movie today and thought it was a good effort, good messages for kids.',
  'zzz unknown words qqq are dropped', Array.from({ length: 40 }, (_, i) => (i % 2 ? 'great' : 'boring')).join(' ')];

test('a short run: progress per batch, history per epoch, the weights and vocabulary SentimentModel reads', { timeout: 300_000 }, async () => {
  const progress = [], epochs = [];
  const result = await trainSentiment({
    tf, mhaTfjs: api, corpus, settings: { epochs: 2, samples: 100, batchSize: 16 },
    onProgress: (p) => progress.push(p), onEpoch: (e) => epochs.push(e),
  });
  // 100 sentences, validationSplit 0.2: 80 to train on, 5 batches of 16 an epoch.
  assert.equal(progress.length, 10);
  assert.deepEqual(progress.map((p) => [p.epoch, p.batch, p.batchesPerEpoch]), [1, 2].flatMap((e) => [1, 2, 3, 4, 5].map((b) => [e, b, 5])));
  assert.ok(progress.every((p) => Number.isFinite(p.loss) && p.accuracy >= 0 && p.accuracy <= 1));
  assert.equal(epochs.length, 2);
  assert.deepEqual(Object.keys(result.history), ['loss', 'accuracy', 'valLoss', 'valAccuracy', 'seconds']);
  for (const values of Object.values(result.history)) assert.equal(values.length, 2);
  assert.equal(result.history.loss[1], epochs[1].loss);
  assert.equal(result.stopped, false);
  assert.equal(result.epochsDone, 2);

  const { weights, vocab } = result;
  assert.deepEqual(Object.fromEntries(Object.entries(weights).map(([k, t]) => [k, t.shape])), {
    'embedding/embeddings': [3001, 32], 'conv1d/kernel': [4, 32, 100], 'conv1d/bias': [100],
    'multi_head_attention/query/kernel': [100, 4, 128], 'multi_head_attention/query/bias': [4, 128],
    'multi_head_attention/key/kernel': [100, 4, 128], 'multi_head_attention/key/bias': [4, 128],
    'multi_head_attention/value/kernel': [100, 4, 128], 'multi_head_attention/value/bias': [4, 128],
    'multi_head_attention/attention_output/kernel': [4, 128, 100], 'multi_head_attention/attention_output/bias': [100],
    'dense/kernel': [3200, 1], 'dense/bias': [1],
  });
  assert.ok(Object.values(weights).every((t) => t.dtype === 'F32' && t.data instanceof Float32Array));
  const tokenizer = fitTokenizer(corpus.train.texts.slice(0, 100));
  assert.equal(vocab.words.length, tokenizer.wordIndex.size + 1);
  assert.deepEqual([vocab.oov, vocab.truncate, vocab.maxLength, vocab.words[0]], [null, 'pre', 32, '<pad>']);

  // The same weights in a tfjs model of the same architecture: its predictions are SentimentModel's.
  const model = buildSentimentModel(tf, api.multiHeadAttention({ numHeads: 4, keyDim: 128, name: 'multi_head_attention' }));
  for (const layer of ['embedding', 'conv1d', 'multi_head_attention', 'dense']) {
    const names = Object.keys(weights).filter((k) => k.startsWith(`${layer}/`));
    model.getLayer(layer).setWeights(names.map((k) => tf.tensor(weights[k].data, weights[k].shape)));
  }
  const classifier = new SentimentModel(api.module, { tensors: weights }, vocab);
  try {
    const ids = tokenizer.encodeAll(SENTENCES, TUTORIAL.maxLen);
    const expected = model.predict(tf.tensor2d(ids, [SENTENCES.length, TUTORIAL.maxLen], 'int32')).dataSync();
    SENTENCES.forEach((text, i) => {
      const p = classifier.predict(text);
      assert.deepEqual(Array.from(p.ids), Array.from(ids.subarray(i * 32, (i + 1) * 32)), `ids of "${text}"`);
      assert.ok(Math.abs(p.probability - expected[i]) < 1e-5, `"${text}": ${p.probability} vs tfjs ${expected[i]}`);
      assert.equal(p.weights.length, 4 * 32 * 32);
    });
    assert.deepEqual(classifier.encode('zzz unknown words qqq are dropped').labels.filter((l) => l !== '<pad>'),
      wordsKnown('zzz unknown words qqq are dropped', vocab));
    // A 40-word sentence keeps its last 32 words (truncating 'pre').
    assert.equal(classifier.encode(SENTENCES[4]).labels[0], 'boring');
    assert.equal(classifier.encode(SENTENCES[4]).labels[31], 'great');
  } finally {
    classifier.dispose();
    model.dispose();
  }
});

function wordsKnown(text, vocab) {
  return text.toLowerCase().split(' ').filter((w) => vocab.words.includes(w));
}

test('Stop: shouldStop() after a batch ends the run there; the weights are still handed over', { timeout: 300_000 }, async () => {
  let batches = 0;
  const result = await trainSentiment({
    tf, mhaTfjs: api, corpus, settings: { epochs: 5, samples: 100, batchSize: 16 },
    onProgress: () => { batches += 1; }, shouldStop: () => batches >= 7,
  });
  assert.equal(result.stopped, true);
  assert.equal(batches, 7);
  assert.equal(result.epochsDone, 1, 'the epoch cut short is not in the history');
  assert.equal(result.history.loss.length, 1);
  assert.equal(Object.keys(result.weights).length, 13);
});

test('settings: defaults, and a bad one is a clear error', () => {
  assert.deepEqual(checkTrainingSettings({}), { ...PAGE_TRAINING_DEFAULTS });
  assert.deepEqual(PAGE_TRAINING_DEFAULTS, { epochs: 10, batchSize: 64, learningRate: 0.01, validationSplit: 0.2, samples: 2400 });
  assert.throws(() => checkTrainingSettings({ epoch: 3 }), { name: 'TypeError', message: "trainSentiment: unknown setting 'epoch'; known: epochs, batchSize, learningRate, validationSplit, samples, seed" });
  assert.equal(checkTrainingSettings({ seed: 7 }).seed, 7);
  assert.throws(() => checkTrainingSettings({ seed: 1.5 }), { name: 'RangeError', message: 'trainSentiment: seed must be an integer in [0, 2147483647], got 1.5' });
});
