/// <reference lib="esnext.disposable" />
/**
 * mha-wasm: multi-head attention with PyTorch `nn.MultiheadAttention` semantics
 * (batch-first, inference), compiled to SIMD WebAssembly.
 * @module mha-wasm
 */

/** A dense row-major tensor. `data.length` must equal the product of `shape`. */
export interface Tensor<T extends ArrayLike<number | bigint | boolean> = Float32Array> {
  /** The elements, row-major (last dimension fastest). */
  data: T;
  /** Dimensions, outermost first, e.g. [B, L, E]. */
  shape: number[];
}

/** The data of a bool mask: any integer typed array (nonzero = true) or a plain `boolean[]`. */
export type BoolMaskData =
  | Uint8Array | Uint8ClampedArray | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigInt64Array | BigUint64Array | boolean[];

/** The data of a float mask, added to the scores: `Float32Array`, or `Float64Array` (rounded to float32). */
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
}

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
  /** Present when the layer has dropout. */
  dropout?: number;
  /** How loadStateDict stores the projection weights: present when not 'f32' (as the other options). */
  weightDtype?: WeightDtype;
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
   * Write the output into this caller-owned Float32Array (exactly the output's element count)
   * instead of a fresh one: a loop that reuses its buffers allocates nothing per call and, in
   * Node, pays no page faults for a new array. The result's `output.data` is this array.
   */
  out?: Float32Array;
  /** The same for the weights (with needWeights: true). */
  weightsOut?: Float32Array;
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
 * - `result` [B, L, H, outputDim]: each head's share of out_proj, without bias (their sum plus
 *   the bias is the output).
 */
export type StepName = 'q' | 'k' | 'v' | 'scores' | 'logits' | 'pattern' | 'z' | 'result';

/** The steps {@link ForwardOptions.patch} can replace: those a later step reads. */
export type PatchableStep = 'q' | 'k' | 'v' | 'pattern' | 'z';

/**
 * {@link ForwardOptions.patch}: exactly one of `q`, `k`, `v`, `pattern`, `z` (a {@link PatchableStep}),
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
  /** The heads whose values are replaced (key/value heads for `k` and `v`); default all. */
  heads?: readonly number[];
}

/** The captured steps of a call: `capture: true` gives all of them, a list just those. */
export type CapturedSteps<N extends StepName = StepName> = { [S in N]: Tensor<Float32Array> };

/** The type of {@link ForwardResult.captured} for options `O`. */
export type CapturedIf<O> = O extends Record<'capture', true> ? CapturedSteps
  : O extends Record<'capture', readonly (infer N extends StepName)[]> ? CapturedSteps<N>
  : Partial<CapturedSteps> | undefined;

/** {@link ForwardOptions} of a call that keeps its state for a backward pass. */
export interface GradForwardOptions extends ForwardOptions {
  grad: true;
  cache?: undefined;
  out?: undefined;
  weightsOut?: undefined;
}

/** Gradients of a loss, from {@link TrainingResult.backward}. */
export interface Gradients {
  /** dLoss/dQuery, the query's shape. In self-attention (key = value = null) the sum of its three uses. */
  query: Tensor<Float32Array>;
  /** dLoss/dKey, or null when forward got key = null. */
  key: Tensor<Float32Array> | null;
  /** dLoss/dValue, or null when forward got value = null. */
  value: Tensor<Float32Array> | null;
  /**
   * dLoss/d each parameter, keyed and sized exactly as the layer's stateDictShapes() (sinks included).
   * @throws {TypeError} on reading it, for a layer with quantized weights (they have no parameter
   *   gradients: train a weightDtype 'f32' layer and quantize its state dict).
   */
  params: Record<string, Float32Array>;
}

