// KvCache: the keys and values a layer has seen, kept in wasm memory for decoding (one thin owner
// of a C++ CacheHandle, src/mha/kv_cache.hpp). Made by layer.createCache(); freed by dispose()
// or by the layer's dispose().

const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');
const KINDS = ['none', 'self', 'cross'];

/** truncate(n) of a cache's core handle (both backends' caches): n checked against its length. */
export function truncateHandle(handle, n) {
  if (typeof n !== 'number') throw new TypeError(`truncate: n must be a number, got ${typeof n}`);
  const length = handle.length();
  if (!Number.isInteger(n) || n < 0 || n > length) {
    throw new RangeError(`truncate: n must be an integer from 0 to the cache's length (${length}), got ${n}`);
  }
  handle.truncate(n);
}

/** Internal: the layer side of a cache, so only the layer that made it can run it. */
export const cacheHandleOf = new WeakMap();

export class KvCache {
  #handle;
  #dtype;
  #onDispose;
  #setKeyValue;

  /** @internal Use layer.createCache(). */
  constructor(handle, dtype, { onDispose, setKeyValue }) {
    this.#handle = handle;
    this.#dtype = dtype;
    this.#onDispose = onDispose;
    this.#setKeyValue = setKeyValue;
    cacheHandleOf.set(this, handle);
  }

  #live(method) {
    if (!this.#handle) throw new TypeError(`KvCache.${method}: this cache was disposed`);
    return this.#handle;
  }

  /** Tokens held (per batch row). */
  get length() { return this.#live('length').length(); }
  /** The most tokens it can hold, fixed at creation. */
  get capacity() { return this.#live('capacity').capacity(); }
  /** Batch rows. */
  get batch() { return this.#live('batch').batch(); }
  /** 'f32' or 'f16'. */
  get dtype() { this.#live('dtype'); return this.#dtype; }
  /** Bytes of wasm memory it holds: batch x numKvHeads x capacity x (headDim + valueHeadDim) x 4 (2 for f16). */
  get byteSize() { return this.#live('byteSize').byteSize(); }
  /** 'none' (empty), 'self' (forward appends) or 'cross' (setKeyValue filled it). */
  get kind() { return KINDS[this.#live('kind').kind()]; }
  /** False once disposed (directly or by its layer's dispose()). */
  get alive() { return this.#handle !== null; }

  /** Keeps the first n tokens (undo a rejected draft, edit the prompt's tail). */
  truncate(n) {
    truncateHandle(this.#live('truncate'), n);
    return this;
  }

  /** Length 0 and no kind; the memory stays. */
  reset() {
    this.#live('reset').reset();
    return this;
  }

  /**
   * Cross-attention: projects key [B, S, kdim] and value [B, S, vdim] (an encoder's states) into
   * the cache once; forward(query, null, null, { cache }) then attends to them without appending.
   */
  setKeyValue(key, value) {
    this.#live('setKeyValue');
    this.#setKeyValue(this, key, value);
    return this;
  }

  /** Frees its wasm memory. Safe to call more than once. */
  dispose() {
    if (this.#handle) {
      this.#onDispose(this);
      this.#handle.delete();
      this.#handle = null;
    }
  }

  [disposeSymbol]() {
    this.dispose();
  }
}
