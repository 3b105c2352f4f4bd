// A GPT-2- or Llama-family checkpoint run through mha-wasm: every layer's attention is the
// package's MultiHeadAttention (on wasm or WebGPU), the MLPs, the projections around them and the
// unembedding run on the package's mha.Linear (weights kept in wasm memory, on the kernels the
// attention projections use); only the O(tokens x width) steps (norms, activations, residual adds)
// are JavaScript loops. Weights stored in 16 bits stay 16-bit: attention layers and Linears with
// weightDtype 'f16' (F16 bits passed as they are; BF16 widened once at load, then rounded to f16
// as the attention layers' are). No DOM: worker and Node.
import { addInto, concat, geluTanh, layerNorm, rmsNorm, swiglu } from './elementwise.js';
import { transposed, widen } from './tensors.js';

/** A weight matrix [out, in] as stored (and its bias or null) as an mha.Linear of `wasm`, loaded. */
function linearLayer(wasm, tensor, bias = null) {
  const [outFeatures, inFeatures] = tensor.shape;
  const weightDtype = tensor.dtype === 'F32' ? 'f32' : 'f16';
  const layer = new wasm.Linear({ inFeatures, outFeatures, bias: bias !== null, weightDtype });
  try {
    return layer.loadWeights({ weight: tensor.dtype === 'BF16' ? widen(tensor) : tensor.data, ...(bias ? { bias } : {}) });
  } catch (error) {
    layer.dispose();
    throw error;
  }
}

/** Rows [rows of out, ...] stacked: Llama's gate and up projections become one product. */
function stacked(tensors) {
  const { dtype } = tensors[0];
  const cols = tensors[0].shape[1];
  const rows = tensors.reduce((sum, t) => sum + t.shape[0], 0);
  const data = new tensors[0].data.constructor(rows * cols);
  let offset = 0;
  for (const t of tensors) {
    data.set(t.data, offset);
    offset += t.data.length;
  }
  return { dtype, shape: [rows, cols], data };
}

/** create()'s constructor call: the layers are added one at a time after it. */
const DEFER_LAYERS = Symbol('layers added by create()');

/** build(made)'s result; the attention layer and the Linears made (`made.push`) are disposed if it throws (a missing or mis-shaped key). */
function disposedOnError(layer, build) {
  const made = [];
  try {
    return build(made);
  } catch (error) {
    for (const owner of [layer, ...made]) owner.dispose();
    throw error;
  }
}

/** A checkpoint's tensor by its Hugging Face key; GPT-2 files may lack the 'transformer.' prefix. */
function tensorGetter(tensors, family) {
  return (key, shape) => {
    const tensor = tensors[key] ?? (family === 'gpt2' ? tensors[key.replace(/^transformer\./, '')] : undefined);
    if (!tensor) throw new TypeError(`loadModel: the weights have no tensor '${key}'`);
    if (shape && tensor.shape.join(',') !== shape.join(',')) {
      throw new RangeError(`loadModel: '${key}' must have shape [${shape}], got [${tensor.shape}]`);
    }
    return tensor;
  };
}

export class CheckpointModel {
  #layers = [];

  /**
   * @param attention the module whose MultiHeadAttention runs the heads (init(), or init({ backend: 'webgpu' }))
   * @param wasm the wasm module whose Linear runs the other products (the same as `attention` on wasm)
   * @param checkpoint readCheckpoint()'s result
   */
  #build;  // what #addLayer reads: { attention, wasm, get, f32, weightDtype }

