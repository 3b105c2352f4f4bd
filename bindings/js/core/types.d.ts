// Types of the core room (bindings/js/core/): the wasm layer MultiHeadAttention, its config,
// forward options and results (masks, KV caches, capture / patch steps, gradients), quantized
// weights, linear layers (mha.Linear) and their gradients. index.d.ts re-exports them all.
/// <reference lib="esnext.disposable" />

/** A dense row-major tensor. `data.length` must equal the product of `shape`. */
export interface Tensor<T extends ArrayLike<number | bigint | boolean> = Float32Array> {
  /** The elements, row-major (last dimension fastest). */
  data: T;
  /** Dimensions, outermost first, e.g. [B, L, E]. */
  shape: number[];
}

/**
 * The typed array a layer computes in, takes and returns: Float32Array, or Float64Array for a layer
 * of `dtype: 'float64'` ({@link AttentionConfig.dtype}).
 */
export type LayerArray = Float32Array | Float64Array;

/**
 * `Float16Array` where the TypeScript lib declares it (`lib: ["esnext"]`), else `never`: a float32
 * layer takes Float16Array query, key and value where the runtime has them (Chromium), computes in
 * float32 and returns Float16Array results (docs/api.md, "Float16Array inputs").
 */
export type HalfArray = typeof globalThis extends {
  /** The runtime's Float16Array constructor, where the lib declares one. */
  Float16Array: {
    /** Its instances' type. */
    prototype: infer A;
  };
} ? A : never;

/** The data of a bool mask: any integer typed array (nonzero = true) or a plain `boolean[]`. */
export type BoolMaskData =
  | Uint8Array | Uint8ClampedArray | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigInt64Array | BigUint64Array | boolean[];

/**
 * The data of a float mask, added to the scores: `Float32Array`, or `Float64Array` (rounded to
 * float32; a float64 layer keeps it, and widens a Float32Array), or a Float16Array where the runtime has one.
 */
export type FloatMaskData = Float32Array | Float64Array;

/**
 * A mask. Bool data ({@link BoolMaskData}) is true = blocked / ignored (PyTorch's meaning); float
 * data ({@link FloatMaskData}) is added to the attention scores before the softmax (`-Infinity`
 * blocks). Data other than `Uint8Array` and `Float32Array` is converted once per call.
 */
export type Mask = Tensor<BoolMaskData> | Tensor<FloatMaskData>;

/**
 * Rotary position embedding on q and k after projection (Hugging Face apply_rotary_pos_emb,
 * ONNX RotaryEmbedding-23). Positions are 0-based token indices (or ForwardOptions.positions).
 */
export interface RotaryConfig {
  /** Features of each head that rotate, from the first: even, <= headDim (less = partial rotary). Default headDim. */
  dim?: number;
  /** Frequency base: inv_freq_t = base^(-2t/dim). Default 10000. */
  base?: number;
  /** true: rotate adjacent pairs (GPT-J); false: rotate halves (GPT-NeoX, Llama rotate_half). Default false. */
  interleaved?: boolean;
}

/**
 * RMSNorm of the projected q and k, before rotary (Qwen3 and Gemma 3 per head, OLMo-2 over the
 * whole projection): x / sqrt(mean(x²) + eps) · w, with state-dict entries `q_norm.weight` and
 * `k_norm.weight` ([headDim] each per head; [numHeads · headDim] and [numKvHeads · headDim] over
 * the projection), ones from initialize(). Gemma's (1 + w) form is this one with w + 1 loaded.
 * Forward only: a training call (grad) is refused, as are staticK, addBiasKv and addZeroAttn.
 */
export interface QkNormConfig {
  /** 'head': the mean over each head's headDim features; 'projection': over the whole q (or k) row. */
  over: 'head' | 'projection';
  /** Added to the mean of squares. Default 1e-6. */
  eps?: number;
}

/**
 * How a layer stores its four projection matrices (docs/quantized.md): float32; IEEE half
 * precision; int8 with one scale per output feature; or 4 bits in blocks of 32 input features
 * with one scale per block (ggml q4_0's arithmetic, onnxruntime MatMulNBits' layout). Biases,
 * sinks and everything else stay float32.
 */
export type WeightDtype = 'f32' | 'f16' | 'int8' | 'q4';

