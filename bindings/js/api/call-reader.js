// The one reader of a forward call, (query, key, value, options), for every backend: each option's
// name and type, the masks, the step options, and the rules between options that are the
// JavaScript API's own (caller-owned `out` buffers), each checked here once with one message.
// Shapes, and the rules between shapes and options (a cache and grad, a cache and causal), are
// the C++ plan's (src/mha/plan/forward_plan.cpp): the backend asks it with call.request(...) and reads
// the sizes it planned. A backend adds only what is its own: how it reads a tensor (the WebGPU
// backend also takes GPU tensors), what a cache of its is, and options of its own
// (`outputLocation`). A ragged call ({ data, shape: [totalTokens, E], lengths }) is read by
// readRaggedCall (ragged.js) into one unbatched call per sequence, each then read here.
import { checkFinite } from './finite.js';
import { isHalf, narrowResult, widenTensor } from './float16-io.js';
import { checkMask } from './masks.js';
import { forwardOptionKeys, refuseFloat64Options } from './options.js';
import { checkCapture, checkPatch, patchForCore } from './step-options.js';
import {
  checkBoolean, checkKnownKeys, checkPlainObject, checkTensor, describe, withArticle,
} from './validate.js';

export { readRaggedCall } from './ragged.js';

const FLAGS = ['causal', 'needWeights', 'averageWeights', 'grad', 'training', 'weightsBeforeDropout', 'checkFinite'];

/** A dropout seed: an integer from 0 to 2^53 - 1. */
export function checkSeed(name, value) {
  if (value === undefined) return;
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be an integer from 0 to 2^53 - 1, got ${value}`);
  }
}

/** The typed array a layer of `dtype` takes and returns ('float32': Float32Array, 'float64': Float64Array). */
export const arrayOfDtype = (dtype) => (dtype === 'float64' ? Float64Array : Float32Array);

/**
 * How a backend differs in reading a call. Every member is optional but `readCache`:
 * - `call`: the method's name, for 'forward: options must be ...' (default 'forward');
 * - `readTensor(name, tensor, { expected, optional })`: a checked input (default: a CPU tensor);
 * - `readPatch(patch)`: a checked patch (default: checkPatch's CPU tensor);
 * - `readCache(cache, call)`: the backend's checks of its own cache object (its class, alive, its
 *   layer's); returns `{ handle }` with the core's CacheHandle, plus what the backend keeps;
 * - `backend`: the option schema's name of the backend ('wasm', 'webgpu'): the options it takes;
 * - `nextSeed()`: the layer's seed for a training call that gives none;
 * - `dtype`: the layer's, 'float32' (default) or 'float64' (Float64Array tensors, masks and `out`
 *   buffers; the forward options a float64 layer lacks refused by name: api/options.js).
 */
const CPU_BACKEND = {
  dtype: 'float32',
  call: 'forward',
  readTensor: checkTensor,
  readPatch: checkPatch,
  backend: 'wasm',
  nextSeed: () => 0,
};

/** A checked forward call: its inputs and options, and the request the C++ plan reads. */
export class ForwardCall {
  constructor(fields) {
    Object.assign(this, fields);
  }

  /** Whether the core runs the call step by step (capture or patch given). */
  get steps() {
    return this.capture !== undefined || this.patch !== null;
  }

  /**
   * The request the core's checkForward / planForward / forward read. `toCore` turns each tensor
   * into what the core takes ({ ptr, shape, isBool } copied into the heap, or { shape, isBool }
   * for planning only).
   */
  request(toCore) {
    return {
      query: toCore(this.query),
      key: toCore(this.key),
      value: toCore(this.value),
      keyPaddingMask: toCore(this.keyPaddingMask),
      attnMask: toCore(this.attnMask),
      positions: toCore(this.positions),
      staticK: toCore(this.staticK),
      staticV: toCore(this.staticV),
      cache: this.cache?.handle ?? null,
      causal: this.causal,  // (as given: true, false or undefined; the plan tells a self cache's implied causal from a refused one)
      needWeights: this.needWeights,
      averageWeights: this.averageWeights,
      grad: this.grad,
      training: this.training,
      seed: this.seed,
      weightsBeforeDropout: this.weightsBeforeDropout,
      capture: this.capture,
      patch: patchForCore(this.patch, toCore),
    };
  }

  /** The backend's result in the caller's dtype: Float16Array tensors for Float16Array inputs. */
  result(result) {
    return this.float16 ? narrowResult(result) : result;
  }

  /**
   * The caller-owned destinations (`out`, `weightsOut`), checked against the shapes the plan gave:
   * Float32Arrays of exactly that size. `isHeapView(array)` tells a view of the module's own wasm
   * memory, which the wasm backend refuses (its copy out would alias the results).
   */
  readOutBuffers(outputShape, weightsShape, isHeapView = () => false) {
    const { out, weightsOut } = this.options;
    if (this.grad && (out != null || weightsOut != null)) {
      throw new TypeError(`${out != null ? 'out' : 'weightsOut'}: not with grad: true (the result keeps its own buffers)`);
    }
    const Type = arrayOfDtype(this.dtype);
    this.out = checkOutBuffer('out', out, outputShape, isHeapView, Type);
    if (weightsOut != null && !this.needWeights) throw new TypeError('weightsOut: given without needWeights: true');
    this.weightsOut = weightsOut == null ? null : checkOutBuffer('weightsOut', weightsOut, weightsShape, isHeapView, Type);
  }
}

/**
 * Whether the call's tensors are Float16Array: query, key and value share one dtype, as PyTorch's
 * do (GPU tensors and absent ones are not compared).
 */
function checkOneDtype(query, key, value) {
  const half = isHalf(query?.data);
  if (!half && !isHalf(key?.data) && !isHalf(value?.data)) return false;
  for (const [name, tensor] of [['key', key], ['value', value]]) {
    const data = tensor?.data;
    if (ArrayBuffer.isView(data) && isHalf(data) !== half) {  // (other dtypes are readTensor's to name)
      throw new TypeError(`${name}.data must be ${half ? 'a Float16Array' : 'a Float32Array'} like the query's (one dtype per call), `
        + `got ${data.constructor.name}`);
    }
  }
  return half;
}

