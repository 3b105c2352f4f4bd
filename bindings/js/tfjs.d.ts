/**
 * mha-wasm/tfjs: mha-wasm's attention as a trainable tfjs-layers layer, and opt-in fast gradient
 * kernels for Embedding and Conv1D. `@tensorflow/tfjs` is an optional peer dependency: pass your
 * own namespace so the layer registers with the tfjs instance your model uses.
 * @module mha-wasm/tfjs
 */
import type { GpuTensor, GpuTensorInput, InitOptions, MhaModule, WebGpuBuffer, WebGpuModule } from './index.js';

/** The tfjs namespace (`import * as tf from '@tensorflow/tfjs'`); typed loosely so this package needs no tfjs types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Tfjs = any;

/** Keras' MultiHeadAttention arguments, as tfjs-layers' port names them. */
export interface MultiHeadAttentionArgs {
  /** Number of attention heads (Keras' num_heads). */
  numHeads: number;
  /** Size of each head's queries and keys (Keras' key_dim). */
  keyDim: number;
  /** Size of each head's values. Default keyDim. */
  valueDim?: number;
  /** Attention-probability dropout, applied when called with training (model.fit). Default 0. */
  dropout?: number;
  /** Biases on the four projections. Default true. */
  useBias?: boolean;
  /** The output's feature size (default: the query's), or its last axes, as Keras' tuple output_shape: [B, T, ...outputShape]. */
  outputShape?: number | number[];
  /** Axes of a [batch, ..., features] input attended over (between 1 and rank - 2). Default all of them. */
  attentionAxes?: number | number[];
  /** The kernels' initializer: a tf.initializers object, its name ('glorotUniform') or its { className, config }. Default 'glorotUniform'. */
  kernelInitializer?: unknown;
  /** The biases' initializer, as kernelInitializer. Default 'zeros'. */
  biasInitializer?: unknown;
  /** A tf.regularizers object (or its { className, config }) applied to the four kernels. */
  kernelRegularizer?: unknown;
  /** A tf.regularizers object (or its { className, config }) applied to the four biases. */
  biasRegularizer?: unknown;
  /** A tf.regularizers object applied to the layer's output. */
  activityRegularizer?: unknown;
  /** A tf.constraints object, its name or its { className, config }, for the four kernels. */
  kernelConstraint?: unknown;
  /** A tf.constraints object, its name or its { className, config }, for the four biases. */
  biasConstraint?: unknown;
  /** The query's shape Keras' get_config writes once built ([null, T, features]; a converted model's config has it): the query's features must match. */
  queryShape?: (number | null)[] | null;
  /** The key's shape as Keras writes it, checked as queryShape. */
  keyShape?: (number | null)[] | null;
  /** The value's shape as Keras writes it, checked as queryShape. */
  valueShape?: (number | null)[] | null;
  /** tf.layers' common arguments: name, trainable, inputShape, ... */
  name?: string;
  /** Whether model.fit updates the layer's weights. Default true. */
  trainable?: boolean;
  /**
   * Keras 3.15's gated attention: a sigmoid gate from the query's own projection on each head's
   * output; weights gate/kernel [query, H, valueDim] and gate/bias [H, valueDim] between key's
   * and value's. (A gated layer computes on the wasm module, also on tfjs' WebGPU backend.) Default false.
   */
  useGate?: boolean;
  /** Keras 3.15's sliding window W: |i - j| < W (i - W < j <= i with useCausalMask). Default null (none). */
  slidingWindow?: number | null;
  /**
   * Keras' quantize('int8') as an argument: how the wasm layer stores the projection weights ('f16',
   * 'int8', 'q4'; docs/quantized.md). The variables keep the float32 weights (getWeights,
   * setWeights); they are not trainable, and the inputs' gradients go through the dequantized
   * weights. A quantized layer computes on the wasm module, also on tfjs' WebGPU backend. Default 'f32'.
   */
  weightDtype?: 'f32' | 'f16' | 'int8' | 'q4';
  /** tf.layers.Layer's other arguments (inputShape, batchInputShape, batchSize, dtype, inputDType, weights); any other key is an Error naming it. */
  [layerArg: string]: unknown;
}

/** apply(query, args): Keras' call arguments. Tensors or SymbolicTensors (all of one kind). */
export interface MultiHeadAttentionCallArgs {
  /** The value tensor [B, S, features] (self-attention: the query itself). */
  value: unknown;
  /** The key tensor [B, S, features]. Default value. */
  key?: unknown;
  /** [B, T, S] (or [T, S], or [B, S]); 1 = attend. With attentionAxes on a rank > 3 input: [other axes..., query's attended axes..., key's attended axes...]. */
  attentionMask?: unknown;
  /** Causal self-attention: query i attends to keys 0..i only. Default false. */
  useCausalMask?: boolean;
  /** Also return the scores [B, (other axes), H, T, S]: apply then returns [output, scores]. */
  returnAttentionScores?: boolean;
  /** Training mode (dropout on). model.fit passes it; default false. */
  training?: boolean;
}

/** A tf.layers.Layer subclass; weights in Keras' layout and order (query kernel, bias, key ..., output ...). */
export interface MultiHeadAttentionLayer {
  /** Keras' call: the output [B, T, outputShape] (with returnAttentionScores: [output, scores]), eagerly or symbolically. */
  apply(query: unknown, args: MultiHeadAttentionCallArgs): unknown;
  /** The weights as tensors, in Keras' order: query/kernel [in, H, keyDim], query/bias [H, keyDim], key/..., value/..., attention_output/kernel [H, valueDim, out], attention_output/bias [out]. */
  getWeights(): unknown[];
  /** Sets the weights from tensors in getWeights()' order and shapes (Keras' get_weights() order); a wrong count or shape is a RangeError naming the weight. */
  setWeights(weights: unknown[]): void;
  /** The weights' tf.LayerVariables, in getWeights()' order. */
  readonly trainableWeights: unknown[];
  /** The layer's configuration (its constructor arguments), for serialization. */
  getConfig(): Record<string, unknown>;
  /** Frees the layer's mha-wasm memory and its tfjs variables (a model's dispose() calls it). */
  dispose(): unknown;
  /** The rest of tf.layers.Layer's members. */
  [member: string]: unknown;
}