/** The layer's hyperparameters, named after nn.MultiheadAttention's (embed_dim -> embedDim, ...). */
export interface AttentionConfig {
  /** E: the query's feature size (and the output's, unless outputDim is given). */
  embedDim: number;
  /** H: number of heads; must divide embedDim unless headDim is given. */
  numHeads: number;
  /** Key feature size (default embedDim). */
  kdim?: number;
  /** Value feature size (default embedDim). */
  vdim?: number;
  /** in_proj_bias and out_proj.bias (default true). */
  bias?: boolean;
  /** Key/value heads for grouped-query (or multi-query, 1) attention; must divide numHeads (default numHeads). */
  numKvHeads?: number;
  /** Softmax scale (default 1 / sqrt(headDim)). */
  scale?: number;
  /** Query/key head size (Keras key_dim; default embedDim / numHeads). q_proj has numHeads * headDim rows. */
  headDim?: number;
  /** Value head size (Keras value_dim; default headDim). out_proj.weight is [outputDim, numHeads * valueHeadDim]. */
  valueHeadDim?: number;
  /** Output feature size (Keras output_shape; default embedDim). */
  outputDim?: number;
  /** Rotary position embedding on q and k; `true` or `{}`: the whole head, base 10000. */
  rotary?: RotaryConfig | true;
  /** q/k norms between the projections and rotary: {@link QkNormConfig}. Both backends. */
  qkNorm?: QkNormConfig;
  /**
   * Sliding window of W keys: with causal, query i sees keys i-W+1 .. i (Mistral, FlashAttention
   * window_size=(W-1, 0)); without, keys with |i - j| < W (Keras). Keys outside are skipped, not just masked.
   */
  slidingWindow?: number;
  /** ALiBi with BLOOM's slopes: adds -slope_h * |i - j| to head h's scaled scores. */
  alibi?: boolean;
  /** ALiBi with these slopes, one per head (implies alibi). */
  alibiSlopes?: Float32Array | number[];
  /** Soft-capping (Gemma 2): scaled scores become softcap * tanh(scores / softcap), before masks and ALiBi. */
  softcap?: number;
  /** A learned sink logit per head joins each softmax's denominator (gpt-oss); state-dict entry `sinks` [numHeads]. */
  sinks?: boolean;
  /**
   * Gated attention (Qwen3-Next's attn_output_gate, Keras' use_gate): each head's output times
   * sigmoid(query W_gate^T + b_gate) before out_proj; state-dict entries `gate_proj.weight`
   * [numHeads * valueHeadDim, embedDim] and, with bias, `gate_proj.bias`.
   */
  gate?: boolean;
  /**
   * Attention dropout probability in [0, 1) (PyTorch's and Keras' `dropout`), applied to the
   * probabilities in calls with `training: true` only, the kept ones scaled by 1 / (1 - p). Default 0.
   */
  dropout?: number;
  /**
   * Where the layer's dropout seeds start: a training call without its own `seed` takes the next
   * one (0 to 2^53 - 1). Default: a random start, so unseeded runs differ (as PyTorch's).
   */
  seed?: number;
  /**
   * How loadStateDict stores the projection weights (default 'f32'): 'f16', 'int8' or 'q4' read a
   * half, a quarter or about an eighth of the bytes per decode step. stateDict() returns them
   * dequantized; backward gives input gradients only. @see {@link WeightDtype}
   */
  weightDtype?: WeightDtype;
  /**
   * Batched tensors are [B, L, features] (the default, true), or with false PyTorch's default
   * batch_first=False layout: query, key, value, output and dOut [L, B, features] (masks and
   * attention weights keep their shapes). Both backends.
   */
  batchFirst?: boolean;
  /**
   * PyTorch's add_bias_kv: learned rows bias_k / bias_v ([1, 1, E] state-dict entries) appended
   * to every sequence's keys and values. Not with causal, a cache or capture. Both backends.
   */
  addBiasKv?: boolean;
  /** PyTorch's add_zero_attn: a zero key and value row appended (after bias_k / bias_v). Both backends. */
  addZeroAttn?: boolean;
  /**
   * PyTorch's dtype: 'float32' (the default) or 'float64', a layer that takes, computes in and
   * returns Float64Array (weights, tensors, masks, results and gradients), with nn.MultiheadAttention's
   * own options only: the variants, weightDtype, dropout, caches, capture / patch and ragged
   * batches are refused by name. wasm only: WebGPU refuses it (WGSL has no f64). docs/api.md, "float64 layers".
   */
  dtype?: Dtype;
}

/** What a layer computes in: {@link AttentionConfig.dtype}. */
export type Dtype = 'float32' | 'float64';

/** The configuration with every default filled in; the variants appear only when the layer has them. */
export interface ResolvedConfig {
  /** E, the query's feature size. */
  embedDim: number;
  /** H, the number of query heads. */
  numHeads: number;
  /** The key's feature size. */
  kdim: number;
  /** The value's feature size. */
  vdim: number;
  /** Whether the projections have biases. */
  bias: boolean;
  /** Key/value heads (numHeads unless grouped-query). */
  numKvHeads: number;
  /** Query/key head size. */
  headDim: number;
  /** The softmax scale in use. */
  scale: number;
  /** Value head size. */
  valueHeadDim: number;
  /** The output's feature size. */
  outputDim: number;
  /** The q/k norms, eps filled in (absent without them). */
  qkNorm?: Required<QkNormConfig>;
  /** Rotary settings, every default filled in (absent without rotary). */
  rotary?: Required<RotaryConfig>;
  /** The sliding window W (absent without one). */
  slidingWindow?: number;
  /** The slopes in use (BLOOM's when the config said alibi: true). */
  alibiSlopes?: number[];
  /** The soft-capping value (absent without softcap). */
  softcap?: number;
  /** Present (true) when the layer has attention sinks. */
  sinks?: true;
  /** Present (true) when the layer has the output gate. */
  gate?: true;
  /** Present when the layer has dropout. */
  dropout?: number;
  /** How loadStateDict stores the projection weights: present when not 'f32' (as the other options). */
  weightDtype?: WeightDtype;
  /** Present (false) when batched tensors are sequence-first [L, B, features]. */
  batchFirst?: false;
  /** Present (true) with PyTorch's add_bias_kv. */
  addBiasKv?: true;
  /** Present (true) with PyTorch's add_zero_attn. */
  addZeroAttn?: true;
  /** Present ('float64') for a float64 layer. */
  dtype?: 'float64';
}

