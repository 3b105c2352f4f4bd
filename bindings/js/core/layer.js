// MultiHeadAttention: the public layer class, a thin owner of one C++ LayerHandle.
import { arrayOfDtype, readForwardCall, readRaggedCall } from '../api/call-reader.js';
import { readLayerConfig } from '../api/config-reader.js';
import { nameErrorsByCall, noWeightsYet, withCallName } from '../api/errors.js';
import { refuseFloat64Call } from '../api/options.js';
import { checkInteger, checkKnownKeys, checkPlainObject, checkTensor, describe, withArticle } from '../api/validate.js';
import { cacheHandleOf, KvCache } from './cache.js';
import { constructedHandle, throwHandleError } from './handle-errors.js';
import { copyOutFloats, copyOutFloatsInto, HeapScope, viewsHeap } from './heap.js';
import { initialStateDict } from './initialize.js';
import { leakRegistry } from './leak-warning.js';
import { watchMemoryGrowth } from './memory-growth.js';
import { checkQuantizedTensor, QUANTIZED_PROJECTION } from './quantized.js';
import { copyOutCaptured } from './steps.js';
import { freeRecord, trainingRecord, TrainingResult } from './training.js';

const CACHE_KEYS = ['batch', 'capacity', 'dtype'];

function tensorForCore(scope, tensor) {
  return tensor && { ptr: scope.copyIn(tensor.data), shape: tensor.shape, isBool: tensor.data instanceof Uint8Array };
}

function shapeForCore(tensor) {
  return tensor && { shape: tensor.shape, isBool: tensor.data instanceof Uint8Array };
}

/** Whether stateDictShapes() (with the separate q/k/v keys added) is a fused layer's. */
const stateDictShapesFused = (shapes) => 'in_proj_weight' in shapes;

function stateDictEntries(stateDict, what = 'loadStateDict: stateDict') {
  if (stateDict instanceof Map) return [...stateDict.entries()];
  checkPlainObject(what, stateDict);
  return Object.entries(stateDict);
}

// `using layer = ...` calls [Symbol.dispose]; Symbol.for('Symbol.dispose') is what TypeScript's
// downlevel helpers look up where the runtime has no Symbol.dispose.
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

/** A layer garbage-collected without dispose(): free its handle, and say so once. */
const leakedLayers = leakRegistry('mha-wasm: a MultiHeadAttention layer was garbage-collected without dispose(); '
  + 'its wasm memory was freed late. Call layer.dispose() (or use `using`) when done with a layer.', (handle) => handle.delete());

/**
 * The wasm layer: one C++ LayerHandle of a loaded wasm module, given at construction (the module's
 * `MultiHeadAttention` binds it: defineMultiHeadAttention below). Its errors start with the call
 * that failed ('MultiHeadAttention: ...' from the constructor, 'forward: ...'): errors.js.
 */
class WasmMultiHeadAttention {
  #module;  // the loaded wasm module (its embind classes and memory)
  #handle;
  #caches = new Set();  // alive caches this layer made; dispose() frees them
  #trainingRecords = new Set();  // saved states of forward results with grad not yet freed; dispose() frees them
  #nextSeed;  // dropout's seed for the next training call that gives none
  #weightDtype;  // how loadStateDict stores the projections ('f32', 'f16', 'int8', 'q4')
  #dtype;  // what the layer computes in, takes and returns: 'float32', or 'float64' (Float64Array)
  #Array;  // Float32Array, or a float64 layer's Float64Array

