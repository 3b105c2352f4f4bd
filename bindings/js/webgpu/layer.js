// MultiHeadAttention on WebGPU: the same config, weights and options as the wasm layer, with
// forwardAsync instead of forward. It owns a wasm layer of the same config, which validates the
// config and holds the weights (loadStateDict, initialize, stateDict), and a weightless planner
// handle that validates each call and plans its shapes (the C++ plan_forward: one source of
// truth). This file glues them to the GPU: weights uploaded when they change, each call checked
// and its buffers made, its kernels encoded (forward-pass.js) in error scopes, results read back
// or left on the GPU; KV caches (cache.js) made and checked.
import { throwHandleError, withCallName } from '../core/errors.js';
import { checkFinite } from '../core/finite.js';
import { checkMask } from '../core/masks.js';
import { PLANNER } from '../core/planner.js';
import { QUANTIZED_PROJECTION } from '../core/quantized.js';
import { checkCapture, patchForCore } from '../core/steps.js';
import { checkBoolean, checkInteger, checkKnownKeys, checkPlainObject, checkTensor, describe } from '../core/validate.js';
import { keysPerTile } from './attention.js';
import { checkBackwardLimits, submitBackward } from './backward.js';
import { halfBufferBytes } from './cache-f16.js';
import { cacheStateOf, GpuKvCache } from './cache.js';
import { lostError } from './device.js';
import { encodeForward } from './forward-pass.js';
import { encodeKeyValue } from './key-value.js';
import { checkWebGpuPatch, encodeSteps, stepsGroups } from './steps.js';
import { CallBuffers, checkInput, checkUsableOn, gpuTensor, readBack } from './tensors.js';
import { freeGpuRecord, gpuTrainingRecord, GpuTrainingResult } from './training.js';
import { copyWeights, uploadWeights } from './weights.js';

// The wasm layer's options (in its order), then WebGPU's own.
const OPTION_KEYS = ['causal', 'keyPaddingMask', 'attnMask', 'needWeights', 'averageWeights', 'positions', 'out', 'weightsOut',
  'cache', 'grad', 'training', 'seed', 'weightsBeforeDropout', 'checkFinite', 'capture', 'patch', 'outputLocation'];
const DECODE_ROWS = 4;  // query rows up to which a call with a cache uses flash-decoding
const CROSS = 2;  // a cache handle's kind(): 0 none, 1 self, 2 cross
const count = (shape) => shape.reduce((n, d) => n * d, 1);
/**
 * The synchronous GPU entry point mha-wasm/tfjs uses on tfjs' device (tfjs' layers call
 * synchronously; tfjs submits its own work in between): [SUBMIT_NOW](query, key, value, options)
 * submits forwardAsync's work at once for GPU inputs and outputs. Not public API.
 */
export const SUBMIT_NOW = Symbol('mha-wasm webgpu: submit now');
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

/**
 * A caller-owned destination (out / weightsOut): a Float32Array of exactly the planned size, as the
 * wasm layer's (core/layer.js checkOutBuffer, the same words). Returns it, or null when not given.
 */
function checkOutBuffer(name, buffer, shape) {
  if (buffer === undefined || buffer === null) return null;
  if (!(buffer instanceof Float32Array)) throw new TypeError(`${name} must be a Float32Array, got ${describe(buffer)}`);
  if (buffer.length !== count(shape)) {
    throw new RangeError(`${name}: expected a Float32Array of ${count(shape)} floats for shape [${shape.join(', ')}], got ${buffer.length}`);
  }
  return buffer;
}

/** An additive float mask (a bool mask's true = blocked becomes -inf), as the kernels read masks. */
function additive(mask) {
  if (!mask) return null;
  if (mask.data instanceof Float32Array) return mask.data;
  return Float32Array.from(mask.data, (x) => (x ? -Infinity : 0));
}