/** Options of {@link MultiHeadAttention.forward}; every one is optional. */
export interface ForwardOptions {
  /** Query i may not attend to keys j > i (top-left aligned, as PyTorch's is_causal). Default false. */
  causal?: boolean;
  /** [B, S] ([S] for unbatched input). Bool: true = this key is padding, ignore it. Float: added. */
  keyPaddingMask?: Mask;
  /** [L, S], or [B*numHeads, L, S] ([numHeads, L, S] unbatched). Bool: true = blocked. Float: added. */
  attnMask?: Mask;
  /**
   * Also return the attention probabilities. Default false (faster, less memory), unlike PyTorch's
   * need_weights (default true). With `needWeights: true` the result's `weights` is typed non-null.
   */
  needWeights?: boolean;
  /** With needWeights: average over heads ([B, L, S]) instead of per head ([B, H, L, S]). Default true. */
  averageWeights?: boolean;
  /**
   * Rotary layers, self-attention: each token's position, [B, L] ([L] unbatched), e.g. for
   * left-padded batches. Default: token i is at position i.
   */
  positions?: Tensor<Int32Array>;
  /**
   * Write the output into this caller-owned Float32Array (a float64 layer's: Float64Array; exactly
   * the output's element count) instead of a fresh one: a loop that reuses its buffers allocates
   * nothing per call and, in Node, pays no page faults for a new array. The result's `output.data`
   * is this array.
   */
  out?: LayerArray;
  /** The same for the weights (with needWeights: true). */
  weightsOut?: LayerArray;
  /**
   * A KV cache of this layer (decoding). Self-attention cache: pass key = value = null; the call's
   * L tokens are appended and query i (at position cache.length + i) attends to every cached key
   * up to its own position (causal implied; `causal: false` is an error). Cross cache (filled by
   * setKeyValue): the query attends to its keys, nothing is appended. Masks then cover the
   * cache: keyPaddingMask [B, cache length after the call], attnMask [L, that length].
   */
  cache?: KvCache;
  /**
   * Check every element of query, key, value and the float masks before running, and throw a
   * RangeError naming the first NaN or Infinity (tensor, flat index, index per dimension). A float
   * mask's -Infinity is allowed. Default false: a non-finite unmasked input spreads to its batch
   * item's whole output (docs/api.md, "NaN and Infinity in the inputs").
   */
  checkFinite?: boolean;
  /**
   * Keep what {@link TrainingResult.backward} needs (the result then has `backward` and
   * `release`). Not with `cache`, `out` or `weightsOut`. Default false.
   */
  grad?: boolean;
  /** Apply the layer's dropout (config `dropout`) in this call. Default false (inference). */
  training?: boolean;
  /** Dropout's seed for this call (0 to 2^53 - 1); default: the layer's next seed. Same seed, same mask. */
  seed?: number;
  /** With needWeights under dropout: the probabilities before dropout (Keras) instead of after (PyTorch). */
  weightsBeforeDropout?: boolean;
  /**
   * PyTorch's static_k: per-head keys [B*numKvHeads, S, headDim] replacing the key projection
   * (key is still given, S long). Constants for backward. A float64 layer's are Float64Array. Both backends.
   */
  staticK?: Tensor<LayerArray>;
  /** PyTorch's static_v: per-head values [B*numKvHeads, S, valueHeadDim] replacing the value projection. Both backends. */
  staticV?: Tensor<LayerArray>;
  /**
   * Record the attention's intermediate steps (docs/steps.md): `true` for all of them, or a list
   * of step names. The result's `captured` then holds each as a tensor. The call takes a slower,
   * step-by-step path (calls without `capture` or `patch` are unchanged); the captured steps
   * count against the same memory budget as the rest of the call. With `grad`, the
   * {@link TrainingResult} has `captured` too.
   */
  capture?: true | false | readonly StepName[];
  /**
   * Replace one step's values for some heads and recompute everything after it: `{ z: tensor,
   * heads: [1] }` (docs/steps.md). The tensor has the step's captured shape; only the listed heads'
   * values are taken (all heads when `heads` is left out; for `k` and `v` they are key/value
   * heads). With `capture`, each captured step holds what flowed: the patched values from the
   * patched step on. Zeros in `z` ablate a head; a `z` captured from another input is activation
   * patching. With `grad: true` the gradients flow through the patched graph: the patched tensor
   * is a constant (its heads pass no gradient back); a `pattern` patch is then refused (the
   * backward pass recomputes the softmax from q and k).
   */
  patch?: StepPatch;
}

/**
 * The attention's steps, in the order they are computed (B batch, H heads, Hkv key/value heads,
 * L queries, S keys, Dh / Dv head sizes; no B for unbatched input):
 * - `q` [B, H, L, Dh], `k` [B, Hkv, S, Dh], `v` [B, Hkv, S, Dv]: projected, bias added, rotated (rotary);
 * - `scores` [B, H, L, S]: scale * q.k, before any mask or variant;
 * - `logits` [B, H, L, S]: what softmax sees: softcap, ALiBi, masks added (-Infinity where blocked);
 * - `pattern` [B, H, L, S]: the softmax (a fully blocked row is 0), before dropout;
 * - `z` [B, L, H, Dv]: each head's weighted sum of v, the layout before concatenation;
 * - `gate` [B, L, H, Dv]: only in a layer with `gate: true`: the output gate, sigmoid of the
 *   query's gate projection, which multiplies `z` before out_proj;
 * - `result` [B, L, H, outputDim]: each head's share of out_proj (of z times the gate with a
 *   gate), without bias (their sum plus the bias is the output).
 */
export type StepName = 'q' | 'k' | 'v' | 'scores' | 'logits' | 'pattern' | 'z' | 'gate' | 'result';

/** The steps {@link ForwardOptions.patch} can replace: those a later step reads. */
export type PatchableStep = 'q' | 'k' | 'v' | 'pattern' | 'z' | 'gate';

/**
 * {@link ForwardOptions.patch}: exactly one of `q`, `k`, `v`, `pattern`, `z`, `gate` (a {@link PatchableStep}),
 * with the step's captured shape, and the heads to take from it.
 */
export interface StepPatch {
  /** Replaces the projected (and rotated) queries, [B, H, L, Dh]. */
  q?: Tensor<Float32Array>;
  /** Replaces the keys, [B, Hkv, S, Dh] (with a cache: the whole cache's; the cache keeps its own). */
  k?: Tensor<Float32Array>;
  /** Replaces the values, [B, Hkv, S, Dv] (with a cache: as for `k`). */
  v?: Tensor<Float32Array>;
  /** Replaces the softmax, [B, H, L, S] (taken as given: rows need not sum to 1). */
  pattern?: Tensor<Float32Array>;
  /** Replaces each head's weighted sum of v, [B, L, H, Dv]; zeros ablate a head. */
  z?: Tensor<Float32Array>;
  /** Replaces the output gate (a layer with `gate: true`), [B, L, H, Dv]; zeros ablate a head. */
  gate?: Tensor<Float32Array>;
  /** The heads whose values are replaced (key/value heads for `k` and `v`); default all. */
  heads?: readonly number[];
}

/**
 * The captured steps of a call: `capture: true` gives all of them, a list just those. `A`: their
 * array, Float32Array, or {@link HalfArray} for a call on Float16Array inputs.
 */
export type CapturedSteps<N extends StepName = StepName, A extends ArrayLike<number> = Float32Array> = { [S in N]: Tensor<A> };

/** What `capture: true` gives: every step, `gate` only in a layer with the output gate. */
export type AllCapturedSteps<A extends ArrayLike<number> = Float32Array> =
  CapturedSteps<Exclude<StepName, 'gate'>, A> & Partial<CapturedSteps<'gate', A>>;

/** The type of {@link ForwardResult.captured} for options `O` (and results of array `A`). */
export type CapturedIf<O, A extends ArrayLike<number> = Float32Array> = O extends Record<'capture', true> ? AllCapturedSteps<A>
  : O extends Record<'capture', readonly (infer N extends StepName)[]> ? CapturedSteps<N, A>
  : Partial<CapturedSteps<StepName, A>> | undefined;

/** {@link ForwardOptions} of a call that keeps its state for a backward pass. */
export interface GradForwardOptions extends ForwardOptions {
  grad: true;
  cache?: undefined;
  out?: undefined;
  weightsOut?: undefined;
}