  constructor(config, module) {
    this.#module = module;
    const { dtype, weightDtype, seed, coreConfig } = readLayerConfig(config);
    this.#dtype = dtype;
    this.#Array = arrayOfDtype(dtype);
    this.#weightDtype = weightDtype;
    // Unseeded layers draw a different dropout sequence each run, as PyTorch's do.
    this.#nextSeed = seed ?? Math.floor(Math.random() * 2 ** 32);
    // A float64 layer is the core's Float64Attention (src/mha/float64/float64_attention.hpp); the core checks
    // the dtype's value and what a float64 layer refuses.
    const Handle = this.#dtype === 'float64' ? this.#module.Float64LayerHandle : this.#module.LayerHandle;
    const handle = constructedHandle(new Handle(coreConfig), 'MultiHeadAttention');
    this.#handle = handle;
    leakedLayers.register(this, handle, this);
  }

  /** A method or call form a float64 layer lacks: refused by name, saying why (api/options.js). */
  #refuseFloat64(name) {
    if (this.#dtype === 'float64') refuseFloat64Call(name);
  }

  #live(method) {
    if (!this.#handle) throw new TypeError(`MultiHeadAttention.${method}: this layer was disposed`);
    return this.#handle;
  }

  /** The resolved configuration: every default filled in, plus headDim. */
  get config() {
    return this.#live('config').config();  // weightDtype only when not 'f32', as other options
  }

  /**
   * Bytes of weights the layer holds: the projections as stored (quantized with a weightDtype
   * other than 'f32': data, scales and zero points), biases and sinks (float32). 0 before weights.
   */
  get byteSize() {
    return this.#live('byteSize').weightBytes();
  }

  /** The state-dict keys this layer takes, with their PyTorch shapes. */
  stateDictShapes() {
    return this.#live('stateDictShapes').stateDictShapes();
  }

