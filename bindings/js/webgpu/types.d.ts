// Types of the webgpu room (bindings/js/webgpu/): the WebGPU backend's module, layers, GPU
// tensors, KV caches, gradients and AdamW. index.d.ts re-exports them all.
/// <reference lib="esnext.disposable" />
import type {
  AttentionConfig, AttentionFunctionGradients, AttentionFunctionOptions, AttentionFunctionResult, AttentionFunctionTensor, CapturedIf, CreateCacheOptions, ForwardOptions, Gradients, InitializeOptions, KvCache,
  MultiHeadAttention, QuantizedStateDict, RaggedForwardOptions, RaggedForwardResult, RaggedTensor, RaggedTrainingResult, StateDict, StepPatch,
  Tensor,
} from '../core/types.js';
import type { KerasConfig, KerasMultiHeadAttention } from '../keras/types.js';

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
   * A ragged batch (CPU tensors; see the wasm layer's ragged forward): each sequence runs as its
   * own unbatched call on the GPU, the output read back packed (outputLocation 'gpu' is refused).
   */
  forwardAsync(query: RaggedTensor, key: RaggedTensor | null | undefined, value: RaggedTensor | null | undefined,
    options: RaggedForwardOptions & { grad: true; outputLocation?: 'cpu' }): Promise<RaggedTrainingResult>;
  /** A ragged batch (see the overload above). */
  forwardAsync(query: RaggedTensor, key?: RaggedTensor | null, value?: RaggedTensor | null,
    options?: RaggedForwardOptions & { outputLocation?: 'cpu' }): Promise<RaggedForwardResult>;
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

  /**
   * {@link MhaModule.scaledDotProductAttention} on this device, on the layer's GPU attention kernels
   * (docs/attention-function.md): the same options and results, plus GPU tensors in (query, key,
   * value, pastKey, pastValue may be {@link GpuTensorInput}s) and out (`outputLocation: 'gpu'`).
   * With grad the result keeps its buffers on the GPU for one backwardAsync (or release()), as a
   * {@link WebGpuTrainingResult}. Not here yet (refused by name): dropout with a per-batch
   * causalOffset whose offsets differ.
   */
  scaledDotProductAttentionAsync(query: WebGpuAttentionFunctionTensor, key: WebGpuAttentionFunctionTensor, value: WebGpuAttentionFunctionTensor,
    options: WebGpuAttentionFunctionOptions & { outputLocation: 'gpu' }): Promise<WebGpuAttentionFunctionResult<GpuTensor>>;
  /** The same, results read back to the CPU (outputLocation 'cpu', the default). */
  scaledDotProductAttentionAsync(query: WebGpuAttentionFunctionTensor, key: WebGpuAttentionFunctionTensor, value: WebGpuAttentionFunctionTensor,
    options?: WebGpuAttentionFunctionOptions): Promise<WebGpuAttentionFunctionResult>;
}

/** A tensor {@link WebGpuModule.scaledDotProductAttentionAsync} takes: CPU arrays, or float32 values already on the module's device. */
export type WebGpuAttentionFunctionTensor = AttentionFunctionTensor | GpuTensorInput;

/** {@link AttentionFunctionOptions} on WebGPU: the pasts may be on the GPU; results may stay there. */
export interface WebGpuAttentionFunctionOptions extends Omit<AttentionFunctionOptions, 'pastKey' | 'pastValue'> {
  /** [B, Hkv, P, E]: keys before `key`, on the CPU or the GPU. */
  pastKey?: WebGpuAttentionFunctionTensor;
  /** [B, Hkv, P, Ev]: values before `value`, on the CPU or the GPU. */
  pastValue?: WebGpuAttentionFunctionTensor;
  /** 'cpu' (default): Float32Array results. 'gpu': {@link GpuTensor}s that stay on the device (the steps too). */
  outputLocation?: 'cpu' | 'gpu';
}

/** {@link AttentionFunctionGradients} with each gradient an `R`. */
export interface WebGpuAttentionFunctionGradients<R> {
  /** dLoss/dquery, in the query's shape. */
  query: R;
  /** dLoss/dkey, in the key's shape. */
  key: R;
  /** dLoss/dvalue, in the value's shape. */
  value: R;
  /** dLoss/dpastKey, with a past. */
  pastKey?: R;
  /** dLoss/dpastValue, with a past. */
  pastValue?: R;
}

/** {@link AttentionFunctionResult} on WebGPU, each result an `R` (a {@link GpuTensor} with outputLocation 'gpu'). */
export interface WebGpuAttentionFunctionResult<R = Tensor<Float32Array>> {
  /** [B, Hq, L, Ev] ([Hq, L, Ev] unbatched; [B, L, Hq*Ev] for a 3-D query). */
  output: R;
  /** [B, Hkv, T, E]: pastKey then key, with a past. */
  presentKey?: R;
  /** [B, Hkv, T, Ev]: pastValue then value, with a past. */
  presentValue?: R;
  /** [B, Hq, L, T], with needWeights. */
  weights?: R;
  /** With capture: the steps, as {@link AttentionFunctionResult.steps}. */
  steps?: {
    /** [B, Hq, L, T]: the scaled q.k. */
    scores: R;
    /** [B, Hq, L, T]: after softcap, before the masks (with softcap only). */
    capped?: R;
    /** [B, Hq, L, T]: after softcap and the masks, -Infinity where blocked. */
    logits: R;
    /** [B, Hq, L, T]: the softmax. */
    pattern: R;
  };
  /**
   * With grad: dLoss/d the inputs given dOut (the output's shape; on the CPU or the GPU), computed
   * on the GPU: the wasm function's gradients, to float32 rounding. Call once. `outputLocation`:
   * where the gradients go (default: where the output went).
   */
  backwardAsync?(dOut: Tensor<Float32Array> | GpuTensorInput, options: WebGpuBackwardOptions & { outputLocation: 'cpu' }): Promise<AttentionFunctionGradients>;
  /** The same, the gradients left on the GPU as {@link GpuTensor}s. */
  backwardAsync?(dOut: Tensor<Float32Array> | GpuTensorInput, options: WebGpuBackwardOptions & { outputLocation: 'gpu' }): Promise<WebGpuAttentionFunctionGradients<GpuTensor>>;
  /** The same, the gradients where the output went. */
  backwardAsync?(dOut: Tensor<Float32Array> | GpuTensorInput, options?: WebGpuBackwardOptions): Promise<WebGpuAttentionFunctionGradients<R>>;
  /** With grad: frees what the call kept on the GPU, without a backward. */
  release?(): void;
  /** With grad: true once backwardAsync() or release() ran. */
  readonly released?: boolean;
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

/** A GPU object (navigator.gpu's type), as the WebGPU backend uses it. */
export interface WebGpuEntry {
  /** GPU.requestAdapter: resolves to an adapter, or null where none is available. */
  requestAdapter(options?: object): Promise<unknown>;
}