/** Gradients of a loss, from {@link TrainingResult.backward}: `A` Float32Array, or a float64 layer's Float64Array. */
export interface Gradients<A extends LayerArray = Float32Array> {
  /** dLoss/dQuery, the query's shape. In self-attention (key = value = null) the sum of its three uses. */
  query: Tensor<A>;
  /** dLoss/dKey, or null when forward got key = null. */
  key: Tensor<A> | null;
  /** dLoss/dValue, or null when forward got value = null. */
  value: Tensor<A> | null;
  /**
   * dLoss/d each parameter, keyed and sized exactly as the layer's stateDictShapes() (sinks included).
   * @throws {TypeError} on reading it, for a layer with quantized weights (they have no parameter
   *   gradients: train a weightDtype 'f32' layer and quantize its state dict).
   */
  params: Record<string, A>;
}

/** What {@link MultiHeadAttention.forward} returns with `grad: true` (`A`: the layer's {@link LayerArray}). */
export interface TrainingResult<O extends ForwardOptions = ForwardOptions, A extends LayerArray = Float32Array> extends ForwardResult<O, A> {
  /**
   * dLoss/d(inputs, parameters) given dLoss/dOutput (`dOut`, the output's shape). Call once.
   * @throws {Error} when called twice, after release() or after the layer's dispose();
   *   {TypeError | RangeError} for a dOut of the wrong kind or size.
   */
  backward(dOut: Tensor<A>): Gradients<A>;
  /**
   * {@link TrainingResult.backward} as a promise, for code written once for every backend: the same
   * gradients, or a rejection with backward's error named 'backwardAsync: ...'.
   */
  backwardAsync(dOut: Tensor<A>): Promise<Gradients<A>>;
  /** Frees what forward kept, without a backward (a no-op after backward). */
  release(): void;
  /** True once backward() or release() ran. */
  readonly released: boolean;
}

/**
 * A ragged batch (PyTorch's nested tensors, FlashAttention's variable-length batches): sequences of
 * different lengths packed one after another without padding, `shape` [totalTokens, width] with
 * `lengths` (positive integers) summing to totalTokens. docs/api.md, "Ragged batches".
 */
export interface RaggedTensor<T extends ArrayLike<number> = Float32Array> extends Tensor<T> {
  /** Each sequence's length, in order. */
  lengths: Int32Array | number[];
}

/** A packed result of a ragged call: [totalTokens, width], with the lengths it was given. */
export interface RaggedResultTensor extends Tensor<Float32Array> {
  /** Each sequence's length, in order (a copy of the call's). */
  lengths: Int32Array;
}

/**
 * {@link ForwardOptions} of a ragged call: every option applies per sequence, but `attnMask` is a
 * list (one [L_i, S_i] or [numHeads, L_i, S_i] mask per sequence) and `positions` is packed
 * [totalTokens], and `cache` a list (one per sequence); a padding mask, out buffers, patches and static
 * keys/values are refused.
 */
export interface RaggedForwardOptions extends Omit<ForwardOptions, 'attnMask' | 'positions' | 'keyPaddingMask' | 'cache' | 'out'
  | 'weightsOut' | 'patch' | 'staticK' | 'staticV'> {
  /** One mask per sequence, [L_i, S_i] or [numHeads, L_i, S_i] each (true = blocked, or added to the scores). */
  attnMask?: Mask[];
  /** Rotary positions packed as the query, `{ data: Int32Array, shape: [totalTokens] }`. */
  positions?: Tensor<Int32Array>;
  /** Refused: ragged inputs need no padding mask. */
  keyPaddingMask?: undefined;
  /** One cache per sequence (each from createCache(), batch 1): a ragged prefill, then ragged one-token steps. */
  cache?: KvCache[];
  /** Refused: the joined output has its own buffer. */
  out?: undefined;
  /** Refused: the weights are one tensor per sequence. */
  weightsOut?: undefined;
  /** Refused: patch each sequence's call. */
  patch?: undefined;
  /** Refused: static keys are per batch row. */
  staticK?: undefined;
  /** Refused: static values are per batch row. */
  staticV?: undefined;
}

/** What a ragged forward call returns: the output packed as the query; weights and captured steps per sequence. */
export interface RaggedForwardResult {
  /** [totalTokens, outputDim], with the query's lengths (as an Int32Array). */
  output: RaggedResultTensor;
  /** One [L_i, S_i] (or [H, L_i, S_i]) tensor per sequence with needWeights; null without. */
  weights: Tensor<Float32Array>[] | null;
  /** With capture: one record of captured steps per sequence. */
  captured?: Partial<CapturedSteps>[];
}

/** Gradients of a ragged call: the inputs' packed as they were, the parameters' summed over the sequences. */
export interface RaggedGradients {
  /** dLoss/dQuery, packed as the query [totalTokens, E] (in self-attention the sum of its three uses). */
  query: RaggedResultTensor;
  /** dLoss/dKey packed as the key, or null when forward got key = null. */
  key: RaggedResultTensor | null;
  /** dLoss/dValue packed as the value, or null when forward got value = null. */
  value: RaggedResultTensor | null;
  /**
   * dLoss/d each parameter, summed over the sequences, keyed as the layer's stateDictShapes().
   * @throws {TypeError} on reading it, for a layer with quantized weights (see {@link Gradients.params}).
   */
  params: Record<string, Float32Array>;
}

/** A ragged call's result with `grad: true`: backward takes dOut packed as the output. */
export interface RaggedTrainingResult extends RaggedForwardResult {
  /**
   * dLoss/d(inputs, parameters) given dLoss/dOutput packed as the output ([totalTokens, E]). Call once.
   * @throws {TypeError | RangeError} for a dOut of the wrong kind or size; {Error} as {@link TrainingResult.backward}.
   */
  backward(dOut: Tensor<Float32Array>): RaggedGradients;
  /** {@link RaggedTrainingResult.backward} as a promise (the WebGPU layer's form). */
  backwardAsync(dOut: Tensor<Float32Array>): Promise<RaggedGradients>;
  /** Frees what forward kept for every sequence, without a backward. */
  release(): void;
  /** True once backward() or release() ran for every sequence. */
  readonly released: boolean;
}

/** Options of {@link MultiHeadAttention.initialize}. */
export interface InitializeOptions {
  /** 0 to 2^32 - 1 (default 0): the same seed gives the same weights in every build. */
  seed?: number;
}