  /**
   * Builds the whole model at once (see create() for one layer at a time).
   * @param attention the module whose MultiHeadAttention runs the heads (init(), or init({ backend: 'webgpu' }))
   * @param wasm the wasm module whose Linear runs the other products (the same as `attention` on wasm)
   * @param checkpoint readCheckpoint()'s result
   */
  constructor(attention, wasm, checkpoint, deferLayers = null) {
    const a = checkpoint.architecture;
    this.architecture = a;
    this.dtype = checkpoint.dtype;
    const get = tensorGetter(checkpoint.tensors, a.family);
    const f32 = (key, shape) => widen(get(key, shape));
    const E = a.embedDim, V = a.vocabSize;
    this.#build = { attention, wasm, get, f32, weightDtype: this.dtype === 'F32' ? 'f32' : 'f16' };
    this.tensor = get;
    try {
      if (a.family === 'attn-only') {
        // An attention-only model (the demo page's default one): positions given as a table, no
        // norms, an unembedding with a bias.
        this.embedding = get('tok_embed.weight', [V, E]);
        this.positions = get('pos_embed.weight', [a.maxPositions, E]);
        this.finalNorm = null;
        this.unembeddingTensor = get('unembed.weight', [V, E]);
        this.unembedding = linearLayer(wasm, this.unembeddingTensor, f32('unembed.bias', [V]));
      } else if (a.family === 'gpt2') {
        this.embedding = get('transformer.wte.weight', [V, E]);
        this.positions = get('transformer.wpe.weight');
        this.finalNorm = { weight: f32('transformer.ln_f.weight', [E]), bias: f32('transformer.ln_f.bias', [E]) };
      } else {
        this.embedding = get('model.embed_tokens.weight', [V, E]);
        this.finalNorm = { weight: f32('model.norm.weight', [E]) };
      }
      // The stored [V, E] matrix stays beside its Linear: directions read two of its rows.
      this.unembeddingTensor ??= a.tiedUnembedding ? this.embedding : get('lm_head.weight', [V, E]);
      this.unembedding ??= linearLayer(wasm, this.unembeddingTensor);
      if (deferLayers !== DEFER_LAYERS) for (let l = 0; l < a.numLayers; l++) this.#addLayer(l);
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /**
   * The model built one layer at a time: `afterLayer(done, total)` is awaited after each (the
   * worker reports progress there, lets a cancel message in, and throws to stop; the layers made
   * so far are then freed).
   */
  static async create(attention, wasm, checkpoint, { afterLayer = null } = {}) {
    const model = new CheckpointModel(attention, wasm, checkpoint, DEFER_LAYERS);
    try {
      for (let l = 0; l < model.numLayers; l++) {
        model.#addLayer(l);
        await afterLayer?.(l + 1, model.numLayers);
      }
      return model;
    } catch (error) {
      model.dispose();
      throw error;
    }
  }

  #addLayer(l) {
    const { attention, wasm, get, f32, weightDtype } = this.#build;
    const { family } = this.architecture;
    this.#layers.push(family === 'attn-only' ? this.#attentionOnlyLayer(attention, get, f32, l, weightDtype)
      : family === 'gpt2' ? this.#gpt2Layer(attention, wasm, get, f32, l, weightDtype)
        : this.#llamaLayer(attention, wasm, get, f32, l, weightDtype));
  }

  /** An attention-only block: the layer's own state dict under `layers.{l}.`; no norms, no MLP. */
  #attentionOnlyLayer(attention, get, f32, l, weightDtype) {
    const { embedDim: E, numHeads } = this.architecture;
    const layer = new attention.MultiHeadAttention({ embedDim: E, numHeads, weightDtype });
    return disposedOnError(layer, () => {
      const shapes = layer.stateDictShapes();
      layer.loadStateDict(Object.fromEntries(Object.entries(shapes).map(([key, shape]) => [key, f32(`layers.${l}.${key}`, shape)])));
      return { attention: layer, norm1: null, norm2: null, up: null, down: null, outBias: f32(`layers.${l}.out_proj.bias`, [E]) };
    });
  }