/** What {@link MultiHeadAttention.forward} returns with `grad: true`. */
export interface TrainingResult<O extends ForwardOptions = ForwardOptions> extends ForwardResult<O> {
  /**
   * dLoss/d(inputs, parameters) given dLoss/dOutput (`dOut`, the output's shape). Call once.
   * @throws {Error} when called twice, after release() or after the layer's dispose();
   *   {TypeError | RangeError} for a dOut of the wrong kind or size.
   */
  backward(dOut: Tensor<Float32Array>): Gradients;
  /**
   * {@link TrainingResult.backward} as a promise, for code written once for every backend: the same
   * gradients, or a rejection with backward's error named 'backwardAsync: ...'.
   */
  backwardAsync(dOut: Tensor<Float32Array>): Promise<Gradients>;
  /** Frees what forward kept, without a backward (a no-op after backward). */
  release(): void;
  /** True once backward() or release() ran. */
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
export type TensorIf<O, Flag extends string> = O extends { [K in Flag]: true } ? Tensor<Float32Array>
  // (the index signature keeps the second test from failing TypeScript's weak-type check on
  // options that leave the flag out, e.g. { causal: true })
  : O extends { [K in Flag]?: false } & Record<string, unknown> ? null : Tensor<Float32Array> | null;

/**
 * What {@link MultiHeadAttention.forward} returns; `O` is the options' type, so that a call with
 * `needWeights: true` has non-null `weights`.
 */
export interface ForwardResult<O extends ForwardOptions = ForwardOptions> {
  /** [B, L, outputDim], or [L, outputDim] for unbatched input. A copy the caller owns. */
  output: Tensor<Float32Array>;
  /**
   * The softmax probabilities, [B, H, L, S] or averaged [B, L, S] (no B for unbatched input);
   * null unless needWeights. A query row whose every key is masked gets zero weights (PyTorch: NaN).
   */
  weights: TensorIf<O, 'needWeights'>;
  /** With {@link ForwardOptions.capture}: each captured step (docs/steps.md); absent otherwise. */
  captured: CapturedIf<O>;
}

/**
 * A PyTorch `nn.MultiheadAttention` state dict with Float32Array values: `in_proj_weight` or
 * `q_proj_weight`/`k_proj_weight`/`v_proj_weight`, `in_proj_bias`, `out_proj.weight`, `out_proj.bias`
 * (and `sinks` for a layer with sinks). `stateDictShapes()` lists the keys and shapes a layer takes.
 */
export type StateDict = Record<string, Float32Array> | Map<string, Float32Array>;

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
 * as a type only, since each wasm build has its own class.
 */
export interface MultiHeadAttention {
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
  loadStateDict(stateDict: StateDict): this;
  /**
   * Fresh weights as PyTorch initializes nn.MultiheadAttention: xavier_uniform_ in_proj weights,
   * zero biases (and sinks), out_proj.weight as nn.Linear's U(-1/sqrt(in), 1/sqrt(in)); seeded.
   */
  initialize(options?: InitializeOptions): this;
  /**
   * Copies of the current weights, keyed as stateDictShapes() (quantized projections dequantized
   * to float32). @throws {TypeError} before any weights.
   */
  stateDict(): Record<string, Float32Array>;
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
   * query [B, L, E] or [L, E]; key [B, S, kdim] and value [B, S, vdim], or null for self-attention.
   * A query row with every key masked gives zero attention: its output is out_proj.bias.
   * With `grad: true` the result also has backward() and release().
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  forward<O extends GradForwardOptions>(query: Tensor, key: Tensor | null | undefined, value: Tensor | null | undefined, options: O): TrainingResult<O>;
  /**
   * query [B, L, E] or [L, E]; key [B, S, kdim] and value [B, S, vdim], or null for self-attention.
   * `weights` is typed by the options: a tensor with `needWeights: true`, null without.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  forward<O extends ForwardOptions = {}>(query: Tensor, key?: Tensor | null, value?: Tensor | null, options?: O): ForwardResult<O>;
  /**
   * {@link MultiHeadAttention.forward} as a promise, with the same arguments, options and result
   * (with `grad: true` the result also has backwardAsync()): code written with it runs on every
   * backend. On the wasm builds the work runs at the call, on the calling thread.
   * @throws (rejects with) forward's errors, named 'forwardAsync: ...'.
   */
  forwardAsync<O extends GradForwardOptions>(query: Tensor, key: Tensor | null | undefined, value: Tensor | null | undefined, options: O): Promise<TrainingResult<O>>;
  /** {@link MultiHeadAttention.forward} as a promise (see the overload above). */
  forwardAsync<O extends ForwardOptions = {}>(query: Tensor, key?: Tensor | null, value?: Tensor | null, options?: O): Promise<ForwardResult<O>>;
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
  /** True for the multi-threaded build. */
  threads: boolean;
  /** 'mha-simd', 'mha-scalar' or 'mha-simd-threads' (the file names in dist/). */
  name: string;
  /** Threads a forward pass may use: 1 for the single-thread builds. */
  numThreads: number;
}

/** The layer class of a loaded build, `mha.MultiHeadAttention`. */
export interface MultiHeadAttentionConstructor {
  /** @throws {TypeError | RangeError} for a bad config, e.g. numHeads not dividing embedDim. */
  new (config: AttentionConfig): MultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: MultiHeadAttention;
}

/**
 * Keras' MultiHeadAttention arguments (keras.layers.MultiHeadAttention). The input sizes, as in
 * Keras, need not be given: they are taken from the first call's inputs, or from the shapes of
 * the weights given to setWeights, whichever comes first.
 */
export interface KerasConfig {
  /** Number of attention heads. */
  numHeads: number;
  /** Query/key head size; the scale is 1/sqrt(keyDim). */
  keyDim: number;
  /** Value head size (default keyDim). */
  valueDim?: number;
  /** Biases in all four dense layers (default true). */
  useBias?: boolean;
  /** The output's feature size (default queryDim). */
  outputShape?: number;
  /** The query's feature size (default: inferred when the layer is built). */
  queryDim?: number;
  /** The key's feature size (default valueInputDim). */
  keyInputDim?: number;
  /** The value's feature size (default queryDim). */
  valueInputDim?: number;
  /** Dropout on the attention scores in calls with `training: true` (Keras' dropout). Default 0. */
  dropout?: number;
  /** Where the dropout seeds start (see AttentionConfig.seed). */
  seed?: number;
  /** How the four dense layers' kernels are stored (see AttentionConfig.weightDtype). Default 'f32'. */
  weightDtype?: WeightDtype;
  /**
   * Keras' attention_axes: the axes of a [B, ..., features] input attended over (between 1 and
   * rank - 2; default all of them); the other inner axes act as more batch. Scores are then
   * [B, (other axes), H, (query's attended axes), (key's attended axes)]. Masks and the causal
   * mask are not supported on inputs of rank > 3.
   */
  attentionAxes?: number | number[];
}

/** The Keras layer's arguments once it is built: every size known. */
export type ResolvedKerasConfig = Required<Omit<KerasConfig, 'seed'>>;

/** Options of {@link KerasMultiHeadAttention.call}, with Keras' meanings. */
export interface KerasCallOptions {
  /**
   * [B, T, S] (or [T, S], or [B, S] per batch row); nonzero / true = may attend (Keras' convention).
   * The same data kinds as {@link Mask}: any integer typed array, `boolean[]`, Float32Array or Float64Array.
   */
  attentionMask?: Tensor<BoolMaskData> | Tensor<FloatMaskData>;
  /** Query i attends to keys j <= i, combined with attentionMask by AND. */
  useCausalMask?: boolean;
  /** Also return the per-head scores [B, H, T, S] (before dropout, as Keras'; then `scores` is typed non-null). */
  returnAttentionScores?: boolean;
  /** Apply dropout (Keras' training argument). Default false. */
  training?: boolean;
  /** Dropout's seed for this call. */
  seed?: number;
  /** As {@link ForwardOptions.checkFinite}: name the first NaN or Infinity in query, value or key. */
  checkFinite?: boolean;
  /**
   * As {@link ForwardOptions.capture} (docs/steps.md maps Keras' names to the steps: its
   * `attention_scores` is `pattern`, its `attention_output` before `_output_dense` is `z`).
   * Not with inputs of rank > 3.
   */
  capture?: true | false | readonly StepName[];
  /** As {@link ForwardOptions.patch}. Not with inputs of rank > 3. */
  patch?: StepPatch;
}

/** What {@link KerasMultiHeadAttention.call} returns. */
export interface KerasCallResult<O extends KerasCallOptions = KerasCallOptions> {
  /** [B, T, outputShape]. */
  output: Tensor<Float32Array>;
  /** Per-head attention scores [B, H, T, S] with returnAttentionScores, else null. */
  scores: TensorIf<O, 'returnAttentionScores'>;
  /** With `capture`: each captured step, as {@link ForwardResult.captured}; absent otherwise. */
  captured: CapturedIf<O>;
}

/** Keras' MultiHeadAttention on this package's core (bindings/js/keras/keras.js). */
export interface KerasMultiHeadAttention {
  /** Every argument resolved. @throws {TypeError} before the layer is built (no call or setWeights yet). */
  readonly config: ResolvedKerasConfig;
  /** False until the input sizes are known (given, or taken from the first call or setWeights). */
  readonly built: boolean;
  /** The PyTorch-style layer underneath. @throws {TypeError} before the layer is built. */
  readonly layer: MultiHeadAttention;
  /** Keras' weight names and shapes, in the order of get_weights(). @throws {TypeError} before the layer is built. */
  weightShapes(): Record<string, number[]>;
  /**
   * get_weights()'s list ([{ data, shape }] or Float32Arrays) or a { 'query/kernel': ... } map, Keras
   * layouts. An unbuilt layer takes its input sizes from the tensors' shapes.
   */
  setWeights(weights: Array<Float32Array | Tensor> | Record<string, Float32Array | Tensor>): this;
  /** The weights as Keras' get_weights() returns them: fresh copies, in its order and layouts. */
  getWeights(): Tensor<Float32Array>[];
  /** Keras' argument order: call(query, value, key = value, options). */
  call<O extends KerasCallOptions = {}>(query: Tensor, value: Tensor, key?: Tensor | null, options?: O): KerasCallResult<O>;
  /** call() as a promise (the layers' forwardAsync): the same result, or call's errors named 'callAsync: ...'. */
  callAsync<O extends KerasCallOptions = {}>(query: Tensor, value: Tensor, key?: Tensor | null, options?: O): Promise<KerasCallResult<O>>;
  /** Frees the layer's wasm memory. */
  dispose(): void;
  /** The same as dispose(), for `using` declarations. */
  [Symbol.dispose](): void;
}

/** The Keras layer class of a loaded build, `mha.KerasMultiHeadAttention`. */
export interface KerasMultiHeadAttentionConstructor {
  /** @throws {TypeError | RangeError} for a bad config, naming the class and the argument. */
  new (config: KerasConfig): KerasMultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: KerasMultiHeadAttention;
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

/** A loaded wasm build, as {@link init} resolves it. */
export interface MhaModule {
  /**
   * y = x W^T + b (PyTorch's `nn.Linear`) on the attention layers' wasm GEMM: input
   * `[..., inFeatures]`, weight `[outFeatures, inFeatures]`, bias `[outFeatures]` or null; returns
   * `[..., outFeatures]` (its data is `options.out` when given). Stateless: for the layers a model
   * puts around attention (an unembedding, a classifier). See docs/training.md.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  linear(input: Tensor, weight: Tensor, bias?: Float32Array | null, options?: { out?: Float32Array }): Tensor;
  /**
   * The gradients of {@link MhaModule.linear} for dOutput = dLoss/dOutput (the output's shape).
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  linearBackward(dOutput: Tensor, input: Tensor, weight: Tensor, options?: LinearBackwardOptions): LinearGradients;
  /** The layer class bound to this build: `new mha.MultiHeadAttention(config)`. */
  MultiHeadAttention: MultiHeadAttentionConstructor;
  /** Keras' MultiHeadAttention on the same core: `new mha.KerasMultiHeadAttention({ numHeads, keyDim })`. */
  KerasMultiHeadAttention: KerasMultiHeadAttentionConstructor;
  /** Bytes of wasm heap currently allocated (for leak checks). */
  heapAllocatedBytes(): number;
  /** Total size of the wasm linear memory, in bytes. */
  memoryBytes(): number;
  /** Which build was loaded. */
  build: BuildInfo;
}

/** Options of {@link init}; every one is optional. */
export interface InitOptions {
  /**
   * Where to load the chosen build's .wasm from (default: the package's dist/ folder, found with
   * `new URL(..., import.meta.url)`, which bundlers follow). Relative URLs are relative to the page
   * in a browser and to dist/ in Node. In Node it must be a file path or file: URL: Node never fetches.
   */
  wasmUrl?: string | URL;
  /**
   * Maps each file a build needs ('mha-simd.wasm', 'mha-simd-threads.worker.js', ...) to its URL;
   * return undefined to keep `defaultUrl`. `wasmUrl`, when given, wins for the .wasm.
   */
  locateFile?: (fileName: string, defaultUrl: string) => string | URL | undefined;
  /** undefined (default): use SIMD where the engine has it; false: force the scalar build; true: force SIMD. */
  simd?: boolean;
  /**
   * Threads for a forward pass. Default: every core, where threads work (Node; cross-origin-isolated
   * pages), else 1 quietly. 1: a single-thread build. N > 1 where threads are impossible: one thread
   * and a console warning.
   */
  threads?: number;
  /** 'wasm' (default): this module. 'webgpu': a {@link WebGpuModule} (see {@link WebGpuInitOptions}). */
  backend?: 'wasm';
}

/**
 * A GPUBuffer (WebGPU), as the WebGPU backend reads it: declared by shape, so these types need no
 * WebGPU type package (any `GPUBuffer` fits).
 */
export interface WebGpuBuffer {
  /** Its size in bytes. */
  readonly size: number;
  /** Its GPUBufferUsage flags (inputs need STORAGE). */
  readonly usage: number;
  /** Maps it for reading or writing (GPUBuffer.mapAsync). */
  mapAsync(mode: number, offset?: number, size?: number): Promise<undefined | void>;
  /** Frees it (GPUBuffer.destroy). */
  destroy(): void;
}

/** A float32 tensor already on the GPU: `shape.reduce(*)` floats at the start of `buffer` (usage STORAGE). */
export interface GpuTensorInput {
  /** The buffer, on the layer's device, with GPUBufferUsage.STORAGE. */
  buffer: WebGpuBuffer;
  /** The tensor's shape, as a { data, shape } tensor's. */
  shape: number[];
}

/** A result left on the GPU (`outputLocation: 'gpu'`): the caller owns the buffer and disposes it. */
export interface GpuTensor {
  /** Float32 values, row-major in `shape` (usage STORAGE | COPY_SRC | COPY_DST): the next layer's input as is. */
  readonly buffer: WebGpuBuffer;
  /** The tensor's shape. */
  readonly shape: number[];
  /** Copies the values back to the CPU. */
  read(): Promise<Float32Array>;
  /** Destroys the buffer. */
  dispose(): void;
}

/**
 * Options of {@link WebGpuMultiHeadAttention.forwardAsync}: the wasm layer's (`cache`: a cache of
 * this WebGPU layer's createCache), plus outputLocation. `out` / `weightsOut` receive the results
 * read back (outputLocation 'cpu' only: with 'gpu' they are a TypeError). `checkFinite` checks CPU
 * tensors as the wasm layer does and reads GPUBuffer inputs back to check them (they then need
 * COPY_SRC usage), naming the element as `query.buffer[i]`.
 */
export interface WebGpuForwardOptions extends Omit<ForwardOptions, 'patch'> {
  /** 'cpu' (default): Float32Array results. 'gpu': {@link GpuTensor}s that stay on the device (the captured steps too). */
  outputLocation?: 'cpu' | 'gpu';
  /** As {@link ForwardOptions.patch}; the step's tensor may also be on the GPU (e.g. a step captured with outputLocation 'gpu'). */
  patch?: WebGpuStepPatch;
}

/** {@link StepPatch} on WebGPU: each step's tensor a Float32Array tensor or a {@link GpuTensorInput}. */
export type WebGpuStepPatch = { [S in keyof StepPatch]: S extends 'heads' ? StepPatch[S] : Tensor<Float32Array> | GpuTensorInput };

/** Where the options put a result: a {@link GpuTensor} with `outputLocation: 'gpu'`, else a Float32Array tensor. */
export type WebGpuResultTensor<O> = O extends WebGpuGpuOutput ? GpuTensor : Tensor<Float32Array>;

/** Options that keep the results on the GPU. */
export interface WebGpuGpuOutput {
  /** 'gpu'. */
  outputLocation: 'gpu';
}

/** Options that ask for the attention weights. */
export interface WebGpuNeedWeights {
  /** true. */
  needWeights: true;
}

/** What {@link WebGpuMultiHeadAttention.forwardAsync} resolves to. */
export interface WebGpuForwardResult<O extends WebGpuForwardOptions = WebGpuForwardOptions> {
  /** [B, L, outputDim] or [L, outputDim]. */
  output: WebGpuResultTensor<O>;
  /** As {@link ForwardResult.weights}; null unless needWeights. */
  weights: O extends WebGpuNeedWeights ? WebGpuResultTensor<O> : WebGpuResultTensor<O> | null;
  /**
   * With {@link ForwardOptions.capture}: each captured step (docs/steps.md), as the wasm layer's
   * (GpuTensors with outputLocation 'gpu'); absent otherwise. On WebGPU a `patch` with `grad: true` is refused (not yet).
   */
  captured: O extends WebGpuGpuOutput ? WebGpuCapturedOnGpu<CapturedIf<O>> : CapturedIf<O>;
}

/** Captured steps left on the GPU: each step a {@link GpuTensor}. */
export type WebGpuCapturedOnGpu<C> = C extends undefined ? undefined : { [S in keyof C]: GpuTensor };

/** Options of {@link WebGpuTrainingResult.backwardAsync}. */
export interface WebGpuBackwardOptions {
  /**
   * 'cpu': the gradients as Float32Arrays ({@link Gradients}). 'gpu': as {@link GpuTensor}s
   * ({@link GpuGradients}) that stay on the device. Default: where the forward pass put its output
   * (its {@link WebGpuForwardOptions.outputLocation}).
   */
  outputLocation?: 'cpu' | 'gpu';
}

/** {@link Gradients} left on the GPU (`backwardAsync(dOut, { outputLocation: 'gpu' })`): the same names and shapes. */
export interface GpuGradients {
  /** dLoss/dQuery, the query's shape (in self-attention the sum of its three uses). */
  query: GpuTensor;
  /** dLoss/dKey, or null when forward got key = null. */
  key: GpuTensor | null;
  /** dLoss/dValue, or null when forward got value = null. */
  value: GpuTensor | null;
  /** dLoss/d each parameter, keyed and shaped exactly as the layer's stateDictShapes(). */
  params: Record<string, GpuTensor>;
}

/** {@link WebGpuForwardOptions} of a call that keeps its state on the GPU for a backward pass. */
export interface WebGpuGradForwardOptions extends WebGpuForwardOptions {
  grad: true;
  cache?: undefined;
}

/**
 * What {@link WebGpuMultiHeadAttention.forwardAsync} resolves to with `grad: true`: the result,
 * and the call's buffers kept on the GPU (inputs, projections, attended values, log-sum-exps)
 * until backwardAsync() or release().
 */
export interface WebGpuTrainingResult<O extends WebGpuForwardOptions = WebGpuForwardOptions> extends WebGpuForwardResult<O> {
  /**
   * dLoss/d(inputs, parameters) given dLoss/dOutput (`dOut`, the output's shape; on the CPU or
   * the GPU), computed on the GPU: the wasm layer's {@link Gradients}, to float32 rounding. Call once.
   * @throws {Error} (as a rejection) when called twice, after release() or after the layer's
   *   dispose(); {TypeError} when the layer's weights changed since the forward pass;
   *   {TypeError | RangeError} for a dOut of the wrong kind or size.
   */
  backwardAsync(dOut: Tensor<Float32Array> | GpuTensorInput, options: WebGpuBackwardOptions & { outputLocation: 'cpu' }): Promise<Gradients>;
  /**
   * The same, with every gradient left on the GPU (`outputLocation: 'gpu'`): {@link GpuGradients},
   * the buffers the caller's, nothing read back (an optimizer on the GPU takes them as they are).
   */
  backwardAsync(dOut: Tensor<Float32Array> | GpuTensorInput, options: WebGpuBackwardOptions & { outputLocation: 'gpu' }): Promise<GpuGradients>;
  /** Without outputLocation: the gradients go where the forward pass put its output. */
  backwardAsync(dOut: Tensor<Float32Array> | GpuTensorInput, options?: WebGpuBackwardOptions): Promise<O extends WebGpuGpuOutput ? GpuGradients : Gradients>;
  /** Frees what forward kept on the GPU, without a backward (a no-op after backward). */
  release(): void;
  /** True once backwardAsync() or release() ran (or the layer was disposed). */
  readonly released: boolean;
}

/**
 * MultiHeadAttention on WebGPU: the wasm layer's config, weights and errors, with forwardAsync.
 * Its weights live in a wasm layer of the same config (loadStateDict, initialize, stateDict) and
 * are uploaded to the GPU before the next call whenever they change.
 */
export interface WebGpuMultiHeadAttention
  extends Pick<MultiHeadAttention, 'config' | 'alive' | 'byteSize' | 'stateDictShapes' | 'stateDict'> {
  /** 'webgpu'. */
  readonly backend: 'webgpu';
  /** False once the device was lost (or the layer disposed): every call then rejects, saying so. */
  readonly usable: boolean;
  /**
   * As {@link MultiHeadAttention.loadStateDict}; the GPU copy is replaced before the next call. Or
   * every weight a GPU tensor (usage COPY_SRC; named and shaped as stateDictShapes()): copied on the
   * GPU, nothing read back (a float32 layer only); stateDict() is then a TypeError until weights
   * are loaded from the CPU again.
   */
  loadStateDict(stateDict: StateDict | Record<string, GpuTensorInput>): this;
  /** As {@link MultiHeadAttention.initialize}; the GPU copy is replaced before the next call. */
  initialize(options?: InitializeOptions): this;
  /**
   * As {@link MultiHeadAttention.loadQuantized}. Quantized projections (these, or a config's
   * `weightDtype` 'int8' | 'q4' | 'f16') are uploaded as their packed bytes, scales and zero points
   * and dequantized in the kernels; the results are float32 math on the dequantized weights.
   */
  loadQuantized(weights: QuantizedStateDict): this;
  /**
   * The forward pass on the GPU: the same arguments and checks as the wasm layer's forward, and
   * inputs may also be {@link GpuTensorInput}s on this module's device.
   * @throws {TypeError | RangeError | Error} (as a rejection) naming the argument, or the device
   * limit a shape exceeds, or the device's loss.
   */
  forwardAsync<O extends WebGpuGradForwardOptions>(query: Tensor | GpuTensorInput, key: Tensor | GpuTensorInput | null | undefined,
    value: Tensor | GpuTensorInput | null | undefined, options: O): Promise<WebGpuTrainingResult<O>>;
  /**
   * The forward pass on the GPU: the same arguments and checks as the wasm layer's forward, and
   * inputs may also be {@link GpuTensorInput}s on this module's device. With `grad: true` the
   * result also has backwardAsync() ({@link WebGpuTrainingResult}).
   * @throws {TypeError | RangeError | Error} (as a rejection) naming the argument, or the device
   * limit a shape exceeds, or the device's loss.
   */
  forwardAsync<O extends WebGpuForwardOptions = {}>(query: Tensor | GpuTensorInput, key?: Tensor | GpuTensorInput | null,
    value?: Tensor | GpuTensorInput | null, options?: O): Promise<WebGpuForwardResult<O>>;
  /**
   * A KV cache on the GPU for decoding (float32): `forwardAsync(query, null, null, { cache })`
   * appends the call's tokens and attends to everything it holds, checked as the wasm layer's
   * calls with a cache; or, after `cache.setKeyValue(key, value)` (projected on the GPU; key and
   * value may be {@link GpuTensorInput}s), a cross-attention cache that is attended to and never
   * appended to. `dtype: 'f16'` holds packed halves on the GPU (rounded as the wasm layer's f16
   * cache rounds them), widened for each call's attention.
   */
  createCache(options: CreateCacheOptions): KvCache;
  /** @throws {TypeError} always: a WebGPU layer has no synchronous forward (use forwardAsync). */
  forward(...args: unknown[]): never;
  /** @throws {TypeError} always: a WebGPU layer has no synchronous backward (use the result's backwardAsync). */
  backward(...args: unknown[]): never;
  /** Frees the layer's GPU weights and its wasm layer. */
  dispose(): void;
  /** The same as dispose(), for `using`. */
  [Symbol.dispose](): void;
}

/** What the WebGPU backend says about its adapter. */
export interface WebGpuAdapterInfo {
  /** GPUAdapterInfo.vendor, e.g. 'google' for SwiftShader. */
  vendor: string;
  /** GPUAdapterInfo.architecture, e.g. 'swiftshader'. */
  architecture: string;
  /** GPUAdapterInfo.device. */
  device: string;
  /** GPUAdapterInfo.description. */
  description: string;
  /** True for a software or otherwise slow adapter (e.g. SwiftShader): for tests, not for speed. */
  isFallbackAdapter: boolean;
}

/** The WebGPU backend, as `init({ backend: 'webgpu' })` resolves it. */
export interface WebGpuModule {
  /** 'webgpu'. */
  readonly backend: 'webgpu';
  /** The GPUDevice the layers run on (given as `device`, or opened from the adapter). */
  readonly device: unknown;
  /** The adapter the device came from (empty strings where a given device does not say). */
  readonly adapterInfo: WebGpuAdapterInfo;
  /** The device's features (e.g. 'subgroups', 'shader-f16'), sorted. */
  readonly features: readonly string[];
  /** null while the device works; its loss's reason and message once it was lost. */
  readonly lost: WebGpuDeviceLoss | null;
  /** The layer class on this device: `new mha.MultiHeadAttention(config)`. */
  MultiHeadAttention: WebGpuMultiHeadAttentionConstructor;
  /** Keras' layer over this module's MultiHeadAttention: `await layer.callAsync(query, value, key, options)`. */
  KerasMultiHeadAttention: WebGpuKerasMultiHeadAttentionConstructor;
  /** AdamW on this device: `new mha.AdamW({ weightDecay })`, parameters and moments kept on the GPU. */
  AdamW: WebGpuAdamWConstructor;
}

/** Options of {@link WebGpuAdamW}: PyTorch's torch.optim.AdamW's. */
export interface AdamWOptions {
  /** Decoupled weight decay (default 0.01). */
  weightDecay?: number;
  /** The second moment's decay (default 0.999). */
  beta2?: number;
  /** Added to the second moment's root (default 1e-8). */
  eps?: number;
}

/** One {@link WebGpuAdamW.step}'s learning rate, momentum and gradient scale. */
export interface AdamWStepOptions {
  /** The learning rate. */
  lr: number;
  /** The first moment's decay (default 0.9; a schedule may cycle it). */
  beta1?: number;
  /** Each gradient is multiplied by it first (default 1): a global-norm clip's factor. */
  gradScale?: number;
}

/** An optimizer's state on the CPU: {@link WebGpuAdamW.state} and loadState. */
export interface AdamWState {
  /** Updates done. */
  steps: number;
  /** The first moments by parameter name. */
  firstMoment: Record<string, Float32Array>;
  /** The second moments by parameter name. */
  secondMoment: Record<string, Float32Array>;
}

/**
 * AdamW on the GPU (PyTorch's formula, as the demo's web/training/adamw.js): parameters given as
 * GPU tensors are updated in place from gradients on the GPU
 * (`backwardAsync(dOut, { outputLocation: 'gpu' })`), the moments kept on the GPU between steps.
 */
export interface WebGpuAdamW {
  /** The decoupled weight decay it was made with. */
  readonly weightDecay: number;
  /** The second moment's decay it was made with. */
  readonly beta2: number;
  /** The eps it was made with. */
  readonly eps: number;
  /** Updates done so far. */
  readonly steps: number;
  /**
   * One update of every tensor of `params` (updated in place) from `grads` (the same names and
   * shapes); resolves once the GPU accepted the work.
   * @throws {TypeError | RangeError} (as a rejection) naming the tensor or option.
   */
  step(params: Record<string, GpuTensorInput>, grads: Record<string, GpuTensorInput>, options: AdamWStepOptions): Promise<void>;
  /** The sum of squares of every element of `tensors` (for a global-norm clip): one float per tensor read back. */
  squaredNorm(tensors: Record<string, GpuTensorInput>): Promise<number>;
  /** The moments and step count read back to the CPU. */
  state(): Promise<AdamWState>;
  /** Replaces the moments and step count (uploaded). */
  loadState(state: AdamWState): this;
  /** Frees the moments. */
  dispose(): void;
}

/** `new mha.AdamW(options)` on a {@link WebGpuModule}'s device. */
export interface WebGpuAdamWConstructor {
  new (options?: AdamWOptions): WebGpuAdamW;
}

/**
 * {@link KerasMultiHeadAttention} on WebGPU: the same config, weights, options, results and errors,
 * with callAsync only (call() is a TypeError naming callAsync: no hidden synchronous readback).
 */
export interface WebGpuKerasMultiHeadAttention extends Omit<KerasMultiHeadAttention, 'layer' | 'call'> {
  /** The WebGPU layer underneath. @throws {TypeError} before the layer is built. */
  readonly layer: WebGpuMultiHeadAttention;
  /** @throws {TypeError} always: use callAsync. */
  call(...args: unknown[]): never;
}

/** The Keras layer class of a {@link WebGpuModule}. */
export interface WebGpuKerasMultiHeadAttentionConstructor {
  /** @throws {TypeError | RangeError} for a bad config, naming the class and the argument. */
  new (config: KerasConfig): WebGpuKerasMultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: WebGpuKerasMultiHeadAttention;
}

/** Why a device was lost (GPUDeviceLostInfo). */
export interface WebGpuDeviceLoss {
  /** 'destroyed' or 'unknown'. */
  reason: string;
  /** The implementation's message. */
  message: string;
}

/** The layer class of a {@link WebGpuModule}. */
export interface WebGpuMultiHeadAttentionConstructor {
  /** @throws {TypeError | RangeError} for a bad config, as the wasm layer's; for weightDtype other than 'f32'. */
  new (config: AttentionConfig): WebGpuMultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: WebGpuMultiHeadAttention;
}

/** Options of `init({ backend: 'webgpu' })`; the wasm options (wasmUrl, ...) apply to its wasm module. */
export interface WebGpuInitOptions extends Omit<InitOptions, 'backend'> {
  /** 'webgpu'. */
  backend: 'webgpu';
  /** A GPU object (default `navigator.gpu`; in Node e.g. the 'webgpu' package's `create([])`). */
  gpu?: WebGpuEntry;
  /** A GPUDevice to share (tfjs', onnxruntime-web's), so buffers pass between them. */
  device?: unknown;
}

/** A GPU object (navigator.gpu's type), as the WebGPU backend uses it. */
export interface WebGpuEntry {
  /** GPU.requestAdapter: resolves to an adapter, or null where none is available. */
  requestAdapter(options?: object): Promise<unknown>;
}

/**
 * The WebGPU backend: resolves once a device is open, or rejects with an Error saying why (no
 * navigator.gpu and no `gpu`, no adapter, a limit the kernels need); never falls back to wasm.
 */
export declare function init(options: WebGpuInitOptions): Promise<WebGpuModule>;

/**
 * Loads the WebAssembly module. Single-flight: calls that resolve to the same build and file
 * location share one module, loaded once (so `init()` twice loads once, and `init({ simd: false })`
 * loads the scalar build beside it). The threaded build keeps the thread count of the call that
 * loaded it (a later different count logs a warning). A failed load rejects with an Error naming the
 * build and URL, and is not cached: calling init() again retries.
 * @throws {TypeError | RangeError} (as a rejection) for unknown or malformed options.
 */
export declare function init(options?: InitOptions): Promise<MhaModule>;

/** The element types of the .safetensors format. */
export type SafetensorsDtype =
  | 'BOOL' | 'U8' | 'I8' | 'F8_E4M3' | 'F8_E5M2' | 'I16' | 'U16' | 'F16' | 'BF16'
  | 'I32' | 'U32' | 'F32' | 'I64' | 'U64' | 'F64';

/**
 * The typed array a dtype is held in: F32 Float32Array, F64 Float64Array, I8 Int8Array,
 * U8/BOOL/F8_* Uint8Array, I16 Int16Array, U16 Uint16Array, F16/BF16 Uint16Array (raw bit patterns),
 * I32 Int32Array, U32 Uint32Array, I64 BigInt64Array, U64 BigUint64Array.
 */
export type SafetensorsData =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array
  | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

/** One tensor read from a .safetensors file. `data` is a fresh copy the caller owns. */
export interface SafetensorsTensor {
  /** The stored element type. */
  dtype: SafetensorsDtype;
  /** Dimensions, outermost first (row-major). `[]` is a scalar. */
  shape: number[];
  /** The elements, in the typed array of `dtype` (see {@link SafetensorsData}). */
  data: SafetensorsData;
}

/** The contents of a .safetensors file. */
export interface SafetensorsFile {
  /** Tensors by name, in header order. */
  tensors: Record<string, SafetensorsTensor>;
  /** The header's `__metadata__` (string to string); `{}` when absent. */
  metadata: Record<string, string>;
}

/**
 * Parses a .safetensors file (8-byte little-endian header length, JSON header, raw data).
 * Strict, like the reference implementation: known dtypes, sizes matching dtype and shape,
 * data_offsets in range, tensors tiling the data with no overlap, gap or trailing bytes.
 * @throws {TypeError} for a malformed header (not JSON, unknown dtype, missing field), naming the tensor.
 * @throws {RangeError} for bad lengths, offsets or sizes, naming the tensor.
 */
export declare function readSafetensors(bytes: Uint8Array | ArrayBuffer): SafetensorsFile;

/** Options of {@link stateDictFromSafetensors}. */
export interface StateDictFromSafetensorsOptions {
  /**
   * Keep only tensors whose name starts with this, and strip it from the keys,
   * e.g. `'encoder.layers.0.self_attn.'` to take one layer out of a whole model.
   */
  prefix?: string;
}

/**
 * A state dict for {@link MultiHeadAttention.loadStateDict} from a .safetensors file:
 * F32 tensors as stored, F16, BF16 and F64 converted to Float32Array.
 * @throws {TypeError} for a non-float tensor, or when no name starts with `prefix`; and as {@link readSafetensors}.
 */
export declare function stateDictFromSafetensors(
  bytes: Uint8Array | ArrayBuffer, options?: StateDictFromSafetensorsOptions): Record<string, Float32Array>;

/** A tensor to write. */
export interface SafetensorsInput {
  /** The elements; with dtype 'F16' or 'BF16' a Float32Array is rounded (to nearest, ties to even). */
  data: SafetensorsData;
  /** Dimensions; their product must equal `data.length`. */
  shape: number[];
  /** Default: from the array type (Float32Array F32, ...). Required for Uint16Array (F16, BF16 or U16). */
  dtype?: SafetensorsDtype;
}

/** Options of {@link writeSafetensors}. */
export interface WriteSafetensorsOptions {
  /** Stored as the header's `__metadata__`. */
  metadata?: Record<string, string>;
}

/**
 * Serializes tensors to .safetensors bytes (header padded to 8 bytes, data in the given order).
 * Pair with {@link MultiHeadAttention.stateDictShapes} to save a layer's weights.
 * @throws {TypeError | RangeError} naming the tensor for a bad dtype, array type or shape.
 */
export declare function writeSafetensors(
  tensors: Record<string, SafetensorsInput> | Map<string, SafetensorsInput>,
  options?: WriteSafetensorsOptions): Uint8Array;

/** A Keras MultiHeadAttention layer's weights by name, each a row-major { data, shape } tensor. */
export interface KerasMultiHeadAttentionWeights {
  /** [E, H, key_dim] */
  'query/kernel': Tensor;
  /** [H, key_dim] (absent with use_bias=False) */
  'query/bias'?: Tensor;
  /** [kdim, H, key_dim] */
  'key/kernel': Tensor;
  /** [H, key_dim] */
  'key/bias'?: Tensor;
  /** [vdim, H, value_dim] */
  'value/kernel': Tensor;
  /** [H, value_dim] */
  'value/bias'?: Tensor;
  /** [H, value_dim, E] */
  'attention_output/kernel': Tensor;
  /** [E] */
  'attention_output/bias'?: Tensor;
}

/**
 * A Keras `MultiHeadAttention` layer's weights -> a PyTorch state dict for loadStateDict.
 * Pass an object keyed by Keras weight names, or the `layer.get_weights()` list in its order
 * (query kernel, query bias, key kernel, key bias, value kernel, value bias, output kernel, output bias;
 * the 4 kernels alone with use_bias=False). Any key_dim / value_dim / output size: load it into
 * `new MultiHeadAttention(stateDict.config)` (a non-enumerable property: the config it needs).
 * @throws {RangeError} naming the weight and its expected shape; {TypeError} for unknown names or partial biases.
 */
export declare function stateDictFromKeras(
  weights: KerasMultiHeadAttentionWeights | Tensor[]): KerasStateDict;

/** {@link stateDictFromKeras}'s result: a state dict carrying the config to load it into. */
export type KerasStateDict = Record<string, Float32Array> & {
  /** The layer config the state dict fits (non-enumerable): `new mha.MultiHeadAttention(sd.config)`. */
  readonly config: AttentionConfig;
};

/** The initializers around onnxruntime's fused `Attention` op (com.microsoft). */
export interface OnnxAttentionWeights {
  /** The op's `weights` input, [E, 3E], input-major; columns hold Q, K, V in that order. */
  weight: Tensor;
  /** The op's `bias` input, [3E]. */
  bias?: Tensor;
  /** The output projection, the `B` of the MatMul after the op: [E, E], input-major. */
  outputWeight: Tensor;
  /** The Add after that MatMul: [E]. */
  outputBias?: Tensor;
}

/**
 * onnxruntime's fused [E, 3E] Attention weights (plus the output MatMul) -> a PyTorch state dict.
 * Load it into `{ embedDim: E, numHeads: num_heads }` (with `bias: false` when there are no biases).
 * @throws {RangeError} naming the weight and its expected shape; {TypeError} for unknown names or one bias only.
 */
export declare function stateDictFromOnnxAttention(weights: OnnxAttentionWeights): Record<string, Float32Array>;

/** One linear layer of an ONNX model with quantized weights, as {@link MultiHeadAttention.loadQuantized} takes it. */
export interface OnnxLinear extends QuantizedTensor {
  /** 'q4' from MatMulNBits, 'int8' from the int8 forms. */
  dtype: 'int8' | 'q4';
  /** [out, in]. */
  shape: number[];
  /** One per output feature (int8) or per block of 32 (q4), float32. */
  scales: Float32Array;
  /** The op it came from: 'MatMulNBits', 'MatMul' (after DequantizeLinear), 'MatMulInteger', 'DynamicQuantizeMatMul', 'MatMulIntegerToFloat'. */
  op: string;
  /** The node's name (may be empty). */
  node: string;
  /** The name of the layer's output (the product, before any bias Add). */
  output: string;
  /** The weight initializer's name. */
  weight: string;
}

/** What {@link readOnnx} finds in an ONNX model. */
export interface OnnxModel {
  /** The linear layers with quantized constant weights, by node name, output name and weight name. */
  linears: Map<string, OnnxLinear>;
  /** The linear layer named `name` (its node's, its output's or its weight's name). @throws {TypeError} listing the names found. */
  linear(name: string): OnnxLinear;
  /** A float initializer (float32, float16 or double) as a Float32Array, e.g. a bias. */
  floats(name: string): Float32Array;
}

/**
 * The quantized linear layers of an ONNX model (transformers.js' q4 / q8 / int8 exports,
 * onnxruntime's quantizers): com.microsoft MatMulNBits with bits 4 and block_size 32 (zero points
 * kept), and int8 weights of DequantizeLinear -> MatMul, MatMulInteger -> Cast -> Mul
 * (quantize_dynamic), DynamicQuantizeMatMul and MatMulIntegerToFloat, with one scale per output
 * feature or one in all and q - zeroPoint within int8. Copies the bytes as they are.
 * @throws {TypeError | RangeError} for a file it cannot read, external data, or weights the
 *   formats cannot hold exactly (other block sizes or bit widths, asymmetric int8 beyond int8's range).
 */
export declare function readOnnx(bytes: Uint8Array | ArrayBuffer): OnnxModel;

// ---------------------------------------------------------------------------------------------
// The attention function (bindings/js/core/attention-function.js, docs/attention-function.md).
// A separate block, to be moved into its own file when index.d.ts is split; MhaModule below
// merges into the module's interface above.

/** A float tensor the attention function takes: Float32Array, or Float16Array where the runtime has it (computed in float32). */
export type AttentionFunctionTensor = Tensor<Float32Array> | { data: ArrayLike<number> & ArrayBufferView; shape: number[] };

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
  /** [B, Hkv, P, E] / [B, Hkv, P, Ev]: keys and values before `key` / `value`. */
  pastKey?: AttentionFunctionTensor;
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
  /** As the layer's variants: a sliding window of W keys, ALiBi slopes [Hq], sink logits [Hq]. */
  slidingWindow?: number;
  alibiSlopes?: Float32Array | number[];
  sinks?: Float32Array;
}

/** What {@link MhaModule.scaledDotProductAttention} returns. */
export interface AttentionFunctionResult {
  /** [B, Hq, L, Ev] ([Hq, L, Ev] unbatched; [B, L, Hq*Ev] for a 3-D query). */
  output: Tensor<Float32Array>;
  /** [B, Hkv, T, E] / [B, Hkv, T, Ev], with a past. */
  presentKey?: Tensor<Float32Array>;
  presentValue?: Tensor<Float32Array>;
  /** [B, Hq, L, T], with needWeights. */
  weights?: Tensor<Float32Array>;
  /** With capture: scores = scale q.k; capped = after softcap (with softcap only); logits = after the masks (-Infinity where blocked); pattern = the softmax. */
  steps?: { scores: Tensor<Float32Array>; capped?: Tensor<Float32Array>; logits: Tensor<Float32Array>; pattern: Tensor<Float32Array> };
  /** With grad: dLoss/d the inputs given dOut = dLoss/dOutput (the output's shape). */
  backward?(dOut: Tensor<Float32Array>): AttentionFunctionGradients;
  backwardAsync?(dOut: Tensor<Float32Array>): Promise<AttentionFunctionGradients>;
}

/** The gradients {@link AttentionFunctionResult.backward} returns, each in its input's shape. */
export interface AttentionFunctionGradients {
  query: Tensor<Float32Array>;
  key: Tensor<Float32Array>;
  value: Tensor<Float32Array>;
  /** With a past. */
  pastKey?: Tensor<Float32Array>;
  pastValue?: Tensor<Float32Array>;
}

export interface MhaModule {
  /**
   * Scaled dot-product attention on projected inputs (PyTorch's F.scaled_dot_product_attention,
   * ONNX's Attention, Keras' ops.dot_product_attention), on the layer's kernels. query
   * [B, Hq, L, E] (or [Hq, L, E], or [B, L, Hq*E] with numHeads), key [B, Hkv, S, E], value
   * [B, Hkv, S, Ev]; Hq a multiple of Hkv.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  scaledDotProductAttention(query: AttentionFunctionTensor, key: AttentionFunctionTensor, value: AttentionFunctionTensor,
    options?: AttentionFunctionOptions): AttentionFunctionResult;
  /** The same as a promise (on wasm the work runs now, on the calling thread). */
  scaledDotProductAttentionAsync(query: AttentionFunctionTensor, key: AttentionFunctionTensor, value: AttentionFunctionTensor,
    options?: AttentionFunctionOptions): Promise<AttentionFunctionResult>;
}

export interface WebGpuModule {
  /**
   * {@link MhaModule.scaledDotProductAttention} on this device, on the layer's GPU attention kernels:
   * CPU arrays in, CPU arrays out. Not here yet (refused by name): capture, grad, GPU-buffer
   * tensors, and a per-batch or negative causalOffset together with slidingWindow or alibiSlopes.
   */
  scaledDotProductAttentionAsync(query: AttentionFunctionTensor, key: AttentionFunctionTensor, value: AttentionFunctionTensor,
    options?: AttentionFunctionOptions): Promise<AttentionFunctionResult>;
}
