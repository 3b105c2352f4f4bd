// Types of the keras room (bindings/js/keras/): Keras' MultiHeadAttention on the core layer.
// index.d.ts re-exports them all.
/// <reference lib="esnext.disposable" />
import type {
  BoolMaskData, CapturedIf, FloatMaskData, MultiHeadAttention, StepName, StepPatch, Tensor, TensorIf, WeightDtype,
} from '../core/types.js';

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
  /** The output's feature size (default queryDim), or its last axes, as Keras' tuple output_shape: the output is [B, T, ...outputShape]. */
  outputShape?: number | number[];
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
   * [B, (other axes), H, (query's attended axes), (key's attended axes)]. A negative axis counts
   * from the end, as Keras'. On inputs of rank > 3 masks are not supported yet, and useCausalMask
   * needs one attended axis as long as axis 1 (Keras' [1, T, S] causal mask from axis 1).
   */
  attentionAxes?: number | number[];
  /**
   * Keras 3.15's gated attention (the core's `gate`): each head's output times a sigmoid gate from
   * the query's own projection; weights 'gate/kernel' [queryDim, H, valueDim] and 'gate/bias'
   * [H, valueDim] between the key's and the value's in get_weights() order. Default false.
   */
  useGate?: boolean;
  /**
   * Keras 3.15's sliding window W (the core's `slidingWindow`): query i attends to keys with
   * |i - j| < W; with useCausalMask, i - W < j <= i. A positive integer, or null (default: none).
   */
  slidingWindow?: number | null;
  /**
   * Keras' kernel_initializer for the layer's initial weights (a built layer is usable before
   * setWeights, as Keras'): 'glorotUniform' (default), 'glorotNormal', 'heUniform', 'heNormal',
   * 'lecunUniform', 'randomUniform', 'randomNormal', 'truncatedNormal', 'zeros', 'ones', 'constant'
   * (camelCase or snake_case), or { className, config } as Keras serializes one; seeded by `seed`.
   */
  kernelInitializer?: string | {
    /** The initializer's Keras class name, e.g. 'GlorotUniform'. */
    className: string;
    /** Its arguments as Keras serializes them (seed, mean, stddev, minval, maxval, value). */
    config?: Record<string, number>;
  };
  /** Keras' bias_initializer, as kernelInitializer; default 'zeros'. */
  biasInitializer?: string | {
    /** The initializer's Keras class name, e.g. 'GlorotUniform'. */
    className: string;
    /** Its arguments as Keras serializes them (seed, mean, stddev, minval, maxval, value). */
    config?: Record<string, number>;
  };
  /**
   * Keras' kernel_constraint, on every kernel (query, key, gate, value, attention_output):
   * 'nonNeg', 'maxNorm', 'minMaxNorm', 'unitNorm' (camelCase, snake_case or the class name), or
   * { className, config } as getConfig() writes it (config: maxValue, minValue, rate, axis; Keras'
   * defaults, axis 0). The layer has no optimizer: setWeights is its weight update, and projects
   * the weights it is given, as Keras' optimizer does after each step. Default none.
   */
  kernelConstraint?: KerasConstraintSpec;
  /** Keras' bias_constraint, on every bias: as kernelConstraint. Default none. */
  biasConstraint?: KerasConstraintSpec;
}

/** A Keras weight constraint, by name or as getConfig() writes it. */
export type KerasConstraintSpec = string | null | KerasConstraint | {
  /** The constraint's Keras class name: 'NonNeg', 'MaxNorm', 'MinMaxNorm' or 'UnitNorm'. */
  className: string;
  /** Its arguments (camelCase): maxValue, minValue, rate, axis. */
  config?: Record<string, number | number[]>;
};

/** A constraint the layer made from a {@link KerasConstraintSpec} (Keras' Constraint). */
export interface KerasConstraint {
  /** Keras' class name, e.g. 'NonNeg'. */
  getClassName(): string;
  /** Its arguments, as getConfig() writes them. */
  getConfig(): Record<string, number | number[]>;
  /** The weight `data` of row-major `shape` projected: a new array. */
  apply(data: Float32Array, shape: number[]): Float32Array;
}