  /**
   * Fresh weights as PyTorch initializes nn.MultiheadAttention (xavier_uniform_ in_proj, zero
   * biases, out_proj as nn.Linear), from `seed` (default 0). Returns the layer.
   */
  initialize(options = {}) {
    this.#live('initialize');
    checkPlainObject('initialize: options', options);
    checkKnownKeys('options', options, ['seed']);
    if (options.seed !== undefined && typeof options.seed !== 'number') {
      throw new TypeError(`initialize: seed must be a number, got ${describe(options.seed)}`);
    }
    if (options.seed !== undefined && (!Number.isInteger(options.seed) || options.seed < 0 || options.seed > 0xffffffff)) {
      throw new RangeError(`initialize: seed must be an integer from 0 to 2^32 - 1, got ${describe(options.seed)}`);
    }
    return this.loadStateDict(initialStateDict(this.stateDictShapes(), options.seed ?? 0, this.#Array));
  }

  /** Copies of the current weights, keyed as stateDictShapes() (what loadStateDict takes). */
  stateDict() {
    const handle = this.#live('stateDict');
    const entries = handle.stateDict();
    if (entries === null) throw withCallName(noWeightsYet(), 'stateDict');
    try {
      return Object.fromEntries(entries.map((e) => [e.name, copyOutFloats(this.#module, e.ptr, e.length, this.#Array)]));
    } finally {
      handle.releaseStateDict();
    }
  }

  /** True until dispose() is called. */
  get alive() {
    return this.#handle !== null;
  }

  loadStateDict(stateDict) {
    const handle = this.#live('loadStateDict');
    const entries = stateDictEntries(stateDict);
    for (const [key, value] of entries) {
      if (!(value instanceof this.#Array)) {
        const why = this.#dtype === 'float64' ? " (a layer of dtype 'float64' takes and returns Float64Array)" : '';
        throw new TypeError(`loadStateDict: stateDict['${key}'] must be ${withArticle(this.#Array.name)}, got ${describe(value)}${why}`);
      }
    }
    // The memory budget first, so a state dict that cannot fit allocates nothing.
    const floats = entries.reduce((n, [, value]) => n + value.length, 0);
    if (!handle.checkLoadStateDict(floats)) throwHandleError(handle, 'loadStateDict');
    const scope = new HeapScope(this.#module);
    try {
      const list = entries.map(([name, value]) => ({ name, ptr: scope.copyIn(value), length: value.length }));
      if (!handle.loadStateDict(list)) throwHandleError(handle, 'loadStateDict');
    } finally {
      scope.free();
    }
    return this;
  }

  /**
   * Weights already quantized (an ONNX file's MatMulNBits / int8 initializers, onnx.js), loaded
   * as they are: `weights` maps projection keys of stateDictShapes() (in_proj_weight or
   * q/k/v_proj_weight, out_proj.weight) to { dtype: 'int8' | 'q4' | 'f16', data, scales,
   * zeroPoints? } in the canonical layouts (docs/quantized.md), and other keys (biases, sinks,
   * float32 projections) to Float32Arrays as loadStateDict takes them. A layer without weights
   * needs every key; a loaded one takes quantized projections only and replaces just those.
   * Returns the layer.
   */
  loadQuantized(weights) {
    const handle = this.#live('loadQuantized');
    this.#refuseFloat64('loadQuantized');
    const entries = stateDictEntries(weights, 'loadQuantized: weights');
    const shapes = this.stateDictShapes();
    // The separate q/k/v form is accepted where the layer fuses them (as loadStateDict does).
    if (shapes.in_proj_weight) {
      for (const key of ['q_proj_weight', 'k_proj_weight', 'v_proj_weight']) shapes[key] = [shapes.in_proj_weight[1], shapes.in_proj_weight[1]];
    }
    const quantized = [], floats = [];
    const given = new Set(entries.map(([name]) => name));
    if (handle.weightBytes() === 0) {  // a layer without weights: every key, before anything is loaded
      const separate = ['q_proj_weight', 'k_proj_weight', 'v_proj_weight'];
      const required = Object.keys(shapes).filter((key) => !separate.includes(key) || !stateDictShapesFused(shapes));
      for (const key of required) {
        const present = given.has(key) || (key === 'in_proj_weight' && separate.every((k) => given.has(k)));
        if (!present) {
          throw new TypeError(`loadQuantized: weights: missing '${key}' (shape [${shapes[key].join(', ')}]); a layer without `
            + 'weights needs every key of stateDictShapes()');
        }
      }
    }
    const loaded = handle.weightBytes() > 0;
    // Everything checked before anything is copied, so a wrong entry changes nothing.
    for (const [name, value] of entries) {
      const shape = shapes[name];
      if (!shape) throw new TypeError(`loadQuantized: weights: unknown key '${name}'; this layer's keys: ${Object.keys(shapes).join(', ')}`);
      if (value instanceof Float32Array) {
        const count = shape.reduce((n, d) => n * d, 1);
        if (value.length !== count) {
          throw new RangeError(`loadQuantized: weights['${name}']: shape [${shape.join(', ')}] needs ${count} floats, got ${value.length}`);
        }
        if (loaded) {
          throw new TypeError(`loadQuantized: weights['${name}']: a layer with weights takes quantized projections only `
            + '(the rest stays); to replace float32 entries too, use loadStateDict, or loadQuantized on a new layer');
        }
        floats.push([name, value]);
      } else if (shape.length !== 2) {
        throw new TypeError(`loadQuantized: weights['${name}'] must be a Float32Array (only the projection matrices `
          + `can be quantized), got ${describe(value)}`);
      } else {
        quantized.push([name, checkQuantizedTensor(name, value, shape)]);
      }
    }
    const scope = new HeapScope(this.#module);
    try {
      for (const [name, q] of quantized) {
        const copy = (array) => (array ? [scope.copyIn(array), array.length] : [0, 0]);
        // (The core counts data in bytes: f16's Uint16Array holds two per element.)
        const data = [scope.copyIn(q.data), q.data.byteLength];
        if (!handle.loadQuantized(name, q.dtype, ...data, ...copy(q.scales), ...copy(q.zeroPoints))) {
          throwHandleError(handle, 'loadQuantized');
        }
      }
    } finally {
      scope.free();
    }
    // The float entries complete a layer without weights (a layer with no float entries, without
    // biases or sinks, is complete once its four projections are in).
    if (!loaded && handle.weightBytes() === 0) this.loadStateDict(new Map(floats));
    return this;
  }

  /** (No public API: quantized.js' QUANTIZED_PROJECTION, for the WebGPU backend's upload.) */
  [QUANTIZED_PROJECTION](which) {
    return this.#live('quantizedProjection').quantizedProjection(which);
  }

  /**
   * A KV cache for decoding with this layer: `batch` rows of up to `capacity` tokens, float32
   * or float16 ('f16': half the memory and bytes read per step). Its memory is taken now.
   */
  createCache(options) {
    const handle = this.#live('createCache');
    this.#refuseFloat64('createCache');
    checkPlainObject('createCache: options', options);
    checkKnownKeys('options', options, CACHE_KEYS);
    checkInteger('batch', options.batch, { optional: true });
    checkInteger('capacity', options.capacity);
    const dtype = options.dtype ?? 'f32';
    if (dtype !== 'f32' && dtype !== 'f16') throw new TypeError(`dtype must be 'f32' or 'f16', got ${describe(dtype)}`);
    const cacheHandle = handle.createCache(options.batch ?? 1, options.capacity, dtype === 'f16');
    if (!cacheHandle) throwHandleError(handle, 'createCache');
    const cache = new KvCache(cacheHandle, dtype, {
      onDispose: (c) => this.#caches.delete(c),
      setKeyValue: (c, key, value) => this.#setKeyValue(c, key, value),
    });
    this.#caches.add(cache);
    return cache;
  }

  #setKeyValue(cache, key, value) {
    const handle = this.#live('setKeyValue');
    checkTensor('setKeyValue: key', key, { expected: '[B, S, kdim]' });
    checkTensor('setKeyValue: value', value, { expected: '[B, S, vdim]' });
    const scope = new HeapScope(this.#module);
    try {
      if (!handle.setKeyValue(cacheHandleOf.get(cache), tensorForCore(scope, key), tensorForCore(scope, value))) {
        throwHandleError(handle, 'setKeyValue');
      }
    } finally {
      scope.free();
    }
  }

  /** A forward call's cache: one of this layer's live caches (its shapes and rules are the plan's). */
  #readCache(cache) {
    if (!(cache instanceof KvCache)) throw new TypeError(`cache must be a KvCache from layer.createCache(), got ${describe(cache)}`);
    if (!cache.alive) throw new TypeError('cache: this cache was disposed');
    return { handle: cacheHandleOf.get(cache) };
  }

  forward(query, key = null, value = null, options = {}) {
    const handle = this.#live('forward');
    const ragged = readRaggedCall(query, key, value, options);  // (sequences of their own lengths: api/ragged.js)
    if (ragged) {
      this.#refuseFloat64('query');  // (a ragged query)
      return ragged.run((...args) => this.forward(...args));
    }
    const call = readForwardCall(query, key, value, options, {
      readCache: (cache) => this.#readCache(cache),
      nextSeed: () => this.#nextSeed++,
      dtype: this.#dtype,
    });
    // Shapes and the memory budget first, so a request that cannot fit allocates nothing.
    if (!handle.checkForward(call.request(shapeForCore), call.steps)) throwHandleError(handle, 'forward');
    call.readOutBuffers(handle.plannedOutputShape(), handle.plannedWeightsShape(), (array) => viewsHeap(this.#module, array));
    if (call.grad) return this.#forwardForTraining(handle, call);
    const scope = new HeapScope(this.#module);
    try {
      const ok = handle.forward(call.request((tensor) => tensorForCore(scope, tensor)), call.steps);
      if (!ok) throwHandleError(handle, 'forward');
      const outputShape = handle.outputShape();
      const copyOut = (ptr, shape, target) => (target ? copyOutFloatsInto(this.#module, ptr, target)
        : copyOutFloats(this.#module, ptr, shape.reduce((n, d) => n * d, 1), this.#Array));
      const output = { data: copyOut(handle.outputPtr(), outputShape, call.out), shape: outputShape };
      const weightsShape = handle.weightsShape();
      const weights = weightsShape && { data: copyOut(handle.weightsPtr(), weightsShape, call.weightsOut), shape: weightsShape };
      return call.result(call.capture ? { output, weights, captured: copyOutCaptured(this.#module, handle) } : { output, weights });
    } finally {
      handle.releaseResult();
      scope.free();
    }
  }

  /**
   * forward as a promise: the same arguments, options and result, for code written once for
   * every backend (a WebGPU layer has only this form). On wasm the work runs now, on the calling
   * thread, as forward; the promise settles with its result, or rejects with its error named
   * 'forwardAsync: ...'. A result of `grad: true` also has backwardAsync(dOut).
   */
  async forwardAsync(query, key = null, value = null, options = {}) {
    this.#live('forwardAsync');
    try {
      return this.forward(query, key, value, options);
    } catch (error) {
      throw withCallName(error, 'forwardAsync', ['forward']);
    }
  }

  #forwardForTraining(handle, call) {
    const scope = new HeapScope(this.#module);
    let saved = null;
    try {
      saved = handle.forwardForTraining(call.request((tensor) => tensorForCore(scope, tensor)), call.steps);
      if (!saved) throwHandleError(handle, 'forward');
      const outputShape = handle.outputShape();
      const count = (shape) => shape.reduce((n, d) => n * d, 1);
      const copyOut = (ptr, shape) => copyOutFloats(this.#module, ptr, count(shape), this.#Array);
      const output = { data: copyOut(handle.outputPtr(), outputShape), shape: outputShape };
      const weightsShape = handle.weightsShape();
      const weights = weightsShape && { data: copyOut(handle.weightsPtr(), weightsShape), shape: weightsShape };
      const owner = {
        module: this.#module,
        handle: (method) => this.#live(method),
        onFree: (r) => this.#trainingRecords.delete(r),
        inputShapes: { query: call.query.shape, key: call.key?.shape, value: call.value?.shape },
        Array: this.#Array,  // dOut's and the gradients' type
        // A quantized layer has no parameter gradients (result.params says why).
        quantized: handle.quantized() ? (this.#weightDtype === 'f32' ? 'loadQuantized' : `weightDtype '${this.#weightDtype}'`) : null,
      };
      const record = trainingRecord(saved, owner);
      saved = null;  // the record owns it now
      this.#trainingRecords.add(record);
      const result = new TrainingResult(record, output, weights);
      if (call.capture) result.captured = copyOutCaptured(this.#module, handle);
      return result;
    } finally {
      saved?.delete();
      handle.releaseResult();
      scope.free();
    }
  }

  /** Frees the layer's wasm memory. Safe to call more than once. */
  dispose() {
    if (this.#handle) {
      for (const cache of [...this.#caches]) cache.dispose();
      for (const record of [...this.#trainingRecords]) freeRecord(record, 'disposed');
      leakedLayers.unregister(this);
      this.#handle.delete();
      this.#handle = null;
    }
  }

  /** The same as dispose(), for `using` declarations. */
  [disposeSymbol]() {
    this.dispose();
  }
}

const NamedMultiHeadAttention = nameErrorsByCall(WasmMultiHeadAttention, 'MultiHeadAttention',
  ['initialize', 'stateDict', 'loadStateDict', 'createCache', 'forward']);

/** The MultiHeadAttention class of one loaded wasm module: `new mha.MultiHeadAttention(config)`. */
export function defineMultiHeadAttention(module) {
  watchMemoryGrowth(module);
  return class MultiHeadAttention extends NamedMultiHeadAttention {
    constructor(config) { super(config, module); }
  };
}
