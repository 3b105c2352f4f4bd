// The Keras tutorial's sentiment classifier (tools/train_sentiment.py, weights in web/sentiment/)
// in JavaScript, its attention layer on mha-wasm's KerasMultiHeadAttention:
//   Embedding(3001, 32) -> Conv1D(100, 4, 'same') -> MultiHeadAttention(4 heads, keyDim 128)(x, x, x)
//   -> Flatten -> Dense(1, sigmoid)
// Runs in the page's worker, in examples/sentiment.mjs and in the tests, so it touches no DOM.

import { requireTensor as requireModelTensor } from './model.js';

const HEADS = 4;
const KEY_DIM = 128;

const requireTensor = (tensors, name, shape) => requireModelTensor(tensors, name, shape, 'sentiment model');

/** Keras' Tokenizer: lower case, its punctuation filters, split on spaces. */
export function sentimentWords(text, vocab) {
  let s = vocab.lower ? text.toLowerCase() : text;
  for (const c of vocab.filters) s = s.split(c).join(' ');
  return s.split(' ').filter(Boolean);
}

export class SentimentModel {
  #attention;
  #kerasWeights;  // the attention's weights under Keras' names, for a copy on another backend
  #other = null;  // { mha, layer }: the attention layer made by another module, e.g. WebGPU's (predictAsync)

