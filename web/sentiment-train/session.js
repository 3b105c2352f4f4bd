// One training run of the tutorial's classifier with tfjs (web/sentiment-train/model.js) from a
// fresh initialisation: model.fit with a progress callback, Stop between batches, and the trained
// weights afterwards under Keras' names (what web/sentiment.js's SentimentModel reads), with the
// tokenizer as the vocabulary it reads. The page's training worker (worker.js) runs it; it touches
// no DOM, so Node runs it too (tests/js/tfjs-page-training.test.js).
import { buildSentimentModel, initializeAttentionLikeDense, TUTORIAL } from './model.js';
import { fitTokenizer, TOKENIZER_FILTERS } from './tokenizer.js';

/** The page's defaults: examples/train-sentiment.mjs's run (the tutorial's, Adam 0.01). */
export const PAGE_TRAINING_DEFAULTS = Object.freeze({ epochs: 10, batchSize: 64, learningRate: 0.01, validationSplit: 0.2, samples: 2400 });
const NUM_WORDS = 1000;
const ATTENTION = 'multi_head_attention';

/** The same permutation of each array, drawn from `seed` (a linear congruential generator). */
function seededShuffle(arrays, seed) {
  const order = arrays[0].map((_, i) => i);
  let state = seed >>> 0;
  for (let i = order.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return arrays.map((a) => order.map((i) => a[i]));
}

/** The settings with defaults filled in; a clear TypeError/RangeError names a bad one. */
export function checkTrainingSettings(settings = {}) {
  if (settings === null || typeof settings !== 'object' || Array.isArray(settings)) {
    throw new TypeError(`trainSentiment: settings must be an object, got ${settings === null ? 'null' : typeof settings}`);
  }
  const known = [...Object.keys(PAGE_TRAINING_DEFAULTS), 'seed'];  // (seed: optional, none by default)
  for (const key of Object.keys(settings)) {
    if (!known.includes(key)) throw new TypeError(`trainSentiment: unknown setting '${key}'; known: ${known.join(', ')}`);
  }
  const s = { ...PAGE_TRAINING_DEFAULTS, ...Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)) };
  const integer = (name, lo, hi) => {
    if (!Number.isInteger(s[name]) || s[name] < lo || s[name] > hi) throw new RangeError(`trainSentiment: ${name} must be an integer in [${lo}, ${hi}], got ${s[name]}`);
  };
  integer('epochs', 1, 1000);
  integer('batchSize', 1, 4096);
  integer('samples', 10, 1e6);
  if (s.seed !== undefined) integer('seed', 0, 2 ** 31 - 1);
  if (typeof s.learningRate !== 'number' || !(s.learningRate > 0 && s.learningRate <= 1)) {
    throw new RangeError(`trainSentiment: learningRate must be a number in (0, 1], got ${s.learningRate}`);
  }
  if (typeof s.validationSplit !== 'number' || !(s.validationSplit > 0 && s.validationSplit < 1)) {
    throw new RangeError(`trainSentiment: validationSplit must be a number in (0, 1), got ${s.validationSplit}`);
  }
  return s;
}

/** Keras-named tensors ({ data, shape }) of a trained model, as SentimentModel reads them (read asynchronously: a GPU backend's). */
export async function kerasWeights(model) {
  const one = async (layer, names) => Object.fromEntries(await Promise.all(model.getLayer(layer).getWeights()
    .map(async (w, i) => [`${layer}/${names[i]}`, { dtype: 'F32', data: Float32Array.from(await w.data()), shape: w.shape }])));
  return {
    ...await one('embedding', ['embeddings']),
    ...await one('conv1d', ['kernel', 'bias']),
    ...await one(ATTENTION, ['query/kernel', 'query/bias', 'key/kernel', 'key/bias', 'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias']),
    ...await one('dense', ['kernel', 'bias']),
  };
}

/** The tokenizer as a vocab.json SentimentModel reads: unknown and rarer words dropped, Keras' truncating='pre'. */
export function tokenizerVocabulary(tokenizer) {
  const words = ['<pad>'];
  for (const [word, index] of tokenizer.wordIndex) if (index < tokenizer.numWords) words[index] = word;
  return { words, padding: 0, oov: null, maxLength: TUTORIAL.maxLen, pad: 'post', truncate: 'pre', filters: TOKENIZER_FILTERS, lower: true };
}