/**
 * A caller-owned output buffer: a Float32Array (a float64 layer's: Float64Array) of exactly the
 * planned size, not a view of wasm memory. Returns it, or null when not given.
 */
function checkOutBuffer(name, buffer, shape, isHeapView, Type = Float32Array) {
  if (buffer === undefined || buffer === null) return null;
  if (!(buffer instanceof Type)) throw new TypeError(`${name} must be ${withArticle(Type.name)}, got ${describe(buffer)}`);
  if (isHeapView(buffer)) {
    throw new TypeError(`${name} must be the caller's own ${Type.name}, not a view of the module's WebAssembly memory`);
  }
  const count = shape.reduce((n, d) => n * d, 1);
  if (buffer.length !== count) {
    throw new RangeError(`${name}: expected ${withArticle(Type.name)} of ${count} floats for shape [${shape.join(', ')}], got ${buffer.length}`);
  }
  return buffer;
}

/**
 * A float64 layer's tensor: checkTensor's checks with Float64Array data, and a message that says
 * why a Float32Array (or Float16Array) is refused.
 */
function checkFloat64Tensor(name, tensor, options) {
  try {
    return checkTensor(name, tensor, { ...options, kinds: [Float64Array] });
  } catch (error) {
    if (ArrayBuffer.isView(tensor?.data) && !(tensor.data instanceof Float64Array)) {
      error.message += " (a layer of dtype 'float64' takes and returns Float64Array)";
    }
    throw error;
  }
}

/**
 * Reads one forward call for `backend` (see CPU_BACKEND): checks every argument's JavaScript type,
 * converts the masks once, and returns a ForwardCall. Shapes are left to the plan.
 */
