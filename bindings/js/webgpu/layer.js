// MultiHeadAttention on WebGPU: the same config, weights and options as the wasm layer, with
// forwardAsync instead of forward. It owns a wasm layer of the same config, which validates the
// config and holds the weights (loadStateDict, initialize, stateDict), and a weightless planner
// handle that validates each call and plans its shapes (the C++ plan_forward: one source of
// truth). This file is the orchestration: weights on the GPU (weights.js), each call checked
// (#prepare) against the device's limits (device-limits.js), its kernels chosen (kernel-plan.js),
// encoded (forward-pass.js, steps.js, backward.js) and submitted in error scopes (gpu-work.js),
// its results shaped (tensors.js); KV caches in cache.js.
import { noWeightsYet, withCallName } from '../api/errors.js';
import { throwHandleError } from '../core/handle-errors.js';
import { readForwardCall, readRaggedCall } from '../api/call-reader.js';
import { checkDtypeOnBackend } from '../api/options.js';
import { PLANNER } from '../core/planner.js';
import { describe } from '../api/validate.js';
import { appendedKeysOf } from './appended-keys.js';
import { runBackward, submitBackwardNow } from './backward.js';
import { checkCache, createGpuCache, runWithCache, setKeyValueOnGpu } from './cache.js';
import { checkCallLimits, limitChecks } from './device-limits.js';
import { lostError } from './device.js';
import { callInputs, encodeForward, forwardCallOf } from './forward-pass.js';
import { failWithLoss, submitChecked } from './gpu-work.js';
import { gemmChoiceOf, planKernels } from './kernel-plan.js';
import { checkWebGpuPatch, encodeCallSteps } from './steps.js';
import { encodeSwapPass, isSequenceFirst } from './sequence-first.js';
import { CallBuffers, callResults, checkFiniteOnGpu, checkGpuInputs, checkInput, gpuTensor } from './tensors.js';
import { freeGpuRecord, gpuTrainingRecord, GpuTrainingResult, savedForward } from './training.js';
import { LayerWeights } from './weights.js';

const count = (shape) => shape.reduce((n, d) => n * d, 1);
/**
 * The synchronous GPU entry point mha-wasm/tfjs uses on tfjs' device (tfjs' layers call
 * synchronously; tfjs submits its own work in between): [SUBMIT_NOW](query, key, value, options)
 * submits forwardAsync's work at once for GPU inputs and outputs. Not public API.
 */
export const SUBMIT_NOW = Symbol('mha-wasm webgpu: submit now');
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

/**
 * The layer, given its device (`gpu`: { device, adapterInfo, lost, ... } from openDevice) and the
 * wasm module at construction; defineWebGpuMultiHeadAttention binds both for the public class.
 */
export class GpuMultiHeadAttention {
  #gpu;
  #device;
  #limits;   // limitChecks of the device
  #layer;    // the wasm layer: config, weights
  #planner;  // a weightless LayerHandle of the same config: validation and shapes
  #config;
  #weights;  // LayerWeights: the wasm layer's weights on the GPU, or GPU tensors' copies
  #caches = new Set();  // alive caches this layer made; dispose() frees them
  #nextSeed;  // dropout's seed for the next training call that gives none (as the wasm layer's)
  #disposed = false;
  #trainingRecords = new Set();  // forward results with grad whose GPU buffers are still held; dispose() frees them

  constructor(gpu, wasm, config) {
    checkDtypeOnBackend('webgpu', config?.dtype);  // (dtype 'float64' is the wasm backend's: WGSL has no 64-bit floats)
    this.#gpu = gpu;
    this.#device = gpu.device;
    this.#limits = limitChecks(gpu.device.limits);
    this.#layer = new wasm.MultiHeadAttention(config);
    this.#config = this.#layer.config;
    this.#planner = wasm[PLANNER](this.#config);
    this.#weights = new LayerWeights(this.#device, this.#layer, this.#config);
    this.#nextSeed = config.seed ?? Math.floor(Math.random() * 2 ** 32);
  }