  /**
   * @param mha the loaded package (init())
   * @param {{ tensors }} weights readSafetensors() of sentiment.safetensors (Keras' weight names)
   * @param vocab the parsed vocab.json
   */
  constructor(mha, { tensors }, vocab) {
    this.vocab = vocab;
    // Index 0 is padding, never a word (a trained tokenizer's word list may have holes).
    this.index = new Map(vocab.words.flatMap((w, i) => (i > 0 && typeof w === 'string' ? [[w, i]] : [])));
    this.maxLength = vocab.maxLength;
    this.embeddings = requireTensor(tensors, 'embedding/embeddings', [3001, 32]);
    this.convKernel = requireTensor(tensors, 'conv1d/kernel', [4, 32, 100]);
    this.convBias = requireTensor(tensors, 'conv1d/bias', [100]);
    this.denseKernel = requireTensor(tensors, 'dense/kernel', [this.maxLength * 100, 1]);
    this.denseBias = requireTensor(tensors, 'dense/bias', [1]);
    this.#attention = new mha.KerasMultiHeadAttention({ numHeads: HEADS, keyDim: KEY_DIM, queryDim: 100 });
    try {
      const shapes = this.#attention.weightShapes();
      this.#kerasWeights = Object.fromEntries(Object.entries(shapes).map(([name, shape]) => [
        name, { data: requireTensor(tensors, `multi_head_attention/${name}`, shape), shape }]));
      this.#attention.setWeights(this.#kerasWeights);
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /**
   * Token ids padded (or cut) to maxLength, as pad_sequences(padding='post', truncating=vocab.truncate)
   * does ('post' unless the vocabulary says 'pre'). A vocabulary with `oov: null` (Keras' Tokenizer
   * without an oov_token, as the page's training fits it) drops unknown words instead.
   */
  encode(text) {
    let all = sentimentWords(text, this.vocab);
    if (this.vocab.oov === null) all = all.filter((w) => this.index.has(w));
    const words = this.vocab.truncate === 'pre' ? all.slice(Math.max(0, all.length - this.maxLength)) : all.slice(0, this.maxLength);
    const ids = new Int32Array(this.maxLength);  // 0 = padding
    words.forEach((w, i) => { ids[i] = this.index.get(w) ?? this.vocab.oov; });
    const labels = Array.from({ length: this.maxLength }, (_, i) => (i < words.length
      ? (ids[i] === this.vocab.oov ? `${words[i]}?` : words[i]) : '<pad>'));
    return { ids, labels, words: words.length };
  }

  /** The attention's z as the Steps view patches it: [1, T, heads, value size] (Keras' value_dim = key_dim). */
  get zShape() { return [1, this.maxLength, HEADS, KEY_DIM]; }

  /**
   * The probability that `text` is positive, with the attention layer's weights [H, T, T] and
   * output [T, 100] (T = maxLength), and the time spent in mha-wasm. With `capture`, also the
   * attention layer's input and its steps (docs/steps.md), for the page's Steps view; `patch`:
   * the attention's patch (Keras' call takes forward's), e.g. zeros in a head's z.
   */
  predict(text, { capture = false, patch = null } = {}) {
    const { ids, labels, words, conv } = this.#features(text);
    const started = performance.now();
    const x = { data: conv, shape: [1, this.maxLength, 100] };
    const { output, scores, captured } = this.#attention.call(x, x, x, { returnAttentionScores: true, ...(capture && { capture: true }), ...(patch && { patch }) });
    const wasmMs = performance.now() - started;
    return { ...this.#classify(output.data), ids, labels, words, weights: scores.data, output: output.data, wasmMs, ...(capture && { input: conv, captured }) };
  }

  /**
   * predict() with the attention layer made by `mha` (e.g. the WebGPU backend's, init({ backend:
   * 'webgpu' })): its KerasMultiHeadAttention with the same weights, through callAsync; the same
   * numbers, capture and patch included.
   */
  async predictAsync(text, mha, { capture = false, patch = null } = {}) {
    if (this.#other?.mha !== mha) {
      this.#other?.layer.dispose();
      const layer = new mha.KerasMultiHeadAttention({ numHeads: HEADS, keyDim: KEY_DIM, queryDim: 100 });
      layer.setWeights(this.#kerasWeights);
      this.#other = { mha, layer };
    }
    const { ids, labels, words, conv } = this.#features(text);
    const started = performance.now();
    const x = { data: conv, shape: [1, this.maxLength, 100] };
    const { output, scores: weights, captured } = await this.#other.layer.callAsync(x, x, x,
      { returnAttentionScores: true, ...(capture && { capture: true }), ...(patch && { patch }) });
    const wasmMs = performance.now() - started;
    return { ...this.#classify(output.data), ids, labels, words, weights: weights.data, output: output.data, wasmMs,
      ...(capture && { input: conv, captured }) };
  }

  /** The attention's input: Embedding, then Conv1D 'same' with kernel 4 (TensorFlow pads 1 step before and 2 after). */
  #features(text) {
    const { ids, labels, words } = this.encode(text);
    const T = this.maxLength, E = 32, F = 100;
    const conv = new Float32Array(T * F);
    for (let t = 0; t < T; t++) {
      for (let f = 0; f < F; f++) {
        let sum = this.convBias[f];
        for (let k = 0; k < 4; k++) {
          const s = t + k - 1;
          if (s < 0 || s >= T) continue;
          const row = ids[s] * E;
          for (let e = 0; e < E; e++) sum += this.embeddings[row + e] * this.convKernel[(k * E + e) * F + f];
        }
        conv[t * F + f] = sum;
      }
    }
    return { ids, labels, words, conv };
  }

  /** Flatten -> Dense(1, sigmoid) on the attention's output. */
  #classify(output) {
    let logit = this.denseBias[0];
    for (let i = 0; i < output.length; i++) logit += output[i] * this.denseKernel[i];
    const probability = 1 / (1 + Math.exp(-logit));
    return { probability, label: probability >= 0.5 ? 'positive' : 'negative' };
  }

  /** Per head, the words the layer attends to most: the mean weight over the sentence's query words. */
  topWords(prediction, count = 3) {
    const { weights, labels, words } = prediction;
    const T = this.maxLength;
    return Array.from({ length: HEADS }, (_, h) => {
      const received = new Float64Array(T);
      for (let i = 0; i < words; i++) for (let j = 0; j < T; j++) received[j] += weights[(h * T + i) * T + j] / words;
      return [...received.keys()].sort((a, b) => received[b] - received[a]).slice(0, count)
        .map((j) => ({ word: labels[j], position: j, weight: received[j] }));
    });
  }

  dispose() {
    this.#attention?.dispose();
    this.#attention = null;
    this.#other?.layer.dispose();
    this.#other = null;
  }
}
