// A KV cache on the GPU for decoding with a WebGPU layer: the keys [B, capacity, numKvHeads *
// headDim] and values [B, capacity, numKvHeads * valueHeadDim] in two GPU buffers, and a
// storage-less cache handle of the planner (src/mha/kv_cache.hpp) that tracks the length and
// kind, so each call with the cache is checked by the C++ plan as the wasm layer's are.

const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');
const KINDS = ['none', 'self', 'cross'];

/** Internal: the layer side of a cache (its planner handle and GPU buffers). */
export const cacheStateOf = new WeakMap();

export class GpuKvCache {
  #state;
  #onDispose;

  /** @internal Use layer.createCache(). */
  constructor(state, onDispose) {
    this.#state = state;
    this.#onDispose = onDispose;
    cacheStateOf.set(this, state);
  }

  #live(method) {
    if (!this.#state) throw new TypeError(`KvCache.${method}: this cache was disposed`);
    return this.#state;
  }

  /** Tokens held (per batch row). */
  get length() { return this.#live('length').handle.length(); }
  /** The most tokens it can hold, fixed at creation. */
  get capacity() { return this.#live('capacity').handle.capacity(); }
  /** Batch rows. */
  get batch() { return this.#live('batch').handle.batch(); }
  /** 'f32' or 'f16' (packed halves on the GPU). */
  get dtype() { return this.#live('dtype').dtype; }
  /** Bytes of GPU memory its keys and values hold. */
  get byteSize() { const s = this.#live('byteSize'); return s.keys.size + s.values.size; }
  /** 'none' (empty), 'self' (forwardAsync appends) or 'cross' (setKeyValue filled it). */
  get kind() { return KINDS[this.#live('kind').handle.kind()]; }
  /** False once disposed (directly or by its layer's dispose()). */
  get alive() { return this.#state !== null; }

  /** Keeps the first n tokens. */
  truncate(n) {
    const { handle } = this.#live('truncate');
    if (typeof n !== 'number') throw new TypeError(`truncate: n must be a number, got ${typeof n}`);
    const length = handle.length();
    if (!Number.isInteger(n) || n < 0 || n > length) {
      throw new RangeError(`truncate: n must be an integer from 0 to the cache's length (${length}), got ${n}`);
    }
    handle.truncate(n);
    return this;
  }

  /** Length 0 and no kind; the memory stays. */
  reset() {
    this.#live('reset').handle.reset();
    return this;
  }

  /**
   * Cross-attention: projects key [B, S, kdim] and value [B, S, vdim] (an encoder's states) into
   * the cache once, on the GPU; forwardAsync(query, null, null, { cache }) then attends to them.
   */
  setKeyValue(key, value) {
    const state = this.#live('setKeyValue');
    state.setKeyValue(this, key, value);
    return this;
  }

  /** Frees its GPU memory. Safe to call more than once. */
  dispose() {
    if (this.#state) {
      this.#onDispose(this);
      this.#state.keys.destroy();
      this.#state.values.destroy();
      this.#state.handle.delete();
      this.#state = null;
    }
  }

  [disposeSymbol]() {
    this.dispose();
  }
}
