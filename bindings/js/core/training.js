// The result of forward(..., { grad: true }): the output, plus what the backward pass needs, kept
// in wasm memory (src/mha/layer/saved_forward.hpp) until backward() or release().
import { copyOutFloats, HeapScope } from './heap.js';
import { withCallName } from '../api/errors.js';
import { throwHandleError } from './handle-errors.js';
import { leakRegistry } from './leak-warning.js';
import { noParameterGradients } from './quantized.js';
import { describe } from '../api/validate.js';

/** A training result garbage-collected with its state still held: free it, and say so once. */
const leakedResults = leakRegistry('mha-wasm: a forward result with grad: true was garbage-collected before backward() or release(); '
  + 'its saved state was freed late. Call r.backward(dOut) or r.release() for every such result.',
(record) => freeRecord(record, 'collected'), (record) => record.state === 'ready');

function sameShape(a, b) {
  return Array.isArray(a) && a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * What a result and its layer share: the saved state's handle and where it stands ('ready',
 * then 'done' after backward, 'released', 'disposed' with its layer, or 'collected'). The layer
 * keeps records, not results, so a forgotten result can still be garbage-collected.
 */
export function trainingRecord(saved, owner) {
  return { saved, owner, state: 'ready' };
}

/** Frees a record's saved state once; `state` says why. */
export function freeRecord(record, state) {
  if (record.state !== 'ready') return;
  record.state = state;
  record.saved.delete();
  record.saved = null;
  record.owner.onFree(record);
}

/**
 * Checks a backward pass's dOut (dLoss/dOutput) against the output's `shape` and element `count`:
 * { data: Float32Array, shape? } or, where `gpu` is true (the WebGPU layer), a GPU tensor
 * { buffer, shape }, whose buffer the caller checks. Returns whether dOut is on the GPU. Its
 * errors are unnamed: the caller names them by its call (backward, backwardAsync).
 */
export function checkDOut(dOut, shape, count, { gpu = false, Type = Float32Array } = {}) {
  const onGpu = gpu && dOut !== null && typeof dOut === 'object' && 'buffer' in dOut && !ArrayBuffer.isView(dOut);
  if (!onGpu && (dOut === null || typeof dOut !== 'object' || !(dOut.data instanceof Type))) {
    const got = dOut !== null && typeof dOut === 'object' && !ArrayBuffer.isView(dOut) ? `data ${describe(dOut.data)}` : describe(dOut);
    throw new TypeError(`dOut must be { data: ${Type.name}, shape: [${shape.join(', ')}] } (dLoss/dOutput), got ${got}`);
  }
  if ((onGpu || dOut.shape !== undefined) && !sameShape(dOut.shape, shape)) {
    throw new RangeError(`dOut: expected the output's shape [${shape.join(', ')}], got ${Array.isArray(dOut.shape) ? `[${dOut.shape.join(', ')}]` : describe(dOut.shape)}`);
  }
  if (!onGpu && dOut.data.length !== count) {
    throw new RangeError(`dOut: shape [${shape.join(', ')}] needs ${count} elements, but data has ${dOut.data.length}`);
  }
  return onGpu;
}

/**
 * forward's result with grad: { output, weights, backward(dOut), release() }. The record's
 * owner is the layer's private side: { module, handle(method), onFree(record), inputShapes,
 * quantized (null, or how the layer's weights are quantized, for params' message), Array
 * (Float32Array, or a float64 layer's Float64Array: dOut's and the gradients' type) }.
 */
/**
 * What a forward result with grad holds on either backend: the output and weights (as a call
 * without grad returns them) and the record it shares with its layer, watched by `leaks` (the
 * backend's leakRegistry: a result garbage-collected while its record is 'ready' frees it late and
 * says so). TrainingResult and the WebGPU layer's GpuTrainingResult extend it.
 */
export class TrainingResultBase {
  #record;

  constructor(record, output, weights, leaks) {
    this.#record = record;
    this.output = output;
    this.weights = weights;
    leaks.register(this, record, this);
  }

  /** True once the backward or release() ran (or the layer was disposed). */
  get released() {
    return this.#record.state !== 'ready';
  }
}

export class TrainingResult extends TrainingResultBase {
  #record;

  constructor(record, output, weights) {
    super(record, output, weights, leakedResults);
    this.#record = record;
  }

  /**
   * dLoss/d(inputs and parameters) for dLoss/dOutput = dOut ({ data: Float32Array, shape } of
   * the output's shape; a float64 layer's: Float64Array). Call once. A layer with quantized weights gives the inputs' gradients
   * only: reading `params` throws a TypeError saying why.
   */
  backward(dOut) {
    const record = this.#record;
    if (record.state === 'done') throw new Error('backward: already called for this forward pass (call forward again)');
    if (record.state === 'disposed') throw new Error('backward: the layer that made this forward pass was disposed');
    if (record.state === 'released') throw new Error('backward: this forward pass was released (release() frees what backward needs)');
    const { owner } = record;
    const handle = owner.handle('backward');
    const { shape } = this.output;
    const count = this.output.data.length;
    try {
      checkDOut(dOut, shape, count, { Type: owner.Array });
    } catch (error) {
      throw withCallName(error, 'backward');
    }
    const { module } = owner;
    const scope = new HeapScope(module);
    try {
      if (!handle.backward(record.saved, scope.copyIn(dOut.data))) throwHandleError(handle, 'backward');
      const copy = (e) => copyOutFloats(module, e.ptr, e.length, owner.Array);
      const [query, key, value, ...params] = handle.gradientEntries();
      const result = {
        query: { data: copy(query), shape: [...owner.inputShapes.query] },
        key: key.length ? { data: copy(key), shape: [...owner.inputShapes.key] } : null,
        value: value.length ? { data: copy(value), shape: [...owner.inputShapes.value] } : null,
        params: Object.fromEntries(params.map((e) => [e.name, copy(e)])),
      };
      // A quantized layer's gradients stop at its inputs: asking for its parameters' says why.
      if (owner.quantized) {
        Object.defineProperty(result, 'params', {
          enumerable: true, get() { throw new TypeError(noParameterGradients(owner.quantized)); },
        });
      }
      leakedResults.unregister(this);
      freeRecord(record, 'done');
      return result;
    } finally {
      handle.releaseGradients();
      scope.free();
    }
  }

  /**
   * backward as a promise (forwardAsync's twin): the same gradients, or backward's error named
   * 'backwardAsync: ...'. On wasm the work runs now, on the calling thread.
   */
  async backwardAsync(dOut) {
    try {
      return this.backward(dOut);
    } catch (error) {
      throw withCallName(error, 'backwardAsync', ['backward']);
    }
  }

  /** Frees what forward kept for backward, without a backward (a no-op after backward or a release). */
  release() {
    leakedResults.unregister(this);
    freeRecord(this.#record, 'released');
  }
}
