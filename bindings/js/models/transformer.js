// A checkpoint of any family in families/ run through mha-wasm: the family maps its weights into
// one per-layer form, and every layer's attention is the package's MultiHeadAttention with the
// options the architecture's traits give (rotary, window, softcap, scale; on wasm or WebGPU); the
// MLPs, the projections around them and the unembedding run on the package's mha.Linear (weights kept in wasm memory, on the kernels the
// attention projections use), and so do the MLPs' silu / tanh GELU activations (core/mlp-activation.js);
// only norms, residual adds and the exact-erf GELU are JavaScript loops. Every matrix is held in the model's weightDtype (default: the stored
// precision, F32 as f32, F16 / BF16 as f16; or 'int8' / 'q4'): attention layers and Linears of
// that dtype, the Linears given the stored bits as they are (converted in wasm a row at a time, so
// no float32 copy of a 16-bit matrix is made). The embedding rows are read from a Linear too (the
// unembedding's, when tied). The checkpoint's tensors are read a layer at a time (create()) and
// dropped once the layer is built. No DOM: worker and Node.
import { activate, addInto, concat, gated, layerNorm, rmsNorm, softcap } from './elementwise.js';
import { rotaryOf } from './families/common.js';
import { familyOf, withTraits } from './families/index.js';
import { widen } from './tensors.js';
import { valueBiasOutputs } from './value-bias.js';
import { MLP_ACTIVATION, WASM_ACTIVATIONS } from '../core/mlp-activation.js';
import { ROW_NORM } from '../core/row-norm.js';

/** The precision a stored dtype keeps by default. */
export const storedPrecision = (dtype) => (dtype === 'F32' ? 'f32' : 'f16');

/** A weight matrix [out, in] as stored (and its bias or null) as an mha.Linear of `wasm` in `weightDtype`, loaded. */
function linearLayer(wasm, tensor, bias, weightDtype) {
  const [outFeatures, inFeatures] = tensor.shape;
  const layer = new wasm.Linear({ inFeatures, outFeatures, bias: bias !== null, weightDtype });
  try {
    const weightFormat = { F32: 'f32', F16: 'f16', BF16: 'bf16' }[tensor.dtype];
    return layer.loadWeights({ weight: tensor.data, weightFormat, ...(bias ? { bias } : {}) });
  } catch (error) {
    layer.dispose();
    throw error;
  }
}

/** The index of the layer a Hugging Face key belongs to (its first all-digit part), or -1 for the model's own tensors. */
function layerOfKey(key) {
  const part = key.split('.').find((p) => /^\d+$/.test(p));
  return part === undefined ? -1 : Number(part);
}

/** The checkpoint's tensors by the layer they belong to (-1: embeddings, final norm, unembedding). */
function tensorsByLayer(tensors) {
  const groups = new Map();
  for (const tensor of Object.values(tensors)) {
    const l = layerOfKey(tensor.name ?? '');
    if (!groups.has(l)) groups.set(l, []);
    groups.get(l).push(tensor);
  }
  return groups;
}

/** A stored tensor the model keeps after the load (GPT-2's position table, BERT's token types) as a plain { dtype, shape, data }. */
const kept = (tensor) => tensor && { dtype: tensor.dtype, shape: tensor.shape, data: tensor.data };

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

/** The stored tensor of a Hugging Face key, or of the family's alias of it (GPT-2 files may lack the 'transformer.' prefix; bert-base-uncased's name LayerNorm weights gamma / beta), or undefined. */
function lookup(tensors, family, key) {
  if (tensors[key]) return tensors[key];
  if (family.alias && tensors[family.alias(key)]) return tensors[family.alias(key)];
  for (const other of family.aliases?.(key) ?? []) if (tensors[other]) return tensors[other];
  return undefined;
}

/** A checkpoint's tensor by its Hugging Face key (or the family's alias of it). */
function tensorGetter(tensors, family) {
  return (key, shape) => {
    const tensor = lookup(tensors, family, key);
    if (!tensor) throw new TypeError(`loadModel: the weights have no tensor '${key}'`);
    if (shape && tensor.shape.join(',') !== shape.join(',')) {
      throw new RangeError(`loadModel: '${key}' must have shape [${shape}], got [${tensor.shape}]`);
    }
    return tensor;
  };
}

