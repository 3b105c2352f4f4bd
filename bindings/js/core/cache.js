// KvCache: the keys and values a layer has seen, kept in wasm memory for decoding (one thin owner
// of a C++ CacheHandle, src/mha/cache/kv_cache.hpp). Made by layer.createCache(); freed by dispose()
// or by the layer's dispose(). KvCacheBase: what it shares with the WebGPU layer's GpuKvCache.

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

/** A cache's core handle while it is alive (KvCacheBase's; deleted when the cache is disposed). */
const liveHandles = new WeakMap();

/** `cache`'s core handle, or a TypeError naming `method` when the cache was disposed. */
export function liveHandle(cache, method) {
  const handle = liveHandles.get(cache);
  if (!handle) throw new TypeError(`KvCache.${method}: this cache was disposed`);
  return handle;
}

/**
 * What the wasm layer's KvCache and the WebGPU layer's GpuKvCache share: the surface over the core
 * cache handle (length, capacity, batch, kind, truncate, reset), and disposal. A subclass adds
 * dtype, byteSize and setKeyValue over the memory it owns, and gives `free` to free that memory
 * (the handle is deleted here); `onDispose(cache)` tells the layer.
 */
export class KvCacheBase {
  #onDispose;
  #free;

  constructor(handle, onDispose, free) {
    liveHandles.set(this, handle);
    this.#onDispose = onDispose;
    this.#free = free;
  }

  /** Tokens held (per batch row). */
  get length() { return liveHandle(this, 'length').length(); }
  /** The most tokens it can hold, fixed at creation. */
  get capacity() { return liveHandle(this, 'capacity').capacity(); }
  /** Batch rows. */
  get batch() { return liveHandle(this, 'batch').batch(); }
  /** 'none' (empty), 'self' (a forward call appends) or 'cross' (setKeyValue filled it). */
  get kind() { return KINDS[liveHandle(this, 'kind').kind()]; }
  /** False once disposed (directly or by its layer's dispose()). */
  get alive() { return liveHandles.has(this); }

  /** Keeps the first n tokens (undo a rejected draft, edit the prompt's tail). */
  truncate(n) {
    truncateHandle(liveHandle(this, 'truncate'), n);
    return this;
  }

  /** Length 0 and no kind; the memory stays. */
  reset() {
    liveHandle(this, 'reset').reset();
    return this;
  }

  /** Frees its memory. Safe to call more than once. */
  dispose() {
    const handle = liveHandles.get(this);
    if (handle) {
      this.#onDispose(this);
      this.#free();
      handle.delete();
      liveHandles.delete(this);
    }
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

export class KvCache extends KvCacheBase {
  #dtype;
  #setKeyValue;

  /** @internal Use layer.createCache(). */
  constructor(handle, dtype, { onDispose, setKeyValue }) {
    super(handle, onDispose, () => {});  // (its memory is the handle's)
    this.#dtype = dtype;
    this.#setKeyValue = setKeyValue;
    cacheHandleOf.set(this, handle);
  }

  /** 'f32' or 'f16'. */
  get dtype() { liveHandle(this, 'dtype'); return this.#dtype; }
  /** Bytes of wasm memory it holds: batch x numKvHeads x capacity x (headDim + valueHeadDim) x 4 (2 for f16). */
  get byteSize() { return liveHandle(this, 'byteSize').byteSize(); }

  /**
   * Cross-attention: projects key [B, S, kdim] and value [B, S, vdim] (an encoder's states) into
   * the cache once; forward(query, null, null, { cache }) then attends to them without appending.
   */
  setKeyValue(key, value) {
    liveHandle(this, 'setKeyValue');
    this.#setKeyValue(this, key, value);
    return this;
  }
}
