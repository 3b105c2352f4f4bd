// The result of forward(..., { grad: true }): the output, plus what the backward pass needs, kept
// in wasm memory (src/mha/saved_forward.hpp) until backward() or release().
import { copyOutFloats, HeapScope } from './heap.js';
import { throwHandleError } from './errors.js';
import { describe } from './validate.js';

let warnedAboutLeak = false;
/** A training result garbage-collected with its state still held: free it, and say so once. */
const leakedResults = new FinalizationRegistry((saved) => {
  if (!warnedAboutLeak) {
    warnedAboutLeak = true;
    console.warn('mha-wasm: a forward result with grad: true was garbage-collected before backward() or release(); '
      + 'its saved state was freed late. Call r.backward(dOut) or r.release() for every such result.');
  }
  saved.delete();
});

function sameShape(a, b) {
  return Array.isArray(a) && a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * forward's result with grad: { output, weights, backward(dOut), release() }. `layer` is the
 * owning layer's private side: { module, handle(method), onDone(result) }.
 */
export class TrainingResult {
  #saved;
  #layer;
  #state = 'ready';  // 'ready' | 'done' (backward ran) | 'released'

  constructor(saved, layer, output, weights) {
    this.#saved = saved;
    this.#layer = layer;
    this.output = output;
    this.weights = weights;
    leakedResults.register(this, saved, this);
  }

  /**
   * dLoss/d(inputs and parameters) for dLoss/dOutput = dOut ({ data: Float32Array, shape } of
   * the output's shape). Call once.
   */
  backward(dOut) {
    if (this.#state === 'done') throw new Error('backward: already called for this forward pass (call forward again)');
    if (this.#state === 'disposed') throw new Error('backward: the layer that made this forward pass was disposed');
    if (this.#state === 'released') throw new Error('backward: this forward pass was released (release() frees what backward needs)');
    const handle = this.#layer.handle('backward');
    const { shape } = this.output;
    const count = this.output.data.length;
    if (dOut === null || typeof dOut !== 'object' || !(dOut.data instanceof Float32Array)) {
      const got = dOut !== null && typeof dOut === 'object' && !ArrayBuffer.isView(dOut) ? `data ${describe(dOut.data)}` : describe(dOut);
      throw new TypeError(`backward: dOut must be { data: Float32Array, shape: [${shape.join(', ')}] } (dLoss/dOutput), got ${got}`);
    }
    if (dOut.shape !== undefined && !sameShape(dOut.shape, shape)) {
      throw new RangeError(`backward: dOut: expected the output's shape [${shape.join(', ')}], got ${Array.isArray(dOut.shape) ? `[${dOut.shape.join(', ')}]` : describe(dOut.shape)}`);
    }
    if (dOut.data.length !== count) {
      throw new RangeError(`backward: dOut: shape [${shape.join(', ')}] needs ${count} elements, but data has ${dOut.data.length}`);
    }
    const { module } = this.#layer;
    const scope = new HeapScope(module);
    try {
      if (!handle.backward(this.#saved, scope.copyIn(dOut.data))) throwHandleError(handle, 'backward');
      const entries = handle.gradientEntries();
      const copy = (e) => copyOutFloats(module, e.ptr, e.length);
      const [query, key, value, ...params] = entries;
      const result = {
        query: { data: copy(query), shape: [...this.#layer.inputShapes.query] },
        key: key.length ? { data: copy(key), shape: [...this.#layer.inputShapes.key] } : null,
        value: value.length ? { data: copy(value), shape: [...this.#layer.inputShapes.value] } : null,
        params: Object.fromEntries(params.map((e) => [e.name, copy(e)])),
      };
      this.#free('done');
      return result;
    } finally {
      handle.releaseGradients();
      scope.free();
    }
  }

  /** Frees what forward kept for backward, without a backward (a no-op after backward or a release). */
  release() {
    if (this.#state === 'ready') this.#free('released');
  }

  /** Frees the saved state (the owning layer's dispose() calls it). */
  #free(state) {
    this.#state = state;
    leakedResults.unregister(this);
    this.#saved.delete();
    this.#saved = null;
    this.#layer.onDone(this);
  }

  /** Called by the owning layer's dispose(). */
  layerDisposed() {
    if (this.#state === 'ready') this.#free('released');
    this.#state = 'disposed';
  }

  get released() {
    return this.#state !== 'ready';
  }
}
