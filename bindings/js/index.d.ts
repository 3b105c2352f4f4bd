/**
 * mha-wasm: multi-head attention with PyTorch `nn.MultiheadAttention` semantics
 * (batch-first, inference), compiled to SIMD WebAssembly.
 * @module mha-wasm
 */

// The types of each room (a folder of bindings/js/), then what index.js itself defines: init, its
// options and the wasm module it loads.
export * from './core/types.js';
export * from './keras/types.js';
export * from './webgpu/types.js';
export * from './formats/types.js';
import type {
  AttentionFunctionOptions, AttentionFunctionResult, AttentionFunctionTensor, BuildInfo, KernelChoice, KernelOptions, LinearBackwardOptions,
  LinearConstructor, LinearGradients, MultiHeadAttentionConstructor, Tensor,
} from './core/types.js';
import type { KerasMultiHeadAttentionConstructor } from './keras/types.js';
import type { WebGpuEntry, WebGpuModule } from './webgpu/types.js';

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
  /**
   * nn.Linear with its weights kept in wasm memory (f32, f16, int8 or q4): `new mha.Linear({ inFeatures,
   * outFeatures, bias, weightDtype })`, then loadWeights({ weight, bias }) and forward(x). See docs/training.md.
   */
  Linear: LinearConstructor;
  /** The layer class bound to this build: `new mha.MultiHeadAttention(config)`. */
  MultiHeadAttention: MultiHeadAttentionConstructor;
  /** Keras' MultiHeadAttention on the same core: `new mha.KerasMultiHeadAttention({ numHeads, keyDim })`. */
  KerasMultiHeadAttention: KerasMultiHeadAttentionConstructor;
  /** Bytes of wasm heap currently allocated (for leak checks). */
  heapAllocatedBytes(): number;
  /** The most bytes the wasm heap can grow to (the build's maximum memory: 4 GiB for wasm32). */
  heapLimitBytes(): number;
  /** Total size of the wasm linear memory, in bytes. */
  memoryBytes(): number;
  /** Which build was loaded. */
  build: BuildInfo;
  /**
   * Which variant of each hot kernel runs (the GEMM's register tile, ...), how it was chosen
   * (calibrated on this machine at load, saved by an earlier process, or forced) and the
   * calibration's rates. Process-wide for this build.
   */
  kernelChoice(): KernelChoice;

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
   * undefined (default): the relaxed-SIMD builds where the engine has relaxed SIMD (Chrome 114+,
   * Node 22+, Firefox 145+), whose fused multiply-add makes the matrix products up to twice as
   * fast on CPUs with FMA; false: the plain SIMD128 builds (results bit for bit those of engines
   * without relaxed SIMD); true: force them (fails to load where unsupported; needs SIMD).
   */
  relaxedSimd?: boolean;
  /**
   * Threads for a forward pass. Default: every core, where threads work (Node; cross-origin-isolated
   * pages), else 1 quietly. 1: a single-thread build. N > 1 where threads are impossible: one thread
   * and a console warning.
   */
  threads?: number;
  /** 'wasm' (default): this module. 'webgpu': a {@link WebGpuModule} (see {@link WebGpuInitOptions}). */
  backend?: 'wasm';
  /**
   * Forces kernel variants by name (for tests and benchmarks), e.g. `{ gemm: '4x8' }`, instead of
   * the one calibrated on this machine ({@link MhaModule.kernelChoice}). Process-wide: on a build
   * already loaded, the latest init's wins.
   * @throws {TypeError} (as a rejection) naming an unknown kernel or variant.
   */
  kernels?: KernelOptions;
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
