// The demo's default model in JavaScript: a tiny attention-only, character-level Transformer
// trained by tools/train_demo_model.py. Only the attention layers run in mha-wasm; the rest is a
// few lines here:  x = embed(tokens) + positions;  x += attention_l(x) for each layer;  logits = unembed(x).
// Runs in the page's worker and in Node (the parity tests), so it touches no DOM.

/** One token per character, lower-cased, preceded by <bos>; unknown characters become <unk>. */
export function tokenize(text, vocab) {
  const index = new Map(vocab.tokens.map((token, id) => [token, id]));
  const ids = [vocab.bos];
  const labels = [vocab.tokens[vocab.bos]];
  for (const char of vocab.lowercase ? text.toLowerCase() : text) {
    const id = index.get(char) ?? vocab.unk;
    ids.push(id);
    labels.push(id === vocab.unk ? char : vocab.tokens[id]);
  }
  return { ids, labels };
}

/** The Transformer paper's sinusoidal positions [length, dim], computed in float64 like the trainer. */
export function sinusoidalPositions(length, dim) {
  const table = new Float32Array(length * dim);
  for (let pos = 0; pos < length; pos++) {
    for (let i = 0; i < dim; i += 2) {
      const angle = pos * 10000 ** (-i / dim);
      table[pos * dim + i] = Math.sin(angle);
      if (i + 1 < dim) table[pos * dim + i + 1] = Math.cos(angle);
    }
  }
  return table;
}

/** Numerically stable softmax of one logits row, then the k most likely tokens. */
export function topK(logitsRow, tokens, k = 5) {
  const max = logitsRow.reduce((m, v) => Math.max(m, v), -Infinity);
  const exps = logitsRow.map((v) => Math.exp(v - max));
  const total = exps.reduce((s, v) => s + v, 0);
  return [...exps.keys()].sort((a, b) => exps[b] - exps[a]).slice(0, k)
    .map((id) => ({ id, token: tokens[id], probability: exps[id] / total }));
}

/** A weights file's tensor `name`, checked to be F32 of `shape`; errors name the model (`what`). */
export function requireTensor(tensors, name, shape, what = 'demo model') {
  const tensor = tensors[name];
  if (!tensor) throw new TypeError(`${what}: the weights file has no tensor '${name}'`);
  if (tensor.dtype !== 'F32' || tensor.shape.join(',') !== shape.join(',')) {
    throw new RangeError(`${what}: '${name}' must be F32 [${shape}], got ${tensor.dtype} [${tensor.shape}]`);
  }
  return tensor.data;
}

export class DemoModel {
  #layers;

  /**
   * @param mha the loaded package (init())
   * @param {{ tensors, metadata }} weights readSafetensors() of demo-model.safetensors
   * @param vocab the parsed vocab.json
   */
  constructor(mha, weights, vocab) {
    const { tensors, metadata } = weights;
    this.vocab = vocab;
    this.dModel = Number(metadata.dModel);
    this.numHeads = Number(metadata.numHeads);
    this.numLayers = Number(metadata.numLayers);
    const V = vocab.tokens.length;
    const E = this.dModel;
    this.embedding = requireTensor(tensors, 'tok_embed.weight', [V, E]);
    this.unembedWeight = requireTensor(tensors, 'unembed.weight', [V, E]);
    this.unembedBias = requireTensor(tensors, 'unembed.bias', [V]);
    this.#layers = [];
    try {
      for (let l = 0; l < this.numLayers; l++) {
        const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: this.numHeads });
        this.#layers.push(layer);
        const prefix = `layers.${l}.`;
        const stateDict = {};
        for (const key of Object.keys(layer.stateDictShapes())) {
          stateDict[key] = requireTensor(tensors, prefix + key, layer.stateDictShapes()[key]);
        }
        layer.loadStateDict(stateDict);
      }
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /**
   * The same model with its attention layers made by another module, e.g. the WebGPU backend's
   * (init({ backend: 'webgpu' })): the page runs the default model on either.
   */
  copyOn(mha) {
    return new DemoModel(mha, this.weights(), this.vocab);
  }