/**
 * Trains the classifier. tf: the tfjs namespace (backend set); mhaTfjs: mha-wasm/tfjs's API for this tf
 * (multiHeadAttention, registerFastGradients); corpus: { train: { texts, labels } }. Calls
 * onProgress({ epoch, epochs, batch, batchesPerEpoch, loss, accuracy } after each batch (the epoch's
 * running means, as Keras' progress bar shows them), and onEpoch({ epoch, loss, accuracy, valLoss,
 * valAccuracy, seconds }) after each epoch; `yieldToMessages()` is awaited between batches and
 * `shouldStop()` asked after each one. Resolves with { history, stopped, epochsDone, weights, vocab, seconds }.
 */
export async function trainSentiment({ tf, mhaTfjs, corpus, settings = {}, onProgress = () => {}, onEpoch = () => {}, shouldStop = () => false, yieldToMessages = async () => {} }) {
  const s = checkTrainingSettings(settings);
  let texts = corpus.train.texts.slice(0, s.samples), labels = corpus.train.labels.slice(0, s.samples);
  if (s.seed !== undefined) [texts, labels] = seededShuffle([texts, labels], s.seed);
  const tokenizer = fitTokenizer(texts, { numWords: NUM_WORDS });
  const n = texts.length;
  const x = tf.tensor2d(tokenizer.encodeAll(texts, TUTORIAL.maxLen), [n, TUTORIAL.maxLen], 'int32');
  const y = tf.tensor2d(labels, [n, 1]);
  // (tfjs' webgpu backend has GPU kernels of its own for Embedding's and Conv1D's gradients)
  if (tf.getBackend() !== 'webgpu') mhaTfjs.registerFastGradients({ backends: [tf.getBackend()] });
  const attention = mhaTfjs.multiHeadAttention({ numHeads: TUTORIAL.numHeads, keyDim: TUTORIAL.keyDim, name: ATTENTION });
  const model = buildSentimentModel(tf, attention, { learningRate: s.learningRate, seed: s.seed });
  initializeAttentionLikeDense(tf, attention, { seed: s.seed });
  const batchesPerEpoch = Math.ceil(Math.floor(n * (1 - s.validationSplit)) / s.batchSize);
  let stopped = false, epochStarted = 0, sums = { loss: 0, accuracy: 0, count: 0 };
  const history = { loss: [], accuracy: [], valLoss: [], valAccuracy: [], seconds: [] };
  const started = performance.now();
  try {
    await model.fit(x, y, {
      // With a seed the examples were shuffled once by it (tfjs' own per-epoch shuffle draws from Math.random).
      epochs: s.epochs, batchSize: s.batchSize, validationSplit: s.validationSplit, shuffle: s.seed === undefined, yieldEvery: 'never',
      callbacks: {
        onEpochBegin: async () => { epochStarted = performance.now(); sums = { loss: 0, accuracy: 0, count: 0 }; },
        onBatchEnd: async (batch, logs) => {
          sums.loss += logs.loss; sums.accuracy += logs.acc; sums.count += 1;
          onProgress({ epoch: history.loss.length + 1, epochs: s.epochs, batch: batch + 1, batchesPerEpoch,
            loss: sums.loss / sums.count, accuracy: sums.accuracy / sums.count });
          await yieldToMessages();
          if (shouldStop()) { stopped = true; model.stopTraining = true; }
        },
        onEpochEnd: async (epoch, logs) => {
          if (logs.val_loss === undefined) return;  // an epoch cut short by Stop: no validation, not in the history
          const entry = { epoch: epoch + 1, loss: logs.loss, accuracy: logs.acc, valLoss: logs.val_loss, valAccuracy: logs.val_acc, seconds: (performance.now() - epochStarted) / 1000 };
          for (const [key, value] of Object.entries(entry)) if (key !== 'epoch') history[key].push(value);
          onEpoch(entry);
          await yieldToMessages();
        },
      },
    });
    return { history, stopped, epochsDone: history.loss.length, weights: await kerasWeights(model), vocab: tokenizerVocabulary(tokenizer), seconds: (performance.now() - started) / 1000 };
  } finally {
    tf.dispose([x, y]);
    model.dispose();  // disposes its layers, mha-wasm's attention included
  }
}