/** One entry of {@link KerasMultiHeadAttention.weights}: a weight described, as Keras' layer.weights. */
export interface KerasWeightInfo {
  /** Keras' variable path, e.g. 'multi_head_attention/query/kernel'. */
  name: string;
  /** Its shape, in Keras' layout. */
  shape: number[];
  /** The kernelConstraint or biasConstraint that applies to it, or null. */
  constraint: KerasConstraint | null;
}

/** The Keras layer's arguments once it is built: every size known. */
export type ResolvedKerasConfig = Required<Omit<KerasConfig, 'seed' | 'kernelInitializer' | 'biasInitializer' | 'kernelConstraint' | 'biasConstraint'>>;

/** Options of {@link KerasMultiHeadAttention.call}, with Keras' meanings. */
export interface KerasCallOptions {
  /**
   * Keras' attention_mask: [T, S], [B, T, S] or [B, H, T, S], any dimension 1 broadcast (a rank-2
   * mask is [T, S]); nonzero / true = may attend (Keras' convention). The same data kinds as
   * {@link Mask}: any integer typed array, `boolean[]`, Float32Array or Float64Array.
   */
  attentionMask?: Tensor<BoolMaskData> | Tensor<FloatMaskData>;
  /**
   * Keras' implicit masks (an Embedding(mask_zero=True)'s), given explicitly: the query's [B, T], the
   * value's and the key's [B, S]; nonzero = a real token. Combined with attentionMask as Keras'
   * _compute_attention_mask combines them; the result then carries the query's as `mask`.
   * (valueMask is the [B, S] padding mask.)
   */
  queryMask?: Tensor<BoolMaskData>;
  /** The value's implicit mask [B, S] (Keras' value mask; the [B, S] padding mask): see queryMask. */
  valueMask?: Tensor<BoolMaskData>;
  /** The key's implicit mask [B, S] (default: valueMask's): see queryMask. */
  keyMask?: Tensor<BoolMaskData>;
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
  /** With `queryMask`: the output's implicit mask (the query's, as Keras sets it), 1 = a real token; absent otherwise. */
  mask?: Tensor<Uint8Array>;
}

/** Keras' MultiHeadAttention on this package's core (bindings/js/keras/keras.js). */
export interface KerasMultiHeadAttention {
  /** Every argument resolved. @throws {TypeError} before the layer is built (no call or setWeights yet). */
  readonly config: ResolvedKerasConfig;
  /** False until the input sizes are known (given, or taken from the first call or setWeights). */
  readonly built: boolean;
  /** The PyTorch-style layer underneath. @throws {TypeError} before the layer is built. */
  readonly layer: MultiHeadAttention;
  /** Keras' supports_masking: true (call takes queryMask, valueMask, keyMask). */
  readonly supportsMasking: true;
  /** Keras' get_config: the constructor's arguments (fromConfig makes the same layer from them). */
  getConfig(): KerasConfig;
  /**
   * Keras' compute_output_shape(query_shape, value_shape, key_shape = value_shape).
   * @throws {RangeError} when key and value differ in an axis other than the last.
   */
  computeOutputShape(queryShape: number[], valueShape: number[], keyShape?: number[] | null): number[];
  /** Keras' layer.weights, described (name, shape, constraint) in get_weights() order; empty before the layer is built. */
  readonly weights: KerasWeightInfo[];
  /** Keras' weight names and shapes, in the order of get_weights(). @throws {TypeError} before the layer is built. */
  weightShapes(): Record<string, number[]>;
  /**
   * get_weights()'s list ([{ data, shape }] or Float32Arrays) or a { 'query/kernel': ... } map, Keras
   * layouts. An unbuilt layer takes its input sizes from the tensors' shapes. kernelConstraint /
   * biasConstraint project the weights given (setWeights is this layer's weight update).
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
  /** Keras' from_config: a layer made from getConfig()'s arguments. */
  fromConfig(config: KerasConfig): KerasMultiHeadAttention;
  /** The layers' prototype (for `instanceof`). */
  readonly prototype: KerasMultiHeadAttention;
}