  #live(call) {
    if (this.#disposed) throw new TypeError(`MultiHeadAttention.${call}: this layer was disposed`);
    if (this.#gpu.lost) throw lostError(call, this.#gpu.lost);
  }

  get backend() { return 'webgpu'; }
  get config() { return this.#layer.config; }
  get byteSize() { return this.#layer.byteSize; }
  get alive() { return !this.#disposed; }
  /** True while the device works; false once it was lost (the layer is unusable then). */
  get usable() { return !this.#disposed && !this.#gpu.lost; }
  stateDictShapes() { return this.#layer.stateDictShapes(); }
  stateDict() { return this.#weights.stateDict(); }

  /**
   * The wasm layer's loadStateDict; or, when the values are { buffer, shape } GPU tensors, their
   * contents copied on the GPU into the layer's weights (weights.js), the GPU's verdict awaited by
   * the next call.
   */
  loadStateDict(stateDict) {
    this.#live('loadStateDict');
    try {
      this.#weights.load(stateDict);
    } catch (error) {
      throw withCallName(error, 'loadStateDict');
    }
    return this;
  }

  /** Weights already quantized, as the wasm layer's loadQuantized takes them (docs/quantized.md). */
  loadQuantized(weights) {
    this.#live('loadQuantized');
    this.#layer.loadQuantized(weights);
    this.#weights.changed();
    return this;
  }

  initialize(options = {}) {
    this.#live('initialize');
    this.#layer.initialize(options);
    this.#weights.changed();
    return this;
  }

  /** Whether the layer has weights (in the wasm layer, or loaded from GPU tensors). */
  get #hasWeights() { return this.#weights.loaded; }

  /** The kernels of a call of `sizes` (kernel-plan.js), on this device. */
  #kernels(sizes) {
    return planKernels(this.#config, sizes, gemmChoiceOf(this.#device, this.#gpu.adapterInfo));
  }

  /**
   * A KV cache on the GPU for decoding: `batch` rows of up to `capacity` tokens (float32). Its
   * memory is taken now.
   */
  createCache(options) {
    try {
      this.#live('createCache');
      const cache = createGpuCache({
        device: this.#device, config: this.#config, planner: this.#planner, checkSize: this.#limits.checkSize,
        setKeyValue: (made, key, value) => this.#setKeyValue(made, key, value), onDispose: (made) => this.#caches.delete(made),
      }, options);
      this.#caches.add(cache);
      return cache;
    } catch (error) {
      throw withCallName(error, 'createCache');
    }
  }

  /** cache.setKeyValue on the GPU (cache.js). */
  #setKeyValue(cache, key, value) {
    try {
      this.#live('setKeyValue');
      setKeyValueOnGpu({ device: this.#device, config: this.#config, planner: this.#planner, weights: this.#weights,
        kernels: (sizes) => this.#kernels(sizes) }, cache, key, value);
    } catch (error) {
      throw withCallName(error, 'setKeyValue');
    }
  }

  forward() {
    throw new TypeError('forward: a WebGPU layer runs asynchronously (no hidden synchronous readback); '
      + 'use await layer.forwardAsync(query, key, value, options)');
  }

  backward() {
    throw new TypeError('backward: a WebGPU layer has no synchronous backward; use '
      + 'await (await layer.forwardAsync(query, key, value, { grad: true })).backwardAsync(dOut)');
  }

  async forwardAsync(query, key = null, value = null, options = {}) {
    try {
      this.#live('forwardAsync');
      const ragged = readRaggedCall(query, key, value, options);  // (one call per sequence, joined)
      if (ragged && options?.outputLocation === 'gpu') {
        throw new TypeError("outputLocation: 'gpu' not with ragged inputs (the sequences' outputs are joined on the CPU); use 'cpu'");
      }
      if (ragged) return await ragged.runAsync((...args) => this.forwardAsync(...args));
      const call = this.#prepare(query, key, value, options);
      return await runWithCache(call.cache, () => this.#run(call));
    } catch (error) {
      throw withCallName(error, 'forwardAsync');
    }
  }

  /**
   * forwardAsync's checks and plan, synchronous: the call read as every backend reads it
   * (api/call-reader.js's ForwardCall), with this backend's GPU tensors, caches and
   * outputLocation; planned by the C++ plan (shapes, sizes, steps) without the wasm-memory budget:
   * the buffers are the GPU's, bounded by the device's limits (device-limits.js). Returns the
   * ForwardCall with what the plan gave: sizes, outputShape, weightsShape, planned (the steps to
   * capture / patch), and gpuOutput, sequenceFirst, appended (appended-keys.js).
   */
  #prepare(query, key, value, options) {
    this.#live('forwardAsync');
    const call = readForwardCall(query, key, value, options, {
      call: 'forwardAsync',
      readTensor: checkInput,
      readPatch: checkWebGpuPatch,
      readCache: (cache) => checkCache(cache),
      backend: 'webgpu',
      nextSeed: () => this.#nextSeed++,
    });
    if (options.outputLocation !== undefined && options.outputLocation !== 'cpu' && options.outputLocation !== 'gpu') {
      throw new TypeError(`outputLocation must be 'cpu' or 'gpu', got ${describe(options.outputLocation)}`);
    }
    if (call.patch && call.grad) {
      throw new TypeError('patch: not with grad: true on the WebGPU backend yet (its backward pass does not hold '
        + 'the patched heads constant); use the wasm backend for gradients through a patch');
    }
    const request = call.request((t) => t && { shape: t.shape, isBool: t.data instanceof Uint8Array });
    if (!this.#planner.planForward(request, call.steps)) throwHandleError(this.#planner, 'forwardAsync');
    // The sizes and the steps to capture / patch, as the C++ plan checked them (steps.js runs them).
    const sizes = this.#planner.plannedSizes();
    call.planned = call.steps ? this.#planner.plannedSteps() : null;
    if (!this.#hasWeights) throw noWeightsYet();
    call.outputShape = this.#planner.plannedOutputShape();
    call.weightsShape = call.needWeights ? this.#planner.plannedWeightsShape() : null;
    call.readOutBuffers(call.outputShape, call.weightsShape);
    call.gpuOutput = options.outputLocation === 'gpu';
    if ((call.out || call.weightsOut) && call.gpuOutput) {
      throw new TypeError(`${call.out ? 'out' : 'weightsOut'}: a Float32Array destination is for outputLocation 'cpu' `
        + "(with 'gpu' the results are new GPUBuffers the caller owns)");
    }
    // Batch B, query rows L, keys S (newKeys of them projected now, after the `cached` a self
    // cache held; none from a cross cache; S counts the keys addBiasKv / addZeroAttn append).
    call.sizes = { B: sizes.batch, L: sizes.queryLen, S: sizes.keyLen, newKeys: sizes.projectedKeys, cached: sizes.firstPosition,
      cross: sizes.crossCache, self: !call.key };
    call.sequenceFirst = isSequenceFirst(this.#config, call.outputShape);
    call.appended = appendedKeysOf(this.#config, call, sizes.keyLen);
    return call;
  }

  /** The call's sizes and kernels, checked against the device's limits before anything is made. */
  #plan(call) {
    const { sizes } = call;
    const kernels = this.#kernels({ ...sizes, cache: Boolean(call.cache), weights: Boolean(call.weightsShape),
      dropout: call.training && this.#config.dropout > 0 });
    checkCallLimits(this.#limits, this.#config, call, sizes, kernels);
    return kernels;
  }

  /**
   * Encodes and submits the call now (synchronously) in its error scopes (gpu-work.js), its
   * buffers made in `buffers`. Returns the output buffers, what backward needs, the captured
   * steps' buffers and `verdict`: a promise of the GPU's Error or null.
   */
  #submit(call, kernels, buffers) {
    const c = this.#config, device = this.#device;
    const { sizes, cache } = call;
    const w = this.#weights.current();
    const { result, verdict } = submitChecked(device, () => {
      const encoder = device.createCommandEncoder();
      const { x, xk, xv } = callInputs(device, encoder, buffers, call);
      // (A sequence-first call's output is made batch-first, then swapped: sequence-first.js.)
      const output = buffers.storage(count(call.outputShape), 'output');
      const weights = call.weightsShape && buffers.storage(count(call.weightsShape), 'weights');
      const forwardCall = forwardCallOf(c, call, sizes, kernels, { x, xk, xv, output, weights }, buffers);
      const captured = call.planned ? encodeCallSteps(device, encoder, buffers, c, w,
        { call, forwardCall, float32OutWeight: () => this.#layer.stateDict()['out_proj.weight'] }) : null;
      const made = !call.planned || call.grad ? encodeForward(device, encoder, buffers, c, w, forwardCall) : null;
      const shown = call.sequenceFirst
        ? encodeSwapPass(device, encoder, buffers, output, [sizes.B, sizes.L, c.outputDim], 'output sequence-first') : output;
      device.queue.submit([encoder.finish()]);
      if (cache && !sizes.cross) cache.handle.advance(sizes.L);
      return { made, captured, x, xk, xv, output: shown, weights };
    }, { call: 'forwardAsync' });
    return { w, ...result, verdict };
  }

  /** The result of a call with grad: its saved state (the call's buffers, kept) and a training result. */
  #trainingResult(call, buffers, submitted, outputResult, weightsResult) {
    const record = gpuTrainingRecord(savedForward(this.#config, call, buffers, submitted), {
      backward: (s, dOut, how) => this.#backward(s, dOut, how),
      backwardNow: (s, dOut) => this.#backwardNow(s, dOut),
      onFree: (r) => this.#trainingRecords.delete(r),
    });
    this.#trainingRecords.add(record);
    return new GpuTrainingResult(record, outputResult, weightsResult);
  }

  async #run(call) {
    const { sizes, cache } = call;
    const kernels = this.#plan(call);
    const device = this.#device;
    const buffers = new CallBuffers(device);
    let kept = false;  // true when a training result holds the buffers for its backward pass
    try {
      return await failWithLoss(device, 'forwardAsync', async () => {
        const weightsFailed = await this.#weights.ready;  // (a GPU-to-GPU weight load's verdict)
        if (weightsFailed) throw weightsFailed;
        const inputs = [['query', call.query], ['key', call.key], ['value', call.value]];
        await checkGpuInputs(device, [...inputs, [call.patch && `patch.${call.patch.steps[0]}`, call.patch?.tensor]]);
        if (call.checkFinite) await checkFiniteOnGpu(device, inputs);
        const submitted = this.#submit(call, kernels, buffers);
        const failed = await submitted.verdict;
        if (failed && cache && !sizes.cross) cache.handle.truncate(sizes.cached);  // (the append did not happen)
        if (failed) throw failed;
        const { output, weights, captured } = await callResults(device, buffers, call, submitted);
        if (call.grad) {
          kept = true;
          const result = this.#trainingResult(call, buffers, submitted, output, weights);
          if (captured) result.captured = captured;
          return result;
        }
        return call.result(captured ? { output, weights, captured } : { output, weights });
      });
    } finally {
      if (!kept) buffers.free();
    }
  }

  /**
   * forwardAsync's work for GPU inputs, submitted now (no await: tfjs' next kernels queue after
   * it), results on the GPU (outputLocation 'gpu'; no cache, capture, patch or checkFinite).
   * Returns { result, verdict }: result as forwardAsync's (with grad a training result whose
   * backward can be submitted at once too: training.js's SUBMIT_BACKWARD), verdict a promise of
   * the GPU's error or null. The input buffers must be of this device (not probed, as forwardAsync does).
   */
  [SUBMIT_NOW](query, key, value, options) {
    try {
      for (const name of ['cache', 'checkFinite', 'out', 'weightsOut', 'capture', 'patch']) {
        if (options[name] != null && options[name] !== false) throw new TypeError(`${name}: not with a synchronous submit`);
      }
      const call = this.#prepare(query, key, value, { ...options, outputLocation: 'gpu' });
      for (const t of [call.query, call.key, call.value]) if (t && !t.onGpu) throw new TypeError('a synchronous submit takes GPU inputs only');
      const kernels = this.#plan(call);
      const buffers = new CallBuffers(this.#device);
      let submitted;
      try {
        submitted = this.#submit(call, kernels, buffers);
      } catch (error) {
        buffers.free();
        throw error;
      }
      // (A GPU-to-GPU weight load's verdict counts as this call's: forwardAsync awaits it first.)
      const verdict = Promise.all([this.#weights.ready, submitted.verdict]).then(([weightsFailed, failed]) => weightsFailed ?? failed);
      const output = gpuTensor(this.#device, buffers.keep(submitted.output), call.outputShape);
      const weights = submitted.weights ? gpuTensor(this.#device, buffers.keep(submitted.weights), call.weightsShape) : null;
      if (call.grad) return { result: this.#trainingResult(call, buffers, submitted, output, weights), verdict };
      buffers.free();  // (destroyed once the submitted work that reads them is done)
      return { result: { output, weights }, verdict };
    } catch (error) {
      throw withCallName(error, 'forwardAsync');
    }
  }

  /** A backward pass runs on the weights its forward pass ran on. */
  #checkSameWeights(saved) {
    if (!this.#weights.isCurrent(saved.w)) {
      throw new TypeError('the layer\'s weights changed since this forward pass (loadStateDict); '
        + 'run forward again with the new weights');
    }
  }

  /**
   * The backward pass of a forward result with grad (training.js calls it, and checks its
   * options; backward.js runs it); with `onGpu` the gradients stay on the GPU.
   */
  async #backward(saved, dOut, { onGpu = false } = {}) {
    this.#live('backwardAsync');
    this.#checkSameWeights(saved);
    return runBackward(this.#device, saved, dOut, this.#layer.stateDictShapes(), { onGpu });
  }

  /** The backward pass for dLoss/dOutput in a GPUBuffer, submitted now (training.js's SUBMIT_BACKWARD; backward.js). */
  #backwardNow(saved, dOut) {
    this.#live('backwardAsync');
    this.#checkSameWeights(saved);
    return submitBackwardNow(this.#device, saved, dOut, this.#layer.stateDictShapes());
  }

  /** Frees the GPU weights and the wasm layer. Safe to call more than once. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const record of [...this.#trainingRecords]) freeGpuRecord(record, 'disposed');
    this.#weights.changed();
    for (const cache of [...this.#caches]) cache.dispose();
    this.#planner.delete();
    this.#layer.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

/** The public WebGPU MultiHeadAttention class, bound to `gpu` ({ device, ... } from openDevice) and a wasm module. */
export function defineWebGpuMultiHeadAttention(gpu, wasm) {
  return class MultiHeadAttention extends GpuMultiHeadAttention {
    constructor(config) { super(gpu, wasm, config); }
  };
}