/** Options of {@link MultiHeadAttention.createCache}. */
export interface CreateCacheOptions {
  /** Batch rows (default 1); every forward with the cache must have this batch. */
  batch?: number;
  /** The most tokens it holds; its memory is taken at creation. Appending past it is a RangeError. */
  capacity: number;
  /** 'f32' (default) or 'f16': half the memory and half the bytes each step reads (converted on append). */
  dtype?: 'f32' | 'f16';
}

/** A layer's KV cache in wasm memory (see {@link MultiHeadAttention.createCache}). */
export interface KvCache {
  /** Tokens held (per batch row). */
  readonly length: number;
  /** The most tokens it can hold, fixed at creation. */
  readonly capacity: number;
  /** Batch rows; every forward with the cache must have this batch. */
  readonly batch: number;
  /** The element type the keys and values are stored in. */
  readonly dtype: 'f32' | 'f16';
  /** batch x numKvHeads x capacity x (headDim + valueHeadDim) x 4 bytes (2 for f16). */
  readonly byteSize: number;
  /** 'none' (empty), 'self' (forward appends) or 'cross' (setKeyValue filled it). */
  readonly kind: 'none' | 'self' | 'cross';
  /** False once disposed, directly or by its layer's dispose(). */
  readonly alive: boolean;
  /** Keep the first n tokens (undo a rejected draft; edit the prompt's tail). @throws {RangeError} n > length */
  truncate(n: number): this;
  /** Length 0 and no kind; the memory stays. */
  reset(): this;
  /** Cross-attention: project key [B, S, kdim] / value [B, S, vdim] into the cache once. */
  setKeyValue(key: Tensor, value: Tensor): this;
  /** Frees its memory (the layer's dispose() does too). */
  dispose(): void;
  /** The same as dispose(), for `using` declarations. */
  [Symbol.dispose](): void;
}

/**
 * A result's optional tensor, typed by the call's options `O`: a tensor when `O` sets the flag
 * `Flag` to true, null when it sets it false or leaves it out, either when that is only known at
 * run time (a boolean variable).
 */
export type TensorIf<O, Flag extends string, A extends ArrayLike<number> = Float32Array> = O extends { [K in Flag]: true } ? Tensor<A>
  // (the index signature keeps the second test from failing TypeScript's weak-type check on
  // options that leave the flag out, e.g. { causal: true })
  : O extends { [K in Flag]?: false } & Record<string, unknown> ? null : Tensor<A> | null;

/**
 * What {@link MultiHeadAttention.forward} returns; `O` is the options' type, so that a call with
 * `needWeights: true` has non-null `weights`; `A` the results' array: Float32Array, a float64
 * layer's Float64Array, or {@link HalfArray} for Float16Array inputs.
 */
export interface ForwardResult<O extends ForwardOptions = ForwardOptions, A extends ArrayLike<number> = Float32Array> {
  /** [B, L, outputDim], or [L, outputDim] for unbatched input. A copy the caller owns. */
  output: Tensor<A>;
  /**
   * The softmax probabilities, [B, H, L, S] or averaged [B, L, S] (no B for unbatched input);
   * null unless needWeights. A query row whose every key is masked gets zero weights (PyTorch: NaN).
   */
  weights: TensorIf<O, 'needWeights', A>;
  /** With {@link ForwardOptions.capture}: each captured step (docs/steps.md); absent otherwise. */
  captured: CapturedIf<O, A>;
}

/**
 * A PyTorch `nn.MultiheadAttention` state dict with Float32Array values (a float64 layer's:
 * Float64Array): `in_proj_weight` or `q_proj_weight`/`k_proj_weight`/`v_proj_weight`,
 * `in_proj_bias`, `out_proj.weight`, `out_proj.bias` (and `sinks` for a layer with sinks).
 * `stateDictShapes()` lists the keys and shapes a layer takes.
 */
export type StateDict<A extends LayerArray = Float32Array> = Record<string, A> | Map<string, A>;

/**
 * A projection matrix [out, in] already quantized, in the canonical layout of its dtype
 * (docs/quantized.md; row = output feature, column = input feature):
 * - 'int8': data Int8Array [out][in], scales Float32Array [out]; w = q * scale;
 * - 'q4': data Uint8Array [out][ceil(in/32)][16] (element j of a block in byte j/2, the low nibble
 *   for even j: MatMulNBits' B), scales Float32Array [out][ceil(in/32)], zeroPoints optional
 *   Uint8Array [out][ceil(ceil(in/32)/2)] (two 4-bit values per byte, low first; default 8);
 *   w = (q - zeroPoint) * scale;
 * - 'f16': data Uint16Array [out][in] of IEEE binary16 bits.
 */
export interface QuantizedTensor {
  /** The format. */
  dtype: 'int8' | 'q4' | 'f16';
  /** int8: Int8Array [out][in]; q4: Uint8Array [out][ceil(in/32)][16]; f16: Uint16Array [out][in]. */
  data: Int8Array | Uint8Array | Uint16Array;
  /** int8: [out]; q4: [out][ceil(in/32)]; none for f16. */
  scales?: Float32Array | null;
  /** q4 only, optional: [out][ceil(ceil(in/32)/2)], two 4-bit zero points per byte, low first (default 8). */
  zeroPoints?: Uint8Array | null;
  /** [out, in]; checked against the layer's shape when given. */
  shape?: number[];
}

/** {@link MultiHeadAttention.loadQuantized}'s argument: quantized projections and float32 entries. */
export type QuantizedStateDict = Record<string, QuantizedTensor | Float32Array> | Map<string, QuantizedTensor | Float32Array>;

/**
 * One attention layer that owns wasm memory (free it with dispose()). Layers are made by the class
 * of a loaded module, `new (await init()).MultiHeadAttention(config)`: the package exports this name
 * as a type only, since each wasm build has its own class. `A` is the layer's {@link LayerArray}:
 * Float32Array, or Float64Array for `dtype: 'float64'` (its weights, inputs and results).
 */