  /** The weights as readSafetensors() gives demo-model.safetensors' ({ tensors, metadata }), from the layers in use. */
  weights() {
    const V = this.vocab.tokens.length, E = this.dModel;
    const f32 = (data, shape) => ({ dtype: 'F32', shape, data });
    const tensors = {
      'tok_embed.weight': f32(this.embedding, [V, E]),
      'unembed.weight': f32(this.unembedWeight, [V, E]),
      'unembed.bias': f32(this.unembedBias, [V]),
    };
    this.#layers.forEach((layer, l) => {
      const shapes = layer.stateDictShapes();
      for (const [key, data] of Object.entries(layer.stateDict())) tensors[`layers.${l}.${key}`] = f32(data, shapes[key]);
    });
    const metadata = { dModel: String(E), numHeads: String(this.numHeads), numLayers: String(this.numLayers) };
    return { tensors, metadata };
  }

  /** Token embeddings plus positions, [L, E]. */
  embed(ids) {
    const E = this.dModel;
    const x = sinusoidalPositions(ids.length, E);
    ids.forEach((id, pos) => {
      for (let i = 0; i < E; i++) x[pos * E + i] += this.embedding[id * E + i];
    });
    return x;
  }

  /**
   * Runs the model on token ids. Returns per layer the attention weights [H, L, L] and the layer's
   * output [L, E] (before the residual add), the logits [L, V], and the time spent in mha-wasm.
   * With `capture: true` each layer also has `input` [L, E] and `captured`, its attention steps
   * (forward's capture: docs/steps.md). `patches[l]` ({ z, heads }, or absent) is layer l's patch
   * of z: zeros ablate heads, another text's z patches them (then everything after follows).
   */
  forward(ids, options = {}) {
    const x = this.embed(ids);
    const layers = [];
    let wasmMs = 0;
    this.#layers.forEach((layer, l) => {
      const started = performance.now();
      const result = layer.forward({ data: x, shape: [ids.length, this.dModel] }, null, null, this.#options(l, ids.length, options));
      wasmMs += performance.now() - started;
      layers.push(this.#addLayer(x, result, options));
    });
    return { layers, logits: this.unembed(x), wasmMs };
  }

  /**
   * forward() through each layer's forwardAsync: the same result on a wasm model, and the only call
   * of a model made on the WebGPU backend (init({ backend: 'webgpu' }), capture and patches included).
   */
  async forwardAsync(ids, options = {}) {
    const x = this.embed(ids);
    const layers = [];
    let wasmMs = 0;
    for (const [l, layer] of this.#layers.entries()) {
      const started = performance.now();
      const result = await layer.forwardAsync({ data: x, shape: [ids.length, this.dModel] }, null, null, this.#options(l, ids.length, options));
      wasmMs += performance.now() - started;
      layers.push(this.#addLayer(x, result, options));
    }
    return { layers, logits: this.unembed(x), wasmMs };
  }

  /** Layer l's forward options for a text of L tokens. */
  #options(l, L, { keyPaddingMask = null, capture = false, patches = [] }) {
    return {
      causal: true, needWeights: true, averageWeights: false,
      ...(keyPaddingMask && { keyPaddingMask: { data: keyPaddingMask, shape: [L] } }),
      ...(capture && { capture: true }),
      ...(patches[l] && { patch: patches[l] }),
    };
  }

  /** The residual add x += output; returns the layer's entry of forward's `layers`. */
  #addLayer(x, { output, weights, captured }, { capture = false }) {
    const input = capture ? x.slice() : null;
    for (let i = 0; i < x.length; i++) x[i] += output.data[i];
    return { weights: weights?.data ?? null, output: output.data, ...(capture && { input, captured }) };
  }

  /** One KV cache per layer, for generating token by token with step(). */
  createCaches(capacity) {
    return this.#layers.map((layer) => layer.createCache({ capacity }));
  }

  /**
   * Runs token ids through the KV caches (createCaches): they are appended at the caches' next
   * positions, each attending to every cached token before it. Returns the logits [V] for the token
   * after the last one, and with needWeights, per layer the new rows of attention: weights
   * [H, ids.length, cache length] and output [ids.length, E]. Used for a chunked prefill and for
   * one-token generation steps: the work is O(tokens so far) per token, not a pass over the text.
   * With `capture`, each layer also has `input` and `captured`: the new rows' steps against the
   * whole cache (docs/steps.md), for the page's Steps view.
   */
  extend(ids, caches, { needWeights = false, capture = false } = {}) {
    const x = this.#embedAt(ids, caches[0].length);
    const layers = [];
    let wasmMs = 0;
    this.#layers.forEach((layer, l) => {
      const started = performance.now();
      const result = layer.forward({ data: x, shape: [ids.length, this.dModel] }, null, null, this.#cacheOptions(caches[l], needWeights, capture));
      wasmMs += performance.now() - started;
      const entry = this.#addLayer(x, result, { capture });
      if (needWeights) layers.push(entry);
    });
    return { logits: this.unembed(x.subarray((ids.length - 1) * this.dModel)), layers, wasmMs };
  }

  /** extend() through each layer's forwardAsync: the same on wasm, and on WebGPU with its caches (capture included). */
  async extendAsync(ids, caches, { needWeights = false, capture = false } = {}) {
    const x = this.#embedAt(ids, caches[0].length);
    const layers = [];
    let wasmMs = 0;
    for (const [l, layer] of this.#layers.entries()) {
      const started = performance.now();
      const result = await layer.forwardAsync({ data: x, shape: [ids.length, this.dModel] }, null, null, this.#cacheOptions(caches[l], needWeights, capture));
      wasmMs += performance.now() - started;
      const entry = this.#addLayer(x, result, { capture });
      if (needWeights) layers.push(entry);
    }
    return { logits: this.unembed(x.subarray((ids.length - 1) * this.dModel)), layers, wasmMs };
  }

  #cacheOptions(cache, needWeights, capture) {
    return { cache, needWeights, averageWeights: false, ...(capture && { capture: true }) };
  }

  /** Token embeddings plus the positions from `first` on, [ids.length, E], as embed() rounds them. */
  #embedAt(ids, first) {
    const E = this.dModel;
    const x = new Float32Array(ids.length * E);
    ids.forEach((id, t) => {
      // sinusoidalPositions' row first + t, rounded to float32 before the add as embed() does.
      for (let i = 0; i < E; i += 2) {
        const angle = (first + t) * 10000 ** (-i / E);
        x[t * E + i] = Math.fround(Math.sin(angle)) + this.embedding[id * E + i];
        if (i + 1 < E) x[t * E + i + 1] = Math.fround(Math.cos(angle)) + this.embedding[id * E + i + 1];
      }
    });
    return x;
  }

  /** One generation step: extend() with one token; returns the logits [V] for the token after it. */
  step(id, caches) {
    return this.extend([id], caches).logits;
  }

  /** logits [L, V] = x W^T + b. */
  unembed(x) {
    const E = this.dModel;
    const V = this.unembedBias.length;
    const L = x.length / E;
    const logits = new Float32Array(L * V);
    for (let pos = 0; pos < L; pos++) {
      for (let v = 0; v < V; v++) {
        let sum = this.unembedBias[v];
        for (let i = 0; i < E; i++) sum += x[pos * E + i] * this.unembedWeight[v * E + i];
        logits[pos * V + v] = sum;
      }
    }
    return logits;
  }

  dispose() {
    for (const layer of this.#layers) layer.dispose();
    this.#layers = [];
  }
}