  #gpt2Layer(attention, wasm, get, f32, l, weightDtype) {
    const { embedDim: E, numHeads, hiddenDim: I } = this.architecture;
    const p = `transformer.h.${l}.`;
    const layer = new attention.MultiHeadAttention({ embedDim: E, numHeads, weightDtype });
    return disposedOnError(layer, (made) => {
      // Conv1D stores [in, out]; nn.Linear's (and the layer's) layout is [out, in].
      layer.loadStateDict({
        in_proj_weight: widen(transposed(get(p + 'attn.c_attn.weight', [E, 3 * E]))),
        in_proj_bias: f32(p + 'attn.c_attn.bias', [3 * E]),
        'out_proj.weight': widen(transposed(get(p + 'attn.c_proj.weight', [E, E]))),
        'out_proj.bias': f32(p + 'attn.c_proj.bias', [E]),
      });
      const norm1 = { weight: f32(p + 'ln_1.weight', [E]), bias: f32(p + 'ln_1.bias', [E]) };
      const norm2 = { weight: f32(p + 'ln_2.weight', [E]), bias: f32(p + 'ln_2.bias', [E]) };
      const up = linearLayer(wasm, transposed(get(p + 'mlp.c_fc.weight', [E, I])), f32(p + 'mlp.c_fc.bias', [I]));
      made.push(up);
      const down = linearLayer(wasm, transposed(get(p + 'mlp.c_proj.weight', [I, E])), f32(p + 'mlp.c_proj.bias', [E]));
      made.push(down);
      return { attention: layer, norm1, norm2, up, down, outBias: f32(p + 'attn.c_proj.bias', [E]) };
    });
  }

  #llamaLayer(attention, wasm, get, f32, l, weightDtype) {
    const a = this.architecture;
    const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D, hiddenDim: I } = a;
    const p = `model.layers.${l}.`;
    const layer = new attention.MultiHeadAttention({
      embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D, bias: a.attentionBias, weightDtype,
      rotary: { base: a.ropeTheta }, ...(a.slidingWindow ? { slidingWindow: a.slidingWindow } : {}),
    });
    return disposedOnError(layer, (made) => {
      const q = f32(p + 'self_attn.q_proj.weight', [H * D, E]);
      const k = f32(p + 'self_attn.k_proj.weight', [Hkv * D, E]);
      const v = f32(p + 'self_attn.v_proj.weight', [Hkv * D, E]);
      const stateDict = { 'out_proj.weight': f32(p + 'self_attn.o_proj.weight', [E, H * D]) };
      if ('in_proj_weight' in layer.stateDictShapes()) {
        stateDict.in_proj_weight = concat([q, k, v]);
      } else {
        Object.assign(stateDict, { q_proj_weight: q, k_proj_weight: k, v_proj_weight: v });
      }
      if (a.attentionBias) {
        stateDict.in_proj_bias = concat([f32(p + 'self_attn.q_proj.bias', [H * D]),
          f32(p + 'self_attn.k_proj.bias', [Hkv * D]), f32(p + 'self_attn.v_proj.bias', [Hkv * D])]);
        stateDict['out_proj.bias'] = new Float32Array(E); // o_proj has none
      }
      layer.loadStateDict(stateDict);
      const norm1 = { weight: f32(p + 'input_layernorm.weight', [E]) };
      const norm2 = { weight: f32(p + 'post_attention_layernorm.weight', [E]) };
      // gate and up in one product: [2I, E].
      const up = linearLayer(wasm, stacked([get(p + 'mlp.gate_proj.weight', [I, E]), get(p + 'mlp.up_proj.weight', [I, E])]));
      made.push(up);
      const down = linearLayer(wasm, get(p + 'mlp.down_proj.weight', [E, I]));
      made.push(down);
      return { attention: layer, norm1, norm2, up, down, outBias: null }; // o_proj has no bias
    });
  }

  get numLayers() { return this.architecture.numLayers; }

  /** Layer l's parts: { attention, norm1, norm2, up, down } (read by hooked-forward.js). */
  layer(l) { return this.#layers[l]; }

  /** A stored tensor by its Hugging Face key, widened to float32. */
  weight(key) { return widen(this.tensor(key)); }

  /** Row `id` of the unembedding [V, E] as float32: the direction of token id's logit. */
  unembeddingRow(id) {
    const E = this.architecture.embedDim;
    return widen(this.unembeddingTensor, id * E, (id + 1) * E);
  }

  /** A norm's output for rows [rows, E] (LayerNorm with bias, RMSNorm without). */
  normalize(x, norm) { return this.#norm(x, norm); }

  /** x [rows, in] through one of the model's mha.Linears: [rows, out]. */
  product(x, rows, linear) { return this.#product(x, rows, linear); }

  /** What the page reports: { family, numLayers, numHeads, numKvHeads, dtype }. */
  get summary() {
    const { family, numLayers, numHeads, numKvHeads } = this.architecture;
    return { family, numLayers, numHeads, numKvHeads, dtype: this.dtype.toLowerCase() };
  }

  #norm(x, norm) {
    if (norm === null) return Float32Array.from(x);  // (an attention-only model has none)
    const { embedDim: E, normEps } = this.architecture;
    return norm.bias ? layerNorm(x, E, norm.weight, norm.bias, normEps) : rmsNorm(x, E, norm.weight, normEps);
  }

  /** x [rows, in] through an mha.Linear: [rows, out]. */
  #product(x, rows, linear) {
    return linear.forward({ data: x, shape: [rows, linear.config.inFeatures] }).data;
  }

  /** Token embeddings (plus GPT-2's learned positions from `start`, unless `positions: false`), [L, E]. */
  embed(ids, start = 0, { positions = true } = {}) {
    const { embedDim: E, vocabSize: V, maxPositions } = this.architecture;
    const x = new Float32Array(ids.length * E);
    ids.forEach((id, i) => {
      if (!Number.isInteger(id) || id < 0 || id >= V) throw new RangeError(`forward: token id ${id} at ${i} is outside the vocabulary [0, ${V})`);
      widen(this.embedding, id * E, (id + 1) * E, x.subarray(i * E, (i + 1) * E));
    });
    if (this.positions) {
      if (start + ids.length > maxPositions) {
        throw new RangeError(`forward: ${start + ids.length} tokens exceed the model's ${maxPositions} positions (n_positions)`);
      }
      if (positions) addInto(x, this.positionRows(start, ids.length));
    }
    return x;
  }

  /** GPT-2's learned position rows [count, E] from `start`. */
  positionRows(start, count) {
    const E = this.architecture.embedDim;
    return widen(this.positions, start * E, (start + count) * E);
  }

  /** The unembedding of residual rows [rows, E] after the final norm: logits [rows, V]. */
  unembed(x) {
    const rows = x.length / this.architecture.embedDim;
    return this.#product(this.#norm(x, this.finalNorm), rows, this.unembedding);
  }

  /** The MLP's output [rows, E] for its normalized input rows. */
  mlp(layer, h, rows) {
    const { family, hiddenDim: I } = this.architecture;
    if (family === 'gpt2') {
      return this.#product(geluTanh(this.#product(h, rows, layer.up)), rows, layer.down);
    }
    return this.#product(swiglu(this.#product(h, rows, layer.up), rows, I), rows, layer.down);
  }

  /**
   * Runs token ids through the model. Options:
   * - `caches` (createCaches()): the ids are appended to what the caches hold (generation);
   * - `patches[l]`: layer l's patch of z ({ z, heads }: web/z-patch.js; zeros ablate heads);
   * - `capture`: true keeps each layer's attention steps and its input (the Steps view), ['z']
   *   its z [L, H, D] only (the source of a patch);
   * - `logits`: 'all' rows (default) or 'last';
   * - `lensPosition`: the token (default the last) whose logit lens is computed after each layer;
   *   `lens: false` computes none (generation's steps);
   * Returns { logits [rows, V], layers: [{ weights [H, L, S], keys (S), output [L, E], input?, captured? }],
   * lens: [numLayers] of [V], attentionMs }. Without caches the steps' shapes are unbatched.
   */
  async forward(ids, options = {}) {
    const { embedDim: E, numHeads: H, numLayers } = this.architecture;
    const { caches = null, patches = [], capture = false, logits = 'all', lens: withLens = true } = options;
    const L = ids.length;
    if (L < 1) throw new RangeError('forward: ids must hold at least one token');
    const start = caches ? caches[0].length : 0;
    const lensPosition = options.lensPosition ?? L - 1;
    // A cache takes a batch of one; otherwise unbatched [L, E], so the steps come as the Steps view reads them.
    const batch = caches ? [1] : [];
    const x = this.embed(ids, start);
    const layers = [];
    const lensRows = new Float32Array(withLens ? numLayers * E : 0);
    let attentionMs = 0;
    for (let l = 0; l < numLayers; l++) {
      const layer = this.#layers[l];
      const patch = patches[l] ? { heads: patches[l].heads, z: { data: patches[l].z.data, shape: [...batch, L, H, patches[l].z.shape.at(-1)] } } : undefined;
      const input = this.#norm(x, layer.norm1);
      const started = performance.now();
      const result = await layer.attention.forwardAsync({ data: input, shape: [...batch, L, E] }, null, null, {
        ...(caches ? { cache: caches[l] } : { causal: true }),
        needWeights: true, averageWeights: false,
        ...(capture ? { capture } : {}),
        ...(patch ? { patch } : {}),
      });
      attentionMs += performance.now() - started;
      addInto(x, result.output.data);
      if (layer.up) addInto(x, this.mlp(layer, this.#norm(x, layer.norm2), L));
      layers.push({
        weights: result.weights.data, keys: result.weights.shape.at(-1), output: result.output.data,
        ...(capture === true ? { input, captured: result.captured } : {}),
        ...(capture ? { z: result.captured.z.data } : {}),
      });
      if (withLens) lensRows.set(x.subarray(lensPosition * E, (lensPosition + 1) * E), l * E);
    }
    // One product for the lens rows and the logits' rows: the unembedding is read once.
    const rows = logits === 'last' ? x.subarray((L - 1) * E) : x;
    const all = this.unembed(withLens ? concat([lensRows, rows]) : rows);
    const V = this.architecture.vocabSize;
    const lens = withLens ? Array.from({ length: numLayers }, (_, l) => all.slice(l * V, (l + 1) * V)) : [];
    return { logits: withLens ? all.subarray(numLayers * V) : all, layers, lens, attentionMs };
  }

  /** One KV cache per layer, for `capacity` tokens. */
  createCaches(capacity) {
    return this.#layers.map(({ attention }) => attention.createCache({ batch: 1, capacity }));
  }

  dispose() {
    for (const { attention, up, down } of this.#layers) {
      attention?.dispose();
      up?.dispose();
      down?.dispose();
    }
    this.#layers = [];
    this.unembedding?.dispose();
    this.unembedding = null;
  }
}