export interface MultiHeadAttention<A extends LayerArray = Float32Array> {
  /** The resolved configuration. */
  readonly config: ResolvedConfig;
  /** False once dispose() was called. */
  readonly alive: boolean;
  /** The state-dict keys this layer takes, with their PyTorch shapes. */
  stateDictShapes(): Record<string, number[]>;
  /**
   * Copies weights into the layer, all or nothing.
   * @throws {TypeError} for a missing or unknown key; {RangeError} for a mis-sized entry.
   */
  loadStateDict(stateDict: StateDict<A>): this;
  /**
   * Fresh weights as PyTorch initializes nn.MultiheadAttention: xavier_uniform_ in_proj weights,
   * zero biases (and sinks), out_proj.weight as nn.Linear's U(-1/sqrt(in), 1/sqrt(in)); seeded.
   */
  initialize(options?: InitializeOptions): this;
  /**
   * Copies of the current weights, keyed as stateDictShapes() (quantized projections dequantized
   * to float32). @throws {TypeError} before any weights.
   */
  stateDict(): Record<string, A>;
  /**
   * Weights already quantized, loaded as they are (no float32 detour): projection keys
   * (in_proj_weight or q/k/v_proj_weight, out_proj.weight) map to {@link QuantizedTensor}s, the
   * other keys (biases, sinks; float32 projections) to Float32Arrays. A layer without weights needs
   * every key; a loaded layer takes quantized projections only and replaces just those (its biases
   * stay). Each projection keeps the dtype given,
   * whatever the layer's weightDtype. See {@link readOnnx} for an ONNX file's.
   * @throws {TypeError | RangeError} naming the entry and the layout its dtype needs; nothing is loaded then.
   */
  loadQuantized(weights: QuantizedStateDict): this;
  /**
   * Bytes of weights the layer holds: the projections as stored (data, scales, zero points) plus
   * the float32 biases and sinks; 0 before weights are loaded.
   */
  readonly byteSize: number;
  /**
   * A ragged batch: query [totalTokens, E] with `lengths`; key and value ragged with their own
   * lengths (one per query sequence), or null for self-attention. Each sequence runs as its own
   * unbatched call; the output comes back packed. See {@link RaggedTensor}.
   * @throws {TypeError | RangeError} naming the argument and the expected form.
   */
  forward(query: RaggedTensor, key: RaggedTensor | null | undefined, value: RaggedTensor | null | undefined,
    options: RaggedForwardOptions & { grad: true }): RaggedTrainingResult;
  /** A ragged batch (see the overload above). */
  forward(query: RaggedTensor, key?: RaggedTensor | null, value?: RaggedTensor | null, options?: RaggedForwardOptions): RaggedForwardResult;
  /**
   * query [B, L, E] or [L, E]; key [B, S, kdim] and value [B, S, vdim], or null for self-attention.
   * A query row with every key masked gives zero attention: its output is out_proj.bias.
   * With `grad: true` the result also has backward() and release().
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  forward<O extends GradForwardOptions>(query: Tensor<A>, key: Tensor<A> | null | undefined, value: Tensor<A> | null | undefined, options: O): TrainingResult<O, A>;
  /**
   * query [B, L, E] or [L, E]; key [B, S, kdim] and value [B, S, vdim], or null for self-attention.
   * `weights` is typed by the options: a tensor with `needWeights: true`, null without.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  forward<O extends ForwardOptions = {}>(query: Tensor<A>, key?: Tensor<A> | null, value?: Tensor<A> | null, options?: O): ForwardResult<O, A>;
  /**
   * A float32 layer's call on Float16Array query, key and value (where the runtime has
   * Float16Array): computed in float32, results as Float16Array. Not with grad, out or weightsOut.
   */
  forward<O extends ForwardOptions = {}>(query: Tensor<HalfArray>, key?: Tensor<HalfArray> | null, value?: Tensor<HalfArray> | null, options?: O): ForwardResult<O, HalfArray>;
  /** A ragged batch as a promise (see forward's ragged overloads). */
  forwardAsync(query: RaggedTensor, key: RaggedTensor | null | undefined, value: RaggedTensor | null | undefined,
    options: RaggedForwardOptions & { grad: true }): Promise<RaggedTrainingResult>;
  /** A ragged batch as a promise (see forward's ragged overloads). */
  forwardAsync(query: RaggedTensor, key?: RaggedTensor | null, value?: RaggedTensor | null, options?: RaggedForwardOptions): Promise<RaggedForwardResult>;
  /**
   * {@link MultiHeadAttention.forward} as a promise, with the same arguments, options and result
   * (with `grad: true` the result also has backwardAsync()): code written with it runs on every
   * backend. On the wasm builds the work runs at the call, on the calling thread.
   * @throws (rejects with) forward's errors, named 'forwardAsync: ...'.
   */
  forwardAsync<O extends GradForwardOptions>(query: Tensor<A>, key: Tensor<A> | null | undefined, value: Tensor<A> | null | undefined, options: O): Promise<TrainingResult<O, A>>;
  /** {@link MultiHeadAttention.forward} as a promise (see the overload above). */
  forwardAsync<O extends ForwardOptions = {}>(query: Tensor<A>, key?: Tensor<A> | null, value?: Tensor<A> | null, options?: O): Promise<ForwardResult<O, A>>;
  /** Float16Array inputs as a promise (see forward's Float16Array overload). */
  forwardAsync<O extends ForwardOptions = {}>(query: Tensor<HalfArray>, key?: Tensor<HalfArray> | null, value?: Tensor<HalfArray> | null, options?: O): Promise<ForwardResult<O, HalfArray>>;
  /**
   * A KV cache for decoding with this layer (memory checked against the budget and taken now).
   * @throws {TypeError | RangeError} for bad options, or a RangeError naming the bytes when it cannot fit.
   */
  createCache(options: CreateCacheOptions): KvCache;
  /**
   * Frees the layer's wasm memory. Calling it again does nothing; other methods then throw.
   * A layer garbage-collected without dispose() is freed late, with a one-time console warning.
   */
  dispose(): void;
  /** The same as dispose(), so `using layer = new mha.MultiHeadAttention(...)` frees it at scope end. */
  [Symbol.dispose](): void;
}

/** Which of the package's wasm builds was loaded. */
export interface BuildInfo {
  /** True for the builds using WebAssembly SIMD (128-bit) instructions. */
  simd: boolean;
  /**
   * True for the builds whose multiply-adds are relaxed SIMD's f32x4.relaxed_madd: one fused
   * instruction where the CPU has FMA (so results may differ from the plain SIMD build's in the
   * last bits, within the reference tolerance).
   */
  relaxedSimd: boolean;
  /** True for the multi-threaded builds. */
  threads: boolean;
  /**
   * 'mha-simd', 'mha-scalar', 'mha-simd-threads', 'mha-relaxed-simd' or 'mha-relaxed-simd-threads'
   * (the file names in dist/).
   */
  name: string;
  /** Threads a forward pass may use: 1 for the single-thread builds. */
  numThreads: number;
}