/** registerFastGradients' options. */
export interface FastGradientsOptions {
  /** Backends to register with. Default ['cpu', 'wasm']. */
  backends?: string[];
}

/** What registerFastGradients registered. */
export interface FastGradientsRegistration {
  /** The backends it was asked to register with. */
  readonly backends: string[];
  /** Puts back the kernels registered before. */
  restore(): void;
}

/** The kernels registerFastGradients registers: UnsortedSegmentSum (Embedding), Conv2DBackpropFilter, Conv2D and Conv2DBackpropInput (Conv1D), Add (a bias). */
export declare const FAST_GRADIENT_KERNELS: readonly string[];

/**
 * Registers fast kernels for training Embedding and Conv1D layers with tf: UnsortedSegmentSum
 * (Embedding's gradient) and Conv2DBackpropFilter (channels-last, Conv1D's filter gradient) for the
 * given backends, and on cpu Conv2D and Conv2DBackpropInput for Conv1D's case (stride 1, dilation 1)
 * and Add for a float32 bias along the last axes (other cases go to tfjs' own kernels), in place of
 * tfjs' own.
 */
export declare function registerFastGradients(tf: Tfjs, options?: FastGradientsOptions): FastGradientsRegistration;

/** The layer class MhaTfjs.MultiHeadAttention. */
export interface MultiHeadAttentionClass {
  /** A layer with Keras' arguments; its weights are made when it is first applied (input sizes inferred). */
  new (args: MultiHeadAttentionArgs): MultiHeadAttentionLayer;
  /** Keras' class name, under which tfjs serializes the layer: 'MultiHeadAttention'. */
  readonly className: string;
}

/** What mhaTfjs returns: the layer bound to one tfjs namespace and one mha-wasm module. */
export interface MhaTfjs {
  /** The layer class (a tf.layers.Layer subclass, registered for serialization as 'MultiHeadAttention'). */
  MultiHeadAttention: MultiHeadAttentionClass;
  /** The layer's factory, as tf.layers.* are: new MultiHeadAttention(args). */
  multiHeadAttention(args: MultiHeadAttentionArgs): MultiHeadAttentionLayer;
  /** registerFastGradients(tf, options) for this tf. */
  registerFastGradients(options?: FastGradientsOptions): FastGradientsRegistration;
  /** The loaded mha-wasm module (init()'s result) the layer computes with. */
  module: MhaModule;
  /** With `webgpu: true`: mha-wasm's WebGPU module on tfjs' device (init({ backend: 'webgpu', device })), where the attention runs while tfjs is on 'webgpu'; else null. */
  gpu: WebGpuModule | null;
}

/** mhaTfjs' options: init()'s, and webgpu. */
export interface MhaTfjsOptions extends InitOptions {
  /**
   * Run the layer's attention on mha-wasm's WebGPU backend on tfjs' own GPUDevice whenever tfjs is
   * on its 'webgpu' backend (tfjs' GPU tensors read and written on the GPU, no readback; the wasm
   * module otherwise). tfjs must be on 'webgpu' when mhaTfjs is called. Default false: on the
   * software adapter measured it is slower than reading back (docs/tfjs.md).
   */
  webgpu?: boolean;
}

/**
 * Binds mha-wasm to `tf` (default: import('@tensorflow/tfjs'); a clear Error when it is not
 * installed) and loads the wasm module with init()'s options. The same tf gets the same class.
 */
export declare function mhaTfjs(tf?: Tfjs, initOptions?: MhaTfjsOptions): Promise<MhaTfjs>;

/** {@link tfjsToGpu}'s result: a GPU copy of a tfjs tensor, a {@link GpuTensorInput} for a WebGPU layer on tfjs' device. */
export interface TfjsGpuInput extends GpuTensorInput {
  /** Gives tfjs' copy back to tfjs (after the calls that read it were made). */
  dispose(): void;
}

/**
 * A float32 tfjs tensor (tfjs' 'webgpu' backend) as a GPU input for an mha-wasm WebGPU layer made
 * on tfjs' device (`init({ backend: 'webgpu', device: tf.backend().device })`): its values copied
 * on the GPU (`tensor.dataToGPU()`), never through the CPU. An Error when tfjs' backend is not 'webgpu'.
 */
export declare function tfjsToGpu(tf: Tfjs, tensor: unknown): TfjsGpuInput;

/** Options of {@link gpuToTfjs}. */
export interface GpuToTfjsOptions {
  /** The tfjs tensor reads the buffer itself (no copy): dispose the tensor before the GPU tensor. Default false: tfjs copies it on the GPU and owns its copy. */
  zeroCopy?: boolean;
}

/**
 * A GPU tensor (an `outputLocation: 'gpu'` result, or `{ buffer, shape }` with usage STORAGE |
 * COPY_SRC on tfjs' device) as a float32 tfjs tensor: `tf.tensor({ buffer, zeroCopy }, shape)`.
 */
export declare function gpuToTfjs(tf: Tfjs, gpuTensor: GpuTensor | { buffer: WebGpuBuffer; shape: number[] }, options?: GpuToTfjsOptions): unknown;
