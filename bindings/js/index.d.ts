/**
 * mha-wasm: multi-head attention with PyTorch `nn.MultiheadAttention` semantics
 * (batch-first, inference), compiled to SIMD WebAssembly.
 */

/** A dense row-major tensor. `data.length` must equal the product of `shape`. */
export interface Tensor<T extends Float32Array | Uint8Array = Float32Array> {
  data: T;
  shape: number[];
}

/**
 * A mask. `Uint8Array` data is a bool mask (nonzero = true = blocked / ignored, PyTorch's meaning);
 * `Float32Array` data is added to the attention scores before the softmax (`-Infinity` blocks).
 */
export type Mask = Tensor<Uint8Array> | Tensor<Float32Array>;

export interface AttentionConfig {
  /** E: the query (and output) feature size. */
  embedDim: number;
  /** H: number of heads; must divide embedDim. */
  numHeads: number;
  /** Key feature size (default embedDim). */
  kdim?: number;
  /** Value feature size (default embedDim). */
  vdim?: number;
  /** in_proj_bias and out_proj.bias (default true). */
  bias?: boolean;
  /** Key/value heads for grouped-query (or multi-query, 1) attention; must divide numHeads (default numHeads). */
  numKvHeads?: number;
  /** Softmax scale (default 1 / sqrt(embedDim / numHeads)). */
  scale?: number;
}

/** The configuration with every default filled in. */
export interface ResolvedConfig extends Required<AttentionConfig> {
  /** embedDim / numHeads. */
  headDim: number;
}

export interface ForwardOptions {
  /** Query i may not attend to keys j > i (top-left aligned, as PyTorch's is_causal). Default false. */
  causal?: boolean;
  /** [B, S] ([S] for unbatched input). Bool: true = this key is padding, ignore it. Float: added. */
  keyPaddingMask?: Mask;
  /** [L, S], or [B*numHeads, L, S] ([numHeads, L, S] unbatched). Bool: true = blocked. Float: added. */
  attnMask?: Mask;
  /** Also return the attention probabilities. Default false (faster, less memory). */
  needWeights?: boolean;
  /** With needWeights: average over heads ([B, L, S]) instead of per head ([B, H, L, S]). Default true. */
  averageWeights?: boolean;
}

export interface ForwardResult {
  /** [B, L, embedDim], or [L, embedDim] for unbatched input. A copy the caller owns. */
  output: Tensor<Float32Array>;
  /**
   * The softmax probabilities, [B, H, L, S] or averaged [B, L, S] (no B for unbatched input);
   * null unless needWeights. A query row whose every key is masked gets zero weights (PyTorch: NaN).
   */
  weights: Tensor<Float32Array> | null;
}

/**
 * A PyTorch `nn.MultiheadAttention` state dict with Float32Array values: `in_proj_weight` or
 * `q_proj_weight`/`k_proj_weight`/`v_proj_weight`, `in_proj_bias`, `out_proj.weight`, `out_proj.bias`.
 */
export type StateDict = Record<string, Float32Array> | Map<string, Float32Array>;

export declare class MultiHeadAttention {
  /** @throws {TypeError | RangeError} for a bad config, e.g. numHeads not dividing embedDim. */
  constructor(config: AttentionConfig);
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
   * query [B, L, E] or [L, E]; key [B, S, kdim] and value [B, S, vdim], or null for self-attention.
   * A query row with every key masked gives zero attention: its output is out_proj.bias.
   * @throws {TypeError | RangeError} naming the argument and the expected shape.
   */
  forward(query: Tensor, key?: Tensor | null, value?: Tensor | null, options?: ForwardOptions): ForwardResult;
  /** Frees the layer's wasm memory. Calling it again does nothing; other methods then throw. */
  dispose(): void;
}

export interface BuildInfo {
  simd: boolean;
  threads: boolean;
  name: string;
}

export interface MhaModule {
  MultiHeadAttention: typeof MultiHeadAttention;
  /** Bytes of wasm heap currently allocated (for leak checks). */
  heapAllocatedBytes(): number;
  /** Total size of the wasm linear memory, in bytes. */
  memoryBytes(): number;
  /** Which build was loaded. */
  build: BuildInfo;
}

export interface InitOptions {
  /** Where to load the .wasm from (default: next to this module). */
  wasmUrl?: string | URL;
}

/** Loads the WebAssembly module. Single-flight: later calls return the same promise. */
export declare function init(options?: InitOptions): Promise<MhaModule>;