/**
 * The kernels that come in variants (docs/performance.md#kernel-variants-chosen-where-they-run):
 * 'gemm' the projections' GEMM, 'gemv_f16' and 'gemv_q4' the decode GEMV of f16 and of q4 weights,
 * 'flash' the attention kernel's score and P·V tiles, 'exp' the softmax's exp.
 */
export type KernelName = 'gemm' | 'gemv_f16' | 'gemv_q4' | 'flash' | 'exp';

/**
 * Forces kernel variants by name, e.g. `{ gemm: '4x8', gemv_f16: 'even-odd' }` (init's `kernels`
 * option; in Node also `MHA_KERNELS=gemm=4x8,gemv_f16=even-odd`). The names are
 * {@link KernelVariantChoice.variants}.
 */
export type KernelOptions = Partial<Record<KernelName, string>>;

/** The variant one kernel runs, as {@link KernelChoice} reports it. */
export interface KernelVariantChoice {
  /**
   * The variant running, e.g. '4x8' (the GEMM's register tile: rows x columns of the SIMD build),
   * 'even-odd' (the f16 GEMV's widening), '1p' (the q4 GEMV's panels per pass), '4x128' (flash:
   * query rows of the register tile x keys per tile), 'estrin5' (exp: how its degree-5 polynomial
   * is evaluated).
   */
  variant: string;
  /**
   * 'calibrated': measured on this machine when the module loaded; 'saved': a calibration an
   * earlier process kept (localStorage in a page, a file under the OS's cache folder in Node, or
   * the file MHA_KERNEL_CACHE names; MHA_KERNEL_CACHE=off keeps none); 'forced': init's `kernels`
   * option or MHA_KERNELS.
   */
  source: 'calibrated' | 'saved' | 'forced';
  /** Every variant this build has, in a fixed order. */
  variants: readonly string[];
  /** The calibration's GFLOPS per variant (a GEMV's: 2 per weight; exp: billions of exps per second), when this process calibrated; else null. */
  gflops: Readonly<Record<string, number>> | null;
  /** The calibration's own time in ms, when this process calibrated; else null. */
  calibrationMs: number | null;
}

/**
 * Which variant each hot kernel runs in this process (`mha.kernelChoice()`). Every variant gives
 * the reference kernel's results (within its test tolerance); they differ only in speed, which
 * depends on the CPU, so the fastest is measured where the code runs.
 */
export type KernelChoice = Readonly<Record<KernelName, KernelVariantChoice>>;

/** The layer class of a loaded build, `mha.MultiHeadAttention`. */
export interface MultiHeadAttentionConstructor {
  /** A float64 layer (`dtype: 'float64'`): Float64Array weights, inputs and results. */
  new (config: AttentionConfig & { dtype: 'float64' }): MultiHeadAttention<Float64Array>;
  /** @throws {TypeError | RangeError} for a bad config, e.g. numHeads not dividing embedDim. */
  new (config: AttentionConfig): MultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: MultiHeadAttention;
}

/** Caller-owned buffers {@link MhaModule.linearBackward} writes the gradients into (each written whole). */
export interface LinearBackwardOptions {
  /** dLoss/dInput: a Float32Array of the input's size. */
  dInput?: Float32Array;
  /** dLoss/dWeight: a Float32Array of outFeatures * inFeatures floats. */
  dWeight?: Float32Array;
  /** dLoss/dBias: a Float32Array of outFeatures floats. */
  dBias?: Float32Array;
}

/** The gradients of a linear layer (PyTorch's `nn.Linear`). */
export interface LinearGradients {
  /** dLoss/dInput, in the input's shape. */
  input: Tensor;
  /** dLoss/dWeight [outFeatures, inFeatures], row-major. */
  weight: Float32Array;
  /** dLoss/dBias [outFeatures] (the column sums of dOutput; ignore it for a layer without bias). */
  bias: Float32Array;
}

// mha.Linear (bindings/js/core/linear-layer.js, docs/training.md).
/** How {@link Linear} stores its weight: float32, or IEEE binary16 (half the memory, widened in registers). */
export type LinearWeightDtype = 'f32' | 'f16' | 'int8' | 'q4';

/** The config of `new mha.Linear(config)`. */
export interface LinearConfig {
  /** Input features (the weight's columns), at least 1. */
  inFeatures: number;
  /** Output features (the weight's rows), at least 1. */
  outFeatures: number;
  /** Whether the layer adds a bias (default true, as PyTorch's nn.Linear). */
  bias?: boolean;
  /** How the weight is stored in wasm memory (default 'f32'). */
  weightDtype?: LinearWeightDtype;
}

/** The weights {@link Linear.loadWeights} takes. */
export interface LinearWeights {
  /**
   * [outFeatures, inFeatures] row-major (nn.Linear's layout): a Float32Array, or a Uint16Array
   * of 16-bit bits as safetensors stores them (binary16, or bfloat16 with `weightFormat: 'bf16'`).
   * Any of them loads into any weightDtype: rounded to f16, or quantized to int8 / q4 in wasm a
   * row at a time (docs/quantized.md's formats).
   */
  weight: Float32Array | Uint16Array;
  /** How a Uint16Array weight's bits are read: 'f16' (the default) or 'bf16'; 'f32' (or left out) for a Float32Array. */
  weightFormat?: 'f32' | 'f16' | 'bf16';
  /** [outFeatures]; required when the layer has a bias, refused when it has none. */
  bias?: Float32Array | null;
}

/**
 * y = x W^T + b (PyTorch's `nn.Linear`) whose weights stay in wasm memory between calls, packed
 * once for the kernels the attention layers' projections use: for weights read again and again
 * (a model's MLPs, its unembedding), where {@link MhaModule.linear} would copy them in per call.
 * Owns wasm memory: free it with dispose().
 */