/** Makes the WebGPU MultiHeadAttention class bound to `gpu` ({ device, ... } from openDevice) and a wasm module. */
export function defineWebGpuMultiHeadAttention(gpu, wasm) {
  const { device } = gpu;
  const limits = device.limits;

  function checkSize(name, floats) {
    const bytes = floats * 4;
    for (const limit of ['maxStorageBufferBindingSize', 'maxBufferSize']) {
      if (bytes > limits[limit]) {
        throw new RangeError(`${name} needs ${bytes} bytes, above the device's ${limit} of ${limits[limit]}`);
      }
    }
  }
  function checkGroups(name, groups) {
    const most = limits.maxComputeWorkgroupsPerDimension;
    if (groups.some((g) => g > most)) {
      throw new RangeError(`${name} needs [${groups.join(', ')}] workgroups, above the device's `
        + `maxComputeWorkgroupsPerDimension of ${most}`);
    }
  }

  return class MultiHeadAttention {
    #layer;    // the wasm layer: config, weights
    #planner;  // a weightless LayerHandle of the same config: validation and shapes
    #config;
    #uploaded = null;  // the weights on the GPU, or null when they changed since
    #caches = new Set();  // alive caches this layer made; dispose() frees them
    #nextSeed;  // dropout's seed for the next training call that gives none (as the wasm layer's)
    #disposed = false;
    #trainingRecords = new Set();  // forward results with grad whose GPU buffers are still held; dispose() frees them
    #weightsOnGpu = false;  // true while the weights are those of loadStateDict({ name: { buffer, shape } }): none in the wasm layer

    constructor(config) {
      this.#layer = new wasm.MultiHeadAttention(config);
      this.#config = this.#layer.config;
      this.#planner = wasm[PLANNER](this.#config);
      this.#nextSeed = config.seed ?? Math.floor(Math.random() * 2 ** 32);
    }

    #live(call) {
      if (this.#disposed) throw new TypeError(`MultiHeadAttention.${call}: this layer was disposed`);
      if (gpu.lost) throw lostError(call, gpu.lost);
    }

    get backend() { return 'webgpu'; }
    get config() { return this.#layer.config; }
    get byteSize() { return this.#layer.byteSize; }
    get alive() { return !this.#disposed; }
    /** True while the device works; false once it was lost (the layer is unusable then). */
    get usable() { return !this.#disposed && !gpu.lost; }
    stateDictShapes() { return this.#layer.stateDictShapes(); }
    stateDict() {
      if (this.#weightsOnGpu) {
        throw new TypeError('stateDict: this layer\'s weights were loaded from GPU tensors (loadStateDict with { buffer, shape }) '
          + 'and live only on the GPU; read the tensors it was loaded from');
      }
      return this.#layer.stateDict();
    }

    /**
     * The wasm layer's loadStateDict; or, when the values are { buffer, shape } GPU tensors, their
     * contents copied on the GPU into the layer's weights (nothing read back; weights.js's
     * copyWeights), the GPU's verdict awaited by the next call.
     */
    loadStateDict(stateDict) {
      this.#live('loadStateDict');
      const onGpu = stateDict !== null && typeof stateDict === 'object'
        && Object.values(stateDict).some((t) => t !== null && typeof t === 'object' && 'buffer' in t && !ArrayBuffer.isView(t));
      if (onGpu) {
        try {
          const uploaded = copyWeights(device, this.#config, this.#layer.stateDictShapes(), stateDict, this.#layer.config.weightDtype);
          this.#forgetUpload();
          this.#uploaded = uploaded;
          this.#weightsOnGpu = true;
        } catch (error) {
          throw withCallName(error, 'loadStateDict');
        }
        return this;
      }
      this.#layer.loadStateDict(stateDict);
      this.#forgetUpload();
      return this;
    }

    /** Weights already quantized, as the wasm layer's loadQuantized takes them (docs/quantized.md). */
    loadQuantized(weights) {
      this.#live('loadQuantized');
      this.#layer.loadQuantized(weights);
      this.#forgetUpload();
      return this;
    }

    initialize(options = {}) {
      this.#live('initialize');
      this.#layer.initialize(options);
      this.#forgetUpload();
      return this;
    }

    #forgetUpload() {
      this.#uploaded?.destroy();
      this.#uploaded = null;
      this.#weightsOnGpu = false;
    }

    /** Whether the layer has weights (in the wasm layer, or loaded from GPU tensors). */
    get #hasWeights() { return this.#weightsOnGpu || this.#layer.byteSize > 0; }

    /** A GPU-to-GPU weight load's verdict (copyWeights), awaited once before the weights are used. */
    async #weightsReady() {
      const failed = await this.#uploaded?.ready;
      if (failed) throw failed;
    }

    /**
     * A KV cache on the GPU for decoding: `batch` rows of up to `capacity` tokens (float32). Its
     * memory is taken now.
     */
    createCache(options) {
      try {
        this.#live('createCache');
        checkPlainObject('createCache: options', options);
        checkKnownKeys('options', options, ['batch', 'capacity', 'dtype']);
        checkInteger('batch', options.batch, { optional: true });
        checkInteger('capacity', options.capacity);
        const dtype = options.dtype ?? 'f32';
        if (dtype !== 'f32' && dtype !== 'f16') throw new TypeError(`dtype must be 'f32' or 'f16', got ${describe(dtype)}`);
        const c = this.#config, batch = options.batch ?? 1;
        const rows = batch * options.capacity;
        checkSize('the cache\'s keys', rows * c.numKvHeads * c.headDim);
        checkSize('the cache\'s values', rows * c.numKvHeads * c.valueHeadDim);
        const handle = this.#planner.createPlannedCache(batch, options.capacity);
        if (!handle) throwHandleError(this.#planner, 'createCache');
        const make = (floats, label) => device.createBuffer({
          label, size: dtype === 'f16' ? halfBufferBytes(floats) : Math.max(16, floats * 4), usage: 0x80 | 0x08 | 0x04,
        });
        const state = {
          handle, dtype, busy: false, pending: null,
          setKeyValue: (made, key, value) => this.#setKeyValue(made, key, value),
          keys: make(rows * c.numKvHeads * c.headDim, 'cache keys'),
          values: make(rows * c.numKvHeads * c.valueHeadDim, 'cache values'),
        };
        const cache = new GpuKvCache(state, (made) => this.#caches.delete(made));
        this.#caches.add(cache);
        return cache;
      } catch (error) {
        throw withCallName(error, 'createCache');
      }
    }

    #checkCache(cache, causal) {
      if (cache === undefined || cache === null) return null;
      if (!(cache instanceof GpuKvCache)) {
        throw new TypeError(`cache must be a KvCache from this WebGPU layer's createCache(), got ${describe(cache)}`);
      }
      if (!cache.alive) throw new TypeError('cache: this cache was disposed');
      const state = cacheStateOf.get(cache);
      if (causal === false && state.handle.kind() !== CROSS) {
        throw new TypeError('causal: a self-attention cache implies causal attention (each new token sees the cached '
          + 'tokens and itself, never later ones); omit causal or pass true');
      }
      if (state.busy) throw new TypeError('cache: a call with this cache is still running; await it before the next');
      return state;
    }

    /** cache.setKeyValue on the GPU: checked by the planner (the wasm layer's checks), then encoded (key-value.js). */
    #setKeyValue(cache, key, value) {
      try {
        this.#live('setKeyValue');
        const state = this.#checkCache(cache);
        if (!this.#hasWeights) throw new TypeError('the layer has no weights yet; call loadStateDict() first');
        const k = checkInput('key', key, { expected: '[B, S, kdim]' });
        const v = checkInput('value', value, { expected: '[B, S, vdim]' });
        if (!this.#planner.planKeyValue(state.handle, { shape: k.shape }, { shape: v.shape })) {
          throwHandleError(this.#planner, 'setKeyValue');
        }
        if (!this.#uploaded) {
          this.#uploaded = uploadWeights(device, this.#config, this.#layer.stateDict(), (which) => this.#layer[QUANTIZED_PROJECTION](which));
        }
        const B = state.handle.batch(), S = state.handle.length();
        const buffers = new CallBuffers(device);
        device.pushErrorScope('out-of-memory');
        device.pushErrorScope('validation');
        const encoder = device.createCommandEncoder();
        const input = (t, label) => (t.onGpu ? t.buffer : buffers.upload(t.data, label));
        encodeKeyValue(device, encoder, buffers, this.#config, this.#uploaded, {
          B, S, xk: input(k, 'key'), xv: input(v, 'value'),
          cache: { keys: state.keys, values: state.values, capacity: state.handle.capacity(), dtype: state.dtype },
        });
        device.queue.submit([encoder.finish()]);
        // The GPU's verdict comes later: the next call with the cache awaits it (and rejects if it
        // failed). A later setKeyValue replaces the contents, and with them an earlier one's verdict.
        const ticket = (state.keyValueTicket = (state.keyValueTicket ?? 0) + 1);
        state.pending = Promise.all([device.popErrorScope(), device.popErrorScope()]).then(([invalid, outOfMemory]) => {
          buffers.free();
          if ((!invalid && !outOfMemory) || state.keyValueTicket !== ticket) return null;
          state.handle.reset();
          return invalid ? new Error(`setKeyValue: the GPU rejected the call: ${invalid.message}`)
            : new RangeError(`setKeyValue: the GPU is out of memory: ${outOfMemory.message}`);
        });
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
        return await this.#forwardAsync(query, key, value, options);
      } catch (error) {
        throw withCallName(error, 'forwardAsync');
      }
    }

    async #forwardAsync(query, key, value, options) {
      const call = this.#prepare(query, key, value, options);
      const { cache } = call;
      if (cache?.pending) {  // (a setKeyValue still on the GPU; if it failed its handle was reset)
        const failed = await cache.pending;
        cache.pending = null;
        if (failed) throw failed;
      }
      if (!cache) return this.#run(call);
      cache.busy = true;  // (its length was planned with; no other call may change it meanwhile)
      try {
        return await this.#run(call);
      } finally {
        cache.busy = false;
      }
    }

    /** forwardAsync's checks and plan, synchronous: the call's checked inputs, options and shapes. */
    #prepare(query, key, value, options) {
      this.#live('forwardAsync');
      const q = checkInput('query', query, { expected: '[B, L, embedDim] or [L, embedDim]' });
      if (key !== null && key !== undefined && !('data' in Object(key)) && !('buffer' in Object(key)) && value == null) {
        throw new TypeError('key must be { data, shape }, { buffer, shape } or null; to pass options for self-attention '
          + 'call forwardAsync(query, null, null, options)');
      }
      const k = checkInput('key', key, { expected: '[B, S, kdim]', optional: true });
      const v = checkInput('value', value, { expected: '[B, S, vdim]', optional: true });
      checkPlainObject('forwardAsync: options', options);
      checkKnownKeys('options', options, OPTION_KEYS);
      checkBoolean('grad', options.grad);
      if (options.grad && options.cache != null) {  // (the wasm layer's check and words)
        throw new TypeError('grad: a forward pass with a cache cannot be differentiated (training runs whole sequences: '
          + 'pass the whole sequence without a cache)');
      }
      for (const flag of ['causal', 'needWeights', 'averageWeights', 'training', 'weightsBeforeDropout']) checkBoolean(flag, options[flag]);
      if (options.outputLocation !== undefined && options.outputLocation !== 'cpu' && options.outputLocation !== 'gpu') {
        throw new TypeError(`outputLocation must be 'cpu' or 'gpu', got ${describe(options.outputLocation)}`);
      }
      if (options.seed !== undefined) {  // (the wasm layer's checkSeed)
        if (typeof options.seed !== 'number') throw new TypeError(`seed must be a number, got ${describe(options.seed)}`);
        if (!Number.isSafeInteger(options.seed) || options.seed < 0) {
          throw new RangeError(`seed must be an integer from 0 to 2^53 - 1, got ${options.seed}`);
        }
      }
      const keyPaddingMask = checkMask('keyPaddingMask', options.keyPaddingMask);
      const attnMask = checkMask('attnMask', options.attnMask);
      // checkFinite: CPU tensors here, as the wasm layer; GPUBuffer inputs are read back and checked in #run.
      const onCpu = (t) => (t?.onGpu ? null : t);
      if (options.checkFinite) checkFinite({ query: onCpu(q), key: onCpu(k), value: onCpu(v) }, { keyPaddingMask, attnMask });
      const positions = checkTensor('positions', options.positions, { kinds: [Int32Array], expected: '[B, L]', optional: true });
      const cache = this.#checkCache(options.cache, options.causal);
      const capture = checkCapture(options.capture);
      const patch = checkWebGpuPatch(options.patch);
      const steps = capture !== undefined || patch !== null;
      if (patch && options.grad) {
        throw new TypeError('patch: not with grad: true on the WebGPU backend yet (its backward pass does not hold '
          + 'the patched heads constant); use the wasm backend for gradients through a patch');
      }
      const shapeOf = (t) => t && { shape: t.shape };
      const maskShape = (m) => m && { shape: m.shape, isBool: m.data instanceof Uint8Array };
      const request = {
        query: shapeOf(q), key: shapeOf(k), value: shapeOf(v),
        keyPaddingMask: maskShape(keyPaddingMask), attnMask: maskShape(attnMask), positions: shapeOf(positions),
        cache: cache?.handle ?? null, causal: options.causal, needWeights: options.needWeights ?? false,
        averageWeights: options.averageWeights ?? true, grad: options.grad ?? false, training: options.training ?? false,
        seed: options.training ? (options.seed ?? this.#nextSeed++) : 0, weightsBeforeDropout: options.weightsBeforeDropout ?? false,
        capture, patch: patchForCore(patch, shapeOf),
      };
      // The wasm layer's plan and checks, without its wasm-memory budget: the buffers are the
      // GPU's, bounded by the device's limits (checkSize, checkGroups).
      if (!this.#planner.planForward(request, steps)) throwHandleError(this.#planner, 'forwardAsync');
      // The steps to capture and the patch, as the C++ plan checked them (steps.js runs them).
      const planned = steps ? this.#planner.plannedSteps() : null;
      if (!this.#hasWeights) throw new TypeError('the layer has no weights yet; call loadStateDict() first');
      const outputShape = this.#planner.plannedOutputShape();
      const weightsShape = request.needWeights ? this.#planner.plannedWeightsShape() : null;
      if (options.grad && (options.out != null || options.weightsOut != null)) {  // (the wasm layer's rule and words)
        throw new TypeError(`${options.out != null ? 'out' : 'weightsOut'}: not with grad: true (the result keeps its own buffers)`);
      }
      const out = checkOutBuffer('out', options.out, outputShape);
      if (options.weightsOut != null && !options.needWeights) throw new TypeError('weightsOut: given without needWeights: true');
      const weightsOut = options.weightsOut == null ? null : checkOutBuffer('weightsOut', options.weightsOut, weightsShape);
      if ((out || weightsOut) && options.outputLocation === 'gpu') {
        throw new TypeError(`${out ? 'out' : 'weightsOut'}: a Float32Array destination is for outputLocation 'cpu' `
          + "(with 'gpu' the results are new GPUBuffers the caller owns)");
      }
      return { q, k, v, keyPaddingMask, attnMask, positions, request, outputShape, weightsShape, out, weightsOut, cache,
        checkFinite: options.checkFinite ?? false, gpuOutput: options.outputLocation === 'gpu', planned,
        patchTensor: patch?.tensor, patchName: patch && `patch.${patch.steps[0]}` };
    }

    /** The call's sizes: batch B, query rows L, keys S (newKeys of them projected now, after `cached`). */
    #sizes(call) {
      const { q } = call;
      const self = !call.k;
      const batched = q.shape.length === 3;
      const B = batched ? q.shape[0] : 1, L = q.shape[q.shape.length - 2];
      // With a cache: the call's L new tokens are projected and appended after the `cached` it
      // holds, and attend to all of them (query row r at position cached + r).
      // With a cross-attention cache: none projected, S = the tokens setKeyValue put there.
      const { cache } = call;
      const cross = Boolean(cache) && cache.handle.kind() === CROSS;
      const cached = cache && !cross ? cache.handle.length() : 0;
      const S = cross ? cache.handle.length() : cache ? cached + L : self ? L : call.k.shape[call.k.shape.length - 2];
      const newKeys = cross ? 0 : cache ? L : S;  // keys projected in this call
      return { B, L, S, newKeys, cached, cross, self };
    }

    /** The device's limits for the call, checked before anything is made. */
    #checkLimits(call, { B, L, S, newKeys }) {
      const c = this.#config;
      const { request } = call;
      const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
      const AD = c.numHeads * c.valueHeadDim;
      if (keysPerTile(c.headDim, c.valueHeadDim) < 1) {
        throw new RangeError(`headDim + valueHeadDim = ${c.headDim + c.valueHeadDim} floats per key do not fit the `
          + 'kernels\' workgroup storage (maxComputeWorkgroupStorageSize 16384 bytes)');
      }
      for (const [name, floats] of [['query', B * L * c.embedDim], ['the projected queries', B * L * QD],
        ['the projected keys', B * newKeys * KV], ['the projected values', B * newKeys * VKV], ['the attended values', B * L * AD],
        ['the output', count(call.outputShape)], ['the weights', call.weightsShape ? count(call.weightsShape) : 0]]) {
        checkSize(name, floats);
      }
      checkGroups('the projections', [Math.ceil(Math.max(QD, KV, VKV, c.outputDim) / 32), Math.ceil(B * Math.max(L, S) / 32)]);
      checkGroups('the attention', [Math.ceil(L / 64), c.numHeads, B]);
      if (request.grad) checkBackwardLimits(c, { B, L, S }, { checkSize, checkGroups });
      if (call.weightsShape) checkGroups('the attention weights', [Math.ceil(S / 64), L, B * c.numHeads]);
      if (call.planned) {  // (the step path keeps [B, H, L, S] scores, logits and pattern, whatever it captures)
        checkSize('the step path\'s scores', B * c.numHeads * L * S);
        for (const { name, shape } of call.planned.captured) checkSize(`the captured ${name}`, count(shape));
        for (const [name, groups] of Object.entries(stepsGroups(c, { B, L, S }))) checkGroups(name, groups);
      }
    }

    /**
     * Encodes and submits the call now (synchronously) in its error scopes, its buffers made in
     * `buffers`. Returns the output buffers, what backward needs, the captured steps' buffers and
     * `verdict`: a promise of the scopes' [validation error, out-of-memory error].
     */
    #submit(call, { B, L, S, newKeys, cached, cross, self }, buffers) {
      const c = this.#config;
      const { q, request, cache } = call;
      if (!this.#uploaded) {
        this.#uploaded = uploadWeights(device, c, this.#layer.stateDict(), (which) => this.#layer[QUANTIZED_PROJECTION](which));
      }
      const w = this.#uploaded;
      // (With grad, the caller's GPU inputs are copied: the backward reads them after the call.)
      const copies = [];
      const input = (t, label) => {
        if (!t.onGpu) return buffers.upload(t.data, label);
        if (!request.grad) return t.buffer;
        const copy = buffers.storage(count(t.shape), label);
        copies.push([t.buffer, copy, count(t.shape) * 4]);
        return copy;
      };
      const x = input(q, 'query');
      const xk = self ? x : input(call.k, 'key');
      const xv = self ? x : input(call.v, 'value');
      const output = buffers.storage(count(call.outputShape), 'output');
      const weights = call.weightsShape && buffers.storage(count(call.weightsShape), 'weights');
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      let made = null, captured = null, failed = null;
      try {
        const encoder = device.createCommandEncoder();
        for (const [from, to, bytes] of copies) if (bytes > 0) encoder.copyBufferToBuffer(from, 0, to, 0, bytes);
        const forwardCall = {
          B, L, S, newKeys, cached, self, x, xk, xv, output, weights, cache, crossCache: cross,
          positions: call.positions?.data,
          keyPadding: additive(call.keyPaddingMask), attnMask: additive(call.attnMask),
          attnMaskPerHead: call.attnMask?.shape.length === 3,
          causal: request.causal || (Boolean(cache) && !cross), averageWeights: request.averageWeights,
          dropout: request.training && c.dropout > 0
            ? { p: c.dropout, seed: request.seed, weightsBeforeDropout: request.weightsBeforeDropout } : null,
          // A few new tokens against a cache: split the cache's keys over workgroups (flash-decoding).
          decode: Boolean(cache) && L <= DECODE_ROWS && !weights && !(request.training && c.dropout > 0),
          lse: request.grad ? buffers.storage(B * c.numHeads * L, 'lse') : null,
        };
        if (call.planned) {  // capture or patch: the step path (steps.js)
          // (result reads out_proj as float32: a quantized one dequantized by the wasm layer, as its step path does)
          const wantsResult = call.planned.captured.some((step) => step.name === 'result');
          const outWeight = w.out.dtype && wantsResult ? buffers.upload(this.#layer.stateDict()['out_proj.weight'], 'out_proj as float32') : w.out;
          // With grad (capture only): the fused pass makes the output and what backward reads; the
          // step path, run beside it on the same inputs, gives the steps (its output unused).
          const stepsCall = request.grad ? { ...forwardCall, output: buffers.storage(count(call.outputShape), 'unused output'), weights: null }
            : forwardCall;
          captured = encodeSteps(device, encoder, buffers, c, w, { ...stepsCall, outWeight, patchTensor: call.patchTensor }, call.planned);
        }
        if (!call.planned || request.grad) made = encodeForward(device, encoder, buffers, c, w, forwardCall);
        device.queue.submit([encoder.finish()]);
        if (cache && !cross) cache.handle.advance(L);
      } catch (error) {
        failed = error;
      }
      // Both scopes popped now, before any other call can push its own.
      const verdict = Promise.all([device.popErrorScope(), device.popErrorScope()]);
      if (failed) throw failed;
      return { w, x, xk, xv, output, weights, made, captured, verdict };
    }

    /** The result of a call with grad: its saved state (the call's buffers, kept) and a training result. */
    #trainingResult(call, { B, L, S, self }, buffers, submitted, outputResult, weightsResult) {
      const { q } = call;
      const { w, made, x, xk, xv } = submitted;
      const saved = { buffers, c: this.#config, B, L, S, self, w, ...made, x, xk, xv, positions: call.positions && Int32Array.from(call.positions.data),
        inputShapes: { query: [...q.shape], key: call.k && [...call.k.shape], value: call.v && [...call.v.shape] } };
      const record = gpuTrainingRecord(saved, {
        backward: (s, dOut, how) => this.#backward(s, dOut, how),
        backwardNow: (s, dOut) => this.#backwardNow(s, dOut),
        onFree: (r) => this.#trainingRecords.delete(r),
      });
      this.#trainingRecords.add(record);
      return new GpuTrainingResult(record, outputResult, weightsResult);
    }

    async #run(call) {
      const { request, cache } = call;
      const sizes = this.#sizes(call);
      this.#checkLimits(call, sizes);
      const { cached, cross } = sizes;
      const buffers = new CallBuffers(device);
      let kept = false;  // true when a training result holds the buffers for its backward pass
      try {
        await this.#weightsReady();
        await this.#checkGpuInputs(call);
        if (call.checkFinite) await this.#checkFiniteOnGpu(call);
        const submitted = this.#submit(call, sizes, buffers);
        const { output, weights, captured } = submitted;
        const [invalid, outOfMemory] = await submitted.verdict;
        if ((invalid || outOfMemory) && cache && !cross) cache.handle.truncate(cached);  // (the append did not happen)
        if (invalid) throw new Error(`the GPU rejected the call: ${invalid.message}`);
        if (outOfMemory) throw new RangeError(`the GPU is out of memory: ${outOfMemory.message}`);
        // Captured steps (when asked) go where the output goes: GPU tensors with outputLocation 'gpu'.
        const capturedSteps = call.planned?.captured ?? [];
        const readCaptured = async () => {
          if (!call.request.capture) return undefined;
          const data = call.gpuOutput ? capturedSteps.map(({ name, shape }) => gpuTensor(device, buffers.keep(captured[name]), shape))
            : await Promise.all(capturedSteps.map(async ({ name, shape }) => ({ data: await readBack(device, captured[name], count(shape)), shape })));
          return Object.fromEntries(capturedSteps.map(({ name }, i) => [name, data[i]]));
        };
        if (request.grad) {
          const outputResult = call.gpuOutput ? gpuTensor(device, buffers.keep(output), call.outputShape)
            : { data: await readBack(device, output, count(call.outputShape)), shape: call.outputShape };
          const weightsResult = !weights ? null : call.gpuOutput ? gpuTensor(device, buffers.keep(weights), call.weightsShape)
            : { data: await readBack(device, weights, count(call.weightsShape)), shape: call.weightsShape };
          const stepsResult = await readCaptured();
          kept = true;
          const result = this.#trainingResult(call, sizes, buffers, submitted, outputResult, weightsResult);
          if (stepsResult) result.captured = stepsResult;
          return result;
        }
        if (call.gpuOutput) {
          const result = {
            output: gpuTensor(device, buffers.keep(output), call.outputShape),
            weights: weights ? gpuTensor(device, buffers.keep(weights), call.weightsShape) : null,
          };
          const stepsResult = await readCaptured();
          if (stepsResult) result.captured = stepsResult;
          return result;
        }
        const [outData, weightsData, stepsResult] = await Promise.all([readBack(device, output, count(call.outputShape), call.out),
          weights ? readBack(device, weights, count(call.weightsShape), call.weightsOut) : null, readCaptured()]);
        const result = {
          output: { data: outData, shape: call.outputShape },
          weights: weights ? { data: weightsData, shape: call.weightsShape } : null,
        };
        if (stepsResult) result.captured = stepsResult;
        return result;
      } catch (error) {
        const lost = await Promise.race([device.lost, new Promise((resolve) => { setTimeout(resolve, 0, null); })]);
        if (lost) throw lostError('forwardAsync', { reason: lost.reason, message: lost.message });
        throw error;
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
        for (const t of [call.q, call.k, call.v]) if (t && !t.onGpu) throw new TypeError('a synchronous submit takes GPU inputs only');
        const sizes = this.#sizes(call);
        this.#checkLimits(call, sizes);
        const buffers = new CallBuffers(device);
        let submitted;
        try {
          submitted = this.#submit(call, sizes, buffers);
        } catch (error) {
          buffers.free();
          throw error;
        }
        // (A GPU-to-GPU weight load's verdict counts as this call's: forwardAsync awaits it first.)
        const verdict = Promise.all([this.#uploaded.ready, submitted.verdict]).then(([weightsFailed, [invalid, outOfMemory]]) => (
          weightsFailed ?? (invalid ? new Error(`forwardAsync: the GPU rejected the call: ${invalid.message}`)
            : outOfMemory ? new RangeError(`forwardAsync: the GPU is out of memory: ${outOfMemory.message}`) : null)));
        const output = gpuTensor(device, buffers.keep(submitted.output), call.outputShape);
        const weights = submitted.weights ? gpuTensor(device, buffers.keep(submitted.weights), call.weightsShape) : null;
        if (call.request.grad) return { result: this.#trainingResult(call, sizes, buffers, submitted, output, weights), verdict };
        buffers.free();  // (destroyed once the submitted work that reads them is done)
        return { result: { output, weights }, verdict };
      } catch (error) {
        throw withCallName(error, 'forwardAsync');
      }
    }

    /**
     * The backward pass of a forward result with grad (training.js calls it, and checks its
     * options): backward.js on the saved buffers; with `onGpu` the gradients stay on the GPU.
     */
    async #backward(saved, dOut, { onGpu = false } = {}) {
      this.#live('backwardAsync');
      if (saved.w !== this.#uploaded) {
        throw new TypeError('the layer\'s weights changed since this forward pass (loadStateDict); '
          + 'run forward again with the new weights');
      }
      const buffers = new CallBuffers(device);
      try {
        const out = dOut.buffer ?? buffers.upload(dOut.data, 'd output');
        device.pushErrorScope('out-of-memory');
        device.pushErrorScope('validation');
        let submitted;
        let failed = null;
        try {
          submitted = submitBackward(device, buffers, saved, out, this.#layer.stateDictShapes(), { onGpu });
        } catch (error) {
          failed = error;
        }
        // Both scopes popped now, before any other call can push its own (as forwardAsync's).
        const [invalid, outOfMemory] = await Promise.all([device.popErrorScope(), device.popErrorScope()]);
        if (invalid) throw new Error(`the GPU rejected the call: ${invalid.message}`);
        if (outOfMemory) throw new RangeError(`the GPU is out of memory: ${outOfMemory.message}`);
        if (failed) throw failed;
        if (onGpu) return submitted.tensors;
        const gradients = await submitted.read();
        const shapes = saved.inputShapes;
        return {
          query: { data: gradients.query, shape: shapes.query },
          key: gradients.key && { data: gradients.key, shape: shapes.key },
          value: gradients.value && { data: gradients.value, shape: shapes.value },
          params: gradients.params,
        };
      } catch (error) {
        const lost = await Promise.race([device.lost, new Promise((resolve) => { setTimeout(resolve, 0, null); })]);
        if (lost) throw lostError('backwardAsync', { reason: lost.reason, message: lost.message });
        throw error;
      } finally {
        buffers.free();
      }
    }

    /**
     * The backward pass of `saved` for dLoss/dOutput in a GPUBuffer, submitted now (training.js's
     * SUBMIT_BACKWARD). Returns { gradients (backward.js's buffers), verdict, free() }: the caller
     * reads the gradients on the GPU, then calls free().
     */
    #backwardNow(saved, dOut) {
      this.#live('backwardAsync');
      if (saved.w !== this.#uploaded) {
        throw new TypeError('the layer\'s weights changed since this forward pass (loadStateDict); '
          + 'run forward again with the new weights');
      }
      const buffers = new CallBuffers(device);
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      let submitted, failed = null;
      try {
        submitted = submitBackward(device, buffers, saved, dOut.buffer, this.#layer.stateDictShapes());
      } catch (error) {
        failed = error;
      }
      const verdict = Promise.all([device.popErrorScope(), device.popErrorScope()]).then(([invalid, outOfMemory]) => (
        invalid ? new Error(`backwardAsync: the GPU rejected the call: ${invalid.message}`)
          : outOfMemory ? new RangeError(`backwardAsync: the GPU is out of memory: ${outOfMemory.message}`) : null));
      if (failed) {
        buffers.free();
        throw failed;
      }
      return { gradients: submitted.gradients, verdict, free: () => buffers.free() };
    }

    /**
     * checkFinite for GPUBuffer inputs: each is read back (a copy of its shape's floats to the
     * CPU: the price of the opt-in check) and checked as a CPU tensor, named `name.buffer[i]`.
     */
    async #checkFiniteOnGpu(call) {
      for (const [name, t] of [['query', call.q], ['key', call.k], ['value', call.v]]) {
        if (!t?.onGpu) continue;
        const data = await readBack(device, t.buffer, count(t.shape));
        try {
          checkFinite({ [name]: { data, shape: t.shape } });
        } catch (error) {
          error.message = error.message.replace(`${name}.data[`, `${name}.buffer[`);
          throw error;
        }
      }
    }

    /** Each caller's GPUBuffer checked on this device: a buffer of another device or a destroyed one is named. */
    async #checkGpuInputs(call) {
      for (const [name, t] of [['query', call.q], ['key', call.k], ['value', call.v], [call.patchName, call.patchTensor]]) {
        if (t?.onGpu) await checkUsableOn(device, name, t.buffer);
      }
    }

    /** Frees the GPU weights and the wasm layer. Safe to call more than once. */
    dispose() {
      if (this.#disposed) return;
      this.#disposed = true;
      for (const record of [...this.#trainingRecords]) freeGpuRecord(record, 'disposed');
      this.#forgetUpload();
      for (const cache of [...this.#caches]) cache.dispose();
      this.#planner.delete();
      this.#layer.dispose();
    }

    [disposeSymbol]() {
      this.dispose();
    }
  };
}