export function readForwardCall(query, key, value, options, backend) {
  const b = { ...CPU_BACKEND, ...backend };
  const float64 = b.dtype === 'float64';
  if (float64) b.readTensor = checkFloat64Tensor;
  const float16 = !float64 && checkOneDtype(query, key, value);
  const q = b.readTensor('query', widenTensor(query), { expected: '[B, L, embedDim] or [L, embedDim]' });
  const gpuTensors = b.readTensor !== checkTensor && !float64;  // (the WebGPU backend's readTensor also takes { buffer, shape })
  if (key !== null && key !== undefined && !('data' in Object(key)) && !(gpuTensors && 'buffer' in Object(key)) && value == null) {
    const forms = gpuTensors ? '{ data, shape }, { buffer, shape }' : '{ data, shape }';
    throw new TypeError(`key must be ${forms} or null; to pass options for self-attention call `
      + `${b.call}(query, null, null, options)`);
  }
  const k = b.readTensor('key', widenTensor(key), { expected: '[B, S, kdim]', optional: true });
  const v = b.readTensor('value', widenTensor(value), { expected: '[B, S, vdim]', optional: true });
  checkPlainObject(`${b.call}: options`, options);
  checkKnownKeys('options', options, forwardOptionKeys(b.backend));
  for (const flag of FLAGS) checkBoolean(flag, options[flag]);
  checkSeed('seed', options.seed);
  if (float64) refuseFloat64Options(options);
  const training = options.training ?? false;
  if (float16) {
    for (const name of ['grad', 'out', 'weightsOut']) {
      if (options[name] != null && options[name] !== false) {
        throw new TypeError(`${name}: not with Float16Array inputs (they are computed in float32 and the results `
          + 'returned as Float16Array); pass Float32Array inputs for this option');
      }
    }
  }
  const floatMask = float64 ? Float64Array : Float32Array;
  const call = new ForwardCall({
    options,
    float16,
    dtype: b.dtype,
    query: q,
    key: k,
    value: v,
    keyPaddingMask: checkMask('keyPaddingMask', options.keyPaddingMask, { float: floatMask }),
    attnMask: checkMask('attnMask', options.attnMask, { float: floatMask }),
    positions: checkTensor('positions', options.positions, { kinds: [Int32Array], expected: '[B, L]', optional: true }),
    // PyTorch's static_k / static_v: per-head keys / values replacing the projections (shapes: the plan's).
    staticK: (float64 ? checkFloat64Tensor : checkTensor)('staticK', options.staticK,
      { expected: '[B*numKvHeads, S, headDim]', optional: true }),
    staticV: (float64 ? checkFloat64Tensor : checkTensor)('staticV', options.staticV,
      { expected: '[B*numKvHeads, S, valueHeadDim]', optional: true }),
    causal: options.causal,
    needWeights: options.needWeights ?? false,
    averageWeights: options.averageWeights ?? true,
    grad: options.grad ?? false,
    training,
    // A training call without a seed takes the layer's next one (dropout's mask depends on it).
    seed: training ? (options.seed ?? b.nextSeed()) : 0,
    weightsBeforeDropout: options.weightsBeforeDropout ?? false,
    checkFinite: options.checkFinite ?? false,
    capture: checkCapture(options.capture),
    patch: b.readPatch(options.patch),
    out: null,
    weightsOut: null,
  });
  // checkFinite reads the CPU tensors here; a backend reads its GPU tensors back to check them.
  const onCpu = (t) => (t?.onGpu ? null : t);
  if (call.checkFinite) {
    checkFinite({ query: onCpu(q), key: onCpu(k), value: onCpu(v), staticK: call.staticK, staticV: call.staticV },
      { keyPaddingMask: call.keyPaddingMask, attnMask: call.attnMask });
  }
  // (The plan refuses grad with a cache too, for the C++ API; here first, before the cache's own checks.)
  if (call.grad && options.cache != null) {
    throw new TypeError('grad: a forward pass with a cache cannot be differentiated (training runs whole sequences: '
      + 'pass the whole sequence without a cache)');
  }
  call.cache = options.cache == null ? null : b.readCache(options.cache, call);
  return call;
}