export interface Linear {
  /** The config with its defaults filled in. */
  readonly config: Required<LinearConfig>;
  /** Bytes the packed weight and bias hold in wasm memory (0 before loadWeights). */
  readonly byteSize: number;
  /** False once dispose() was called. */
  readonly alive: boolean;
  /**
   * Copies the weights into wasm memory (checked against the memory budget first). Returns the layer.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  loadWeights(weights: LinearWeights): this;
  /**
   * input `[..., inFeatures]` -> `[..., outFeatures]`; its data is `options.out` when given.
   * @throws {TypeError | RangeError} naming the argument and the expected shape, or before loadWeights.
   */
  forward(input: Tensor, options?: { out?: Float32Array }): Tensor;
  /**
   * Rows `ids` of the weight as float32, [ids.length, inFeatures] (dequantized from its
   * weightDtype): an embedding table's lookup, the table kept once in wasm memory.
   * @throws {TypeError | RangeError} for an id outside [0, outFeatures), or before loadWeights.
   */
  rows(ids: number[] | Int32Array): Float32Array;
  /** Frees the layer's wasm memory. Safe to call more than once. */
  dispose(): void;
  /** The same as dispose(), for `using` declarations. */
  [Symbol.dispose](): void;
}

/** The class of a loaded build, `mha.Linear`. */
export interface LinearConstructor {
  /** @throws {TypeError | RangeError} for a bad config. */
  new (config: LinearConfig): Linear;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: Linear;
}

// The attention function (bindings/js/core/attention-function.js, docs/attention-function.md).
/** A float tensor the attention function takes: Float32Array, or Float16Array where the runtime has it (computed in float32). */
export type AttentionFunctionTensor = Tensor<Float32Array> | {
  /** The elements, row-major: a Float16Array where the runtime has one. */
  data: ArrayLike<number> & ArrayBufferView;
  /** Its dimensions. */
  shape: number[];
};

/** Options of {@link MhaModule.scaledDotProductAttention}. T = P + S keys (past and new). */
export interface AttentionFunctionOptions {
  /**
   * Bool (**1 = ATTEND**, as PyTorch's SDPA, ONNX and Keras; the opposite of the layer's
   * `attnMask`) or float (added to the scores); NumPy-broadcast to [B, Hq, L, T]. A last
   * dimension shorter than T is padded with blocked keys (ONNX).
   */
  attnMask?: Mask;
  /** true or 'top-left': query i sees keys j <= i (PyTorch's is_causal); 'bottom-right': j <= i + T - L. */
  causal?: boolean | 'top-left' | 'bottom-right';
  /** Query i sees keys j <= i + offset (one per batch row as an Int32Array); implies causal (ONNX's rule). */
  causalOffset?: number | Int32Array;
  /** [B]: keys at and past kvSeqLens[b] are padding (ONNX's nonpad_kv_seqlen). */
  kvSeqLens?: Int32Array;
  /** Score scale; default 1 / sqrt(E). */
  scale?: number;
  /** c > 0: c * tanh(s / c) of the scaled scores, before the masks. */
  softcap?: number;
  /** PyTorch's dropout_p, on the layer's Philox stream. */
  dropout?: number;
  /** Dropout's seed (default: a fresh one per call). */
  seed?: number;
  /** [B, Hkv, P, E]: keys before `key` (a KV cache's past); the result's presentKey is their concatenation. */
  pastKey?: AttentionFunctionTensor;
  /** [B, Hkv, P, Ev]: values before `value`, as pastKey. */
  pastValue?: AttentionFunctionTensor;
  /** Hq, for the 3-D form: query [B, L, Hq*E]. */
  numHeads?: number;
  /** Hkv of 3-D key / value [B, S, Hkv*E] (default numHeads). */
  kvNumHeads?: number;
  /** Also return the probabilities [B, Hq, L, T] (after dropout). */
  needWeights?: boolean;
  /** Also return the steps: scores, capped (with softcap), logits, pattern. */
  capture?: boolean;
  /** Keep what backward needs (copies of the inputs, the output, each row's log-sum-exp): the result gets backward(dOut). */
  grad?: boolean;
  /** As the layer's variant: each query sees only the last W keys up to its own position. */
  slidingWindow?: number;
  /** As the layer's variant: ALiBi slopes, one per query head [Hq]. */
  alibiSlopes?: Float32Array | number[];
  /** As the layer's variant: attention-sink logits, one per query head [Hq]. */
  sinks?: Float32Array;
}

/** What {@link MhaModule.scaledDotProductAttention} returns. */
export interface AttentionFunctionResult {
  /** [B, Hq, L, Ev] ([Hq, L, Ev] unbatched; [B, L, Hq*Ev] for a 3-D query). */
  output: Tensor<Float32Array>;
  /** [B, Hkv, T, E]: pastKey then key, with a past. */
  presentKey?: Tensor<Float32Array>;
  /** [B, Hkv, T, Ev]: pastValue then value, with a past. */
  presentValue?: Tensor<Float32Array>;
  /** [B, Hq, L, T], with needWeights. */
  weights?: Tensor<Float32Array>;
  /** With capture: scores = scale q.k; capped = after softcap (with softcap only); logits = after the masks (-Infinity where blocked); pattern = the softmax. */
  steps?: {
    /** [B, Hq, L, T]: the scaled q.k. */
    scores: Tensor<Float32Array>;
    /** [B, Hq, L, T]: after softcap, before the masks (with softcap only). */
    capped?: Tensor<Float32Array>;
    /** [B, Hq, L, T]: after softcap and the masks, -Infinity where blocked. */
    logits: Tensor<Float32Array>;
    /** [B, Hq, L, T]: the softmax. */
    pattern: Tensor<Float32Array>;
  };
  /** With grad: dLoss/d the inputs given dOut = dLoss/dOutput (the output's shape). */
  backward?(dOut: Tensor<Float32Array>): AttentionFunctionGradients;
  /** With grad: backward as a promise (on wasm the work runs now, on the calling thread). */
  backwardAsync?(dOut: Tensor<Float32Array>): Promise<AttentionFunctionGradients>;
}

/** The gradients {@link AttentionFunctionResult.backward} returns, each in its input's shape. */
export interface AttentionFunctionGradients {
  /** dLoss/dquery, in the query's shape. */
  query: Tensor<Float32Array>;
  /** dLoss/dkey, in the key's shape. */
  key: Tensor<Float32Array>;
  /** dLoss/dvalue, in the value's shape. */
  value: Tensor<Float32Array>;
  /** dLoss/dpastKey, with a past. */
  pastKey?: Tensor<Float32Array>;
  /** dLoss/dpastValue, with a past. */
  pastValue?: Tensor<Float32Array>;
}
