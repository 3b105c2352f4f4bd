/**
 * mha-wasm/tfjs: mha-wasm's attention as a trainable tfjs-layers layer, and opt-in fast gradient
 * kernels for Embedding and Conv1D. `@tensorflow/tfjs` is an optional peer dependency: pass your
 * own namespace so the layer registers with the tfjs instance your model uses.
 */
import type { InitOptions, MhaModule } from './index.js';

/** The tfjs namespace (`import * as tf from '@tensorflow/tfjs'`); typed loosely so this package needs no tfjs types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Tfjs = any;

/** Keras' MultiHeadAttention arguments, as tfjs-layers' port names them. */
export interface MultiHeadAttentionArgs {
  numHeads: number;
  keyDim: number;
  /** Default keyDim. */
  valueDim?: number;
  /** Attention-probability dropout, applied when called with training (model.fit). Default 0. */
  dropout?: number;
  /** Biases on the four projections. Default true. */
  useBias?: boolean;
  /** Output features. Default the query's features. */
  outputShape?: number | [number];
  /** Axes of a [batch, ..., features] input attended over (between 1 and rank - 2). Default all of them. */
  attentionAxes?: number | number[];
  kernelInitializer?: unknown;
  biasInitializer?: unknown;
  kernelRegularizer?: unknown;
  biasRegularizer?: unknown;
  activityRegularizer?: unknown;
  kernelConstraint?: unknown;
  biasConstraint?: unknown;
  /** tf.layers' common arguments: name, trainable, inputShape, ... */
  name?: string;
  trainable?: boolean;
  [layerArg: string]: unknown;
}

/** apply(query, args): Keras' call arguments. Tensors or SymbolicTensors (all of one kind). */
export interface MultiHeadAttentionCallArgs {
  value: unknown;
  key?: unknown;
  /** [B, T, S] (or [T, S], or [B, S]); 1 = attend. */
  attentionMask?: unknown;
  useCausalMask?: boolean;
  /** Also return the scores [B, (other axes), H, T, S]: apply then returns [output, scores]. */
  returnAttentionScores?: boolean;
  training?: boolean;
}

/** A tf.layers.Layer subclass; weights in Keras' layout and order (query kernel, bias, key ..., output ...). */
export interface MultiHeadAttentionLayer {
  apply(query: unknown, args: MultiHeadAttentionCallArgs): unknown;
  getWeights(): unknown[];
  setWeights(weights: unknown[]): void;
  readonly trainableWeights: unknown[];
  getConfig(): Record<string, unknown>;
  dispose(): unknown;
  [member: string]: unknown;
}

export interface FastGradientsOptions {
  /** Backends to register with. Default ['cpu', 'wasm']. */
  backends?: string[];
}

export interface FastGradientsRegistration {
  readonly backends: string[];
  /** Puts back the kernels registered before. */
  restore(): void;
}

/** The kernels registerFastGradients registers: UnsortedSegmentSum (Embedding) and Conv2DBackpropFilter (Conv1D). */
export declare const FAST_GRADIENT_KERNELS: readonly string[];

/**
 * Registers fast UnsortedSegmentSum (Embedding's gradient) and Conv2DBackpropFilter (channels-last,
 * Conv1D's filter gradient) kernels with tf for the given backends, in place of tfjs' own.
 */
export declare function registerFastGradients(tf: Tfjs, options?: FastGradientsOptions): FastGradientsRegistration;

export interface MhaTfjs {
  MultiHeadAttention: new (args: MultiHeadAttentionArgs) => MultiHeadAttentionLayer;
  multiHeadAttention(args: MultiHeadAttentionArgs): MultiHeadAttentionLayer;
  registerFastGradients(options?: FastGradientsOptions): FastGradientsRegistration;
  module: MhaModule;
}

/**
 * Binds mha-wasm to `tf` (default: import('@tensorflow/tfjs'); a clear Error when it is not
 * installed) and loads the wasm module with init()'s options. The same tf gets the same class.
 */
export declare function mhaTfjs(tf?: Tfjs, initOptions?: InitOptions): Promise<MhaTfjs>;