export class CheckpointModel {
  #layers = [];
  #close = null;
  #preNorm = new Map();  // preNormProjection()'s Linears, by `${layer}.${which}`

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
  constructor(attention, wasm, checkpoint, deferLayers = null, { weightDtype = null } = {}) {
    const a = withTraits(checkpoint.architecture);
    this.architecture = a;
    this.dtype = checkpoint.dtype;
    this.family = familyOf(a);
    const get = tensorGetter(checkpoint.tensors, this.family);
    const f32 = (key, shape) => widen(get(key, shape));
    const has = (key) => lookup(checkpoint.tensors, this.family, key) !== undefined;
    /** The precision every matrix is held in: 'f32' | 'f16' | 'int8' | 'q4'. */
    this.weightDtype = weightDtype ?? storedPrecision(this.dtype);
    this.#build = { attention, wasm, get, f32, weightDtype: this.weightDtype };
    this.tensor = get;
    try {
      const parts = this.family.model({ get, f32, has }, a);
      this.positions = kept(parts.positions ?? null);
      this.finalNorm = parts.finalNorm;
      // Encoders: token-type rows, the embeddings' LayerNorm, and the masked-LM head (or none: the file is a bare encoder).
      this.tokenTypes = kept(parts.tokenTypes ?? null);
      this.embedNorm = parts.embedNorm ?? null;
      if (a.encoder) a.mlmHead = parts.mlmHead !== null;
      this.mlmHead = parts.mlmHead ? { ...parts.mlmHead, dense: linearLayer(wasm, parts.mlmHead.dense, parts.mlmHead.denseBias, this.weightDtype) } : null;
      this.unembedding = parts.unembedding ? linearLayer(wasm, parts.unembedding, parts.unembeddingBias ?? null, this.weightDtype) : null;
      // The embedding rows come from a Linear's weight (rows()): the unembedding's when tied, else their own.
      this.embeddingTable = parts.embedding === parts.unembedding && this.unembedding
        ? this.unembedding : linearLayer(wasm, parts.embedding, null, this.weightDtype);
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
  static async create(attention, wasm, checkpoint, { afterLayer = null, weightDtype = null } = {}) {
    // Each group's tensors are read just before the part that needs them, and dropped after it.
    const groups = tensorsByLayer(checkpoint.tensors);
    const withTensors = async (l, build) => {
      const tensors = groups.get(l) ?? [];
      try {
        for (const tensor of tensors) await tensor.load?.();
        return build();
      } finally {
        for (const tensor of tensors) tensor.release?.();
      }
    };
    const model = await withTensors(-1, () => new CheckpointModel(attention, wasm, checkpoint, DEFER_LAYERS, { weightDtype }));
    try {
      for (let l = 0; l < model.numLayers; l++) {
        await withTensors(l, () => model.#addLayer(l));
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
    const layer = this.#layer(attention, wasm, this.family.layer({ get, f32 }, this.architecture, l), l, weightDtype);
    this.#layers.push(layer);
    // (while its tensors are in memory: what attribution needs of them later)
    layer.valueBias = valueBiasOutputs(this.family, this.architecture, (key) => widen(get(key)), l);
  }

  /** The family's per-layer form (families/) as the package's layers: a MultiHeadAttention, norms and mha.Linears. */
  #layer(attention, wasm, spec, l, weightDtype) {
    const a = this.architecture;
    const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D } = a;
    const s = spec.attention;
    const qkvBias = s.qkvBias ?? (s.qBias ? concat([s.qBias, s.kBias, s.vBias]) : null);
    const bias = s.stateDict ? true : qkvBias !== null || s.oBias != null;
    const window = a.layerWindows[l];
    const rotary = rotaryOf(a, l);
    const layer = new attention.MultiHeadAttention({
      embedDim: E, numHeads: H, weightDtype,
      // (the defaults left out: a GPT-2 layer is built as it always was)
      ...(Hkv !== H ? { numKvHeads: Hkv } : {}),
      ...(D * H !== E || Hkv !== H ? { headDim: D } : {}),
      ...(s.stateDict ? {} : { bias }),
      ...(a.qkNorm ? { qkNorm: a.qkNorm } : {}),
      ...(rotary ? { rotary: { dim: rotary.dim, base: rotary.base } } : {}),
      ...(window ? { slidingWindow: window } : {}),
      ...(a.attnSoftcap ? { softcap: a.attnSoftcap } : {}),
      ...(a.attnScale ? { scale: a.attnScale } : {}),
    });
    return disposedOnError(layer, (made) => {
      const shapes = layer.stateDictShapes();
      let stateDict;
      if (s.stateDict) {
        stateDict = s.stateDict(shapes);
      } else {
        stateDict = { 'out_proj.weight': s.o };
        const qkv = s.qkv ?? concat([s.q, s.k, s.v]);
        if ('in_proj_weight' in shapes) {
          stateDict.in_proj_weight = qkv;
        } else {
          const qRows = H * D * E, kvRows = Hkv * D * E;
          Object.assign(stateDict, {
            q_proj_weight: s.q ?? qkv.subarray(0, qRows),
            k_proj_weight: s.k ?? qkv.subarray(qRows, qRows + kvRows),
            v_proj_weight: s.v ?? qkv.subarray(qRows + kvRows),
          });
        }
        if (bias) {
          stateDict.in_proj_bias = qkvBias ?? new Float32Array((H + 2 * Hkv) * D);
          stateDict['out_proj.bias'] = s.oBias ?? new Float32Array(E);  // (o_proj may have none)
        }
        if (a.qkNorm) Object.assign(stateDict, { 'q_norm.weight': s.qNorm, 'k_norm.weight': s.kNorm });
      }
      layer.loadStateDict(stateDict);
      const linear = (part) => {
        if (!part) return null;
        const made1 = linearLayer(wasm, part.tensor, part.bias ?? null, weightDtype);
        made.push(made1);
        return made1;
      };
      const up = linear(spec.up);
      const down = linear(spec.down);
      return {
        attention: layer, norm1: spec.norm1 ?? null, norm2: spec.norm2 ?? null,
        postAttnNorm: spec.postAttnNorm ?? null, postMlpNorm: spec.postMlpNorm ?? null,
        up, down, outBias: spec.outBias ?? s.oBias ?? null,
        qkNorm: a.qkNorm ? { q: s.qNorm, k: s.kNorm } : null,
      };
    });
  }

  get numLayers() { return this.architecture.numLayers; }

  /** Layer l's parts: { attention, norm1, norm2, postAttnNorm, postMlpNorm, up, down, outBias, qkNorm } (read by hooked-forward.js). */
  layer(l) { return this.#layers[l]; }

  /**
   * Layer l's q or k projection (`which`) as an mha.Linear in the model's weightDtype, made on first
   * use and kept: the values before the q/k norms (hook_q, hook_k), which the attention layer never
   * hands out. Its tensor is read from its file again (a streamed load dropped it). Only a model
   * with qkNorm asks; one that never reads those hooks never holds the copy.
   */
  async preNormProjection(l, which) {
    const key = `${l}.${which}`;
    if (!this.#preNorm.has(key)) {
      const keys = this.family.qkProjections(this.architecture, l);
      const tensors = [this.tensor(keys[which]), ...(keys[which + 'Bias'] ? [this.tensor(keys[which + 'Bias'])] : [])];
      try {
        for (const tensor of tensors) await tensor.load?.();
        const bias = tensors[1] ? widen(tensors[1]) : null;
        this.#preNorm.set(key, linearLayer(this.#build.wasm, tensors[0], bias, this.weightDtype));
      } finally {
        for (const tensor of tensors) tensor.release?.();
      }
    }
    return this.#preNorm.get(key);
  }

  /** A stored tensor by its Hugging Face key, widened to float32 (read from its file again: in-memory files, or a Node file loadModel keeps open until dispose()). */
  weight(key) { return widen(this.tensor(key)); }

  /** Layer l's value-bias outputs [H, E] (value-bias.js; zeros where v has no bias). */
  valueBiasOutputs(l) { return this.#layers[l].valueBias; }

  /** Row `id` of the unembedding [V, E] as float32 (in the model's weightDtype): the direction of token id's logit. */
  unembeddingRow(id) {
    return this.unembedding.rows([id]);
  }

  /** A norm's output for rows [rows, E] (LayerNorm with bias, RMSNorm without). */
  normalize(x, norm) { return this.#norm(x, norm); }

  /** x [rows, in] through one of the model's mha.Linears: [rows, out]. */
  product(x, rows, linear) { return this.#product(x, rows, linear); }

  /** What the page reports: { family, numLayers, numHeads, numKvHeads, dtype (stored), weightDtype (held) }. */
  get summary() {
    const { family, numLayers, numHeads, numKvHeads } = this.architecture;
    return { family, numLayers, numHeads, numKvHeads, dtype: this.dtype.toLowerCase(), weightDtype: this.weightDtype };
  }

  /** The rows x [rows, E] through `norm` (x += add first, in place, when given): in wasm SIMD where the module has the kernel. */
  #norm(x, norm, add = null) {
    const kernel = this.#build.wasm[ROW_NORM];
    if (norm !== null && kernel) return kernel(x, this.architecture.embedDim, norm.weight, norm.bias ?? null, this.architecture.normEps, add);
    if (add) addInto(x, add);
    if (norm === null) return Float32Array.from(x);  // (an attention-only model has none)
    const { embedDim: E, normEps } = this.architecture;
    return norm.bias ? layerNorm(x, E, norm.weight, norm.bias, normEps) : rmsNorm(x, E, norm.weight, normEps);
  }

  /** x [rows, in] through an mha.Linear: [rows, out]. */
  #product(x, rows, linear) {
    return linear.forward({ data: x, shape: [rows, linear.config.inFeatures] }).data;
  }

  /** Token embeddings (times the family's embedding scale; plus GPT-2's learned positions from `start`, unless `positions: false`), [L, E]. */
  embed(ids, start = 0, { positions = true } = {}) {
    const { embedDim: E, vocabSize: V, maxPositions } = this.architecture;
    ids.forEach((id, i) => {
      if (!Number.isInteger(id) || id < 0 || id >= V) throw new RangeError(`forward: token id ${id} at ${i} is outside the vocabulary [0, ${V})`);
    });
    const x = this.embeddingTable.rows(Array.from(ids));
    const { embedScale } = this.architecture;
    if (embedScale !== 1) for (let i = 0; i < x.length; i++) x[i] *= embedScale;
    if (this.positions) {
      if (start + ids.length > maxPositions) {
        throw new RangeError(`forward: ${start + ids.length} tokens exceed the model's ${maxPositions} positions (n_positions)`);
      }
      if (positions) addInto(x, this.positionRows(start, ids.length));
    }
    return x;
  }

  /** An encoder's position rows [L, E] for ids: 0..L-1 (BERT), or RoBERTa's padding_idx + 1 + the count of non-pad tokens before, padding_idx for a pad. */
  encoderPositionRows(ids) {
    const { embedDim: E, positionOffset, padTokenId, maxPositions } = this.architecture;
    if (ids.length > maxPositions) throw new RangeError(`forward: ${ids.length} tokens exceed the model's ${maxPositions} positions (max_position_embeddings)`);
    const out = new Float32Array(ids.length * E);
    let count = 0;
    ids.forEach((id, i) => {
      let row = i;
      if (positionOffset > 0) row = id === padTokenId ? padTokenId : padTokenId + 1 + count++;
      widen(this.positions, row * E, (row + 1) * E, out.subarray(i * E, (i + 1) * E));
    });
    return out;
  }

  /** An encoder's token-type rows [L, E] (type 0 everywhere without `types`). */
  tokenTypeRows(types, L) {
    const { embedDim: E, typeVocabSize } = this.architecture;
    const out = new Float32Array(L * E);
    for (let i = 0; i < L; i++) {
      const t = types ? types[i] : 0;
      widen(this.tokenTypes, t * E, (t + 1) * E, out.subarray(i * E, (i + 1) * E));
    }
    return out;
  }

  /** GPT-2's learned position rows [count, E] from `start`. */
  positionRows(start, count) {
    const E = this.architecture.embedDim;
    return widen(this.positions, start * E, (start + count) * E);
  }

  /** The unembedding of residual rows [rows, E] after the final norm: logits [rows, V] (softcapped where the model caps them). */
  unembed(x) {
    const rows = x.length / this.architecture.embedDim;
    return this.unembedNormalized(this.#norm(x, this.finalNorm), rows);
  }

  /** The unembedding of rows the final norm already normalized, then the final logit softcap (Gemma 2). */
  unembedNormalized(normalized, rows) {
    const logits = this.#product(normalized, rows, this.unembedding);
    const cap = this.architecture.finalSoftcap;
    return cap ? softcap(logits, cap) : logits;
  }

  /** The MLP's output [rows, E] for its normalized input rows (its post-norm not applied). */
  mlp(layer, h, rows) {
    const { mlp, hiddenDim: I } = this.architecture;
    const up = this.#product(h, rows, layer.up);
    return this.#product(this.activation(up, rows), rows, layer.down);
  }

  /** The MLP's activation of its up product [rows, I] (gated: [rows, 2I]): in wasm SIMD for silu and tanh GELU, else JavaScript. */
  activation(up, rows) {
    const { mlp, hiddenDim: I } = this.architecture;
    const kernel = this.#build.wasm[MLP_ACTIVATION];
    if (kernel && WASM_ACTIVATIONS.includes(mlp.act)) return kernel(up, rows, I, mlp.act, mlp.gated);
    return mlp.gated ? gated(up, rows, I, mlp.act) : activate(up, mlp.act);
  }

  /**
   * One block on the residual rows x [rows, E] (changed in place) after its attention's output:
   * the post-attention norm, the MLP (reading resid_pre in a parallel block) and its post-norm.
   */
  #block(x, layer, attnOutput, rows) {
    const a = this.architecture;
    const attnOut = layer.postAttnNorm ? this.#norm(attnOutput, layer.postAttnNorm) : attnOutput;
    if (!layer.up) {
      addInto(x, attnOut);
      return;
    }
    // (sequential: the residual add fused into the norm that reads its sum)
    const mlpInput = a.parallelResidual ? this.#norm(x, layer.norm2) : this.#norm(x, layer.norm2, attnOut);
    if (a.parallelResidual) addInto(x, attnOut);
    let mlpOut = this.mlp(layer, mlpInput, rows);
    if (layer.postMlpNorm) mlpOut = this.#norm(mlpOut, layer.postMlpNorm);
    addInto(x, mlpOut);
  }

  /**
   * Runs token ids through the model. Options:
   * - `caches` (createCaches()): the ids are appended to what the caches hold (generation);
   * - `patches[l]`: layer l's patch of z ({ z, heads }: web/z-patch.js; zeros ablate heads);
   * - `capture`: true keeps each layer's attention steps and its input (the Steps view), ['z']
   *   its z [L, H, D] only (the source of a patch);
   * - `captureLayers`: the layers whose steps `capture` keeps (default every layer): every step of
   *   every layer is L × (H × E + …) floats per layer (a 3B model's head results alone, 8 MB a token);
   * - `logits`: 'all' rows (default) or 'last';
   * - `lensPosition`: the token (default the last) whose logit lens is computed after each layer;
   *   `lens: false` computes none (generation's steps);
   * Returns { logits [rows, V], layers: [{ weights [H, L, S], keys (S), output [L, E], input?, captured? }],
   * lens: [numLayers] of [V], attentionMs }. Without caches the steps' shapes are unbatched.
   */
  async forward(ids, options = {}) {
    const { embedDim: E, numHeads: H, numLayers } = this.architecture;
    if (this.architecture.encoder) {
      throw new TypeError(`forward: ${this.architecture.family} is an encoder; the page's views and generation run decoders only (run it through mha-wasm/models' HookedModel: forward, runWithCache, runWithHooks)`);
    }
    const { caches = null, patches = [], capture: captureAsked = false, captureLayers = null, logits = 'all', lens: withLens = true } = options;
    if (captureLayers !== null && !(Array.isArray(captureLayers) && captureLayers.every((l) => Number.isInteger(l) && l >= 0 && l < numLayers))) {
      throw new TypeError(`forward: captureLayers must be an array of layer indexes in [0, ${numLayers}), got ${JSON.stringify(captureLayers)}`);
    }
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
      const capture = captureLayers === null || captureLayers.includes(l) ? captureAsked : false;
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
      this.#block(x, layer, result.output.data, L);
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

  /** `close()` is called once, at dispose(): the checkpoint's files this model may still read. */
  closeWith(close) { this.#close = close; }

  dispose() {
    const close = this.#close;
    this.#close = null;
    close?.()?.catch?.(() => {});  // (a handle that cannot close has nothing left to free)
    for (const { attention, up, down } of this.#layers) {
      attention?.dispose();
      up?.dispose();
      down?.dispose();
    }
    this.#layers = [];
    for (const linear of this.#preNorm.values()) linear.dispose();
    this.#preNorm.clear();
    if (this.embeddingTable !== this.unembedding) this.embeddingTable?.dispose();
    this.embeddingTable = null;
    this.unembedding?.dispose();
    this.unembedding = null;
    this.mlmHead?.dense.dispose();
    this.mlmHead = null;
  }
}
