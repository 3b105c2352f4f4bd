// A KV cache on the GPU for decoding with a WebGPU layer: the keys [B, capacity, numKvHeads *
// headDim] and values [B, capacity, numKvHeads * valueHeadDim] in two GPU buffers, and a
// storage-less cache handle of the planner (src/mha/cache/kv_cache.hpp) that tracks the length and
// kind, so each call with the cache is checked by the C++ plan as the wasm layer's are. Also the
// layer's side of its caches: making one (createCache), checking a call's `cache` option,
// setKeyValue's GPU work, and a call with a cache run so that no other changes it meanwhile.
import { KvCacheBase, liveHandle } from '../core/cache.js';
import { noWeightsYet } from '../api/errors.js';
import { throwHandleError } from '../core/handle-errors.js';
import { checkInteger, checkKnownKeys, checkPlainObject, describe } from '../api/validate.js';
import { COPY_DST, COPY_SRC, STORAGE } from './buffer-usage.js';
import { halfBufferBytes } from './cache-f16.js';
import { submitChecked } from './gpu-work.js';
import { encodeKeyValue } from './key-value.js';
import { encodeSwapPass, isSequenceFirst } from './sequence-first.js';
import { CallBuffers, checkInput } from './tensors.js';

const CROSS = 2;  // a cache handle's kind(): 0 none, 1 self, 2 cross

/** Internal: the layer side of a cache (its planner handle and GPU buffers). */
export const cacheStateOf = new WeakMap();

export class GpuKvCache extends KvCacheBase {
  #state;

  /** @internal Use layer.createCache(). */
  constructor(state, onDispose) {
    super(state.handle, onDispose, () => {
      state.keys.destroy();
      state.values.destroy();
      this.#state = null;
    });
    this.#state = state;
    cacheStateOf.set(this, state);
  }

  /** 'f32' or 'f16' (packed halves on the GPU). */
  get dtype() { liveHandle(this, 'dtype'); return this.#state.dtype; }
  /** Bytes of GPU memory its keys and values hold. */
  get byteSize() { liveHandle(this, 'byteSize'); return this.#state.keys.size + this.#state.values.size; }

  /**
   * Cross-attention: projects key [B, S, kdim] and value [B, S, vdim] (an encoder's states) into
   * the cache once, on the GPU; forwardAsync(query, null, null, { cache }) then attends to them.
   */
  setKeyValue(key, value) {
    liveHandle(this, 'setKeyValue');
    this.#state.setKeyValue(this, key, value);
    return this;
  }
}

/**
 * createCache's work for a layer: `options` ({ batch?, capacity, dtype? }) checked, the planner's
 * cache handle and the GPU buffers made. `layer`: { device, config, planner, checkSize (the
 * device's limit on a buffer), setKeyValue(cache, key, value), onDispose(cache) }.
 */
export function createGpuCache(layer, options) {
  checkPlainObject('createCache: options', options);
  checkKnownKeys('options', options, ['batch', 'capacity', 'dtype']);
  checkInteger('batch', options.batch, { optional: true });
  checkInteger('capacity', options.capacity);
  const dtype = options.dtype ?? 'f32';
  if (dtype !== 'f32' && dtype !== 'f16') throw new TypeError(`dtype must be 'f32' or 'f16', got ${describe(dtype)}`);
  const c = layer.config, batch = options.batch ?? 1;
  const rows = batch * options.capacity;
  layer.checkSize('the cache\'s keys', rows * c.numKvHeads * c.headDim);
  layer.checkSize('the cache\'s values', rows * c.numKvHeads * c.valueHeadDim);
  const handle = layer.planner.createPlannedCache(batch, options.capacity);
  if (!handle) throwHandleError(layer.planner, 'createCache');  // (the wasm layer's checks: batch, capacity, appended keys)
  const make = (floats, label) => layer.device.createBuffer({
    label, size: dtype === 'f16' ? halfBufferBytes(floats) : Math.max(16, floats * 4), usage: STORAGE | COPY_DST | COPY_SRC,
  });
  const state = {
    handle, dtype, busy: false, pending: null,
    setKeyValue: layer.setKeyValue,
    keys: make(rows * c.numKvHeads * c.headDim, 'cache keys'),
    values: make(rows * c.numKvHeads * c.valueHeadDim, 'cache values'),
  };
  return new GpuKvCache(state, layer.onDispose);
}

/** Whether a cache (its state) holds cross-attention keys and values (setKeyValue's). */
export const isCross = (state) => state.handle.kind() === CROSS;

/** A call's `cache` option checked (its class, alive, not busy): its state, or null when none. */
export function checkCache(cache) {
  if (cache === undefined || cache === null) return null;
  if (!(cache instanceof GpuKvCache)) {
    throw new TypeError(`cache must be a KvCache from this WebGPU layer's createCache(), got ${describe(cache)}`);
  }
  if (!cache.alive) throw new TypeError('cache: this cache was disposed');
  const state = cacheStateOf.get(cache);
  if (state.busy) throw new TypeError('cache: a call with this cache is still running; await it before the next');
  return state;
}

/**
 * setKeyValue's GPU work (key-value.js), checked tensors k and v (CPU or GPU), on the weights `w`
 * of a layer with resolved config `c`; `kernels`: its plan. The GPU's verdict comes later: the
 * next call with the cache awaits it (state.pending; the handle reset if it failed). A later
 * setKeyValue replaces the contents, and with them an earlier one's verdict.
 */
function submitKeyValue(device, state, c, w, k, v, kernels) {
  const B = state.handle.batch(), S = state.handle.length();
  const buffers = new CallBuffers(device);
  let submitted;
  try {
    submitted = submitChecked(device, () => {
      const encoder = device.createCommandEncoder();
      // (Sequence-first [S, B, ·] tensors are swapped into batch-first rows: sequence-first.js.)
      const input = (t, label) => {
        const given = t.onGpu ? t.buffer : buffers.upload(t.data, label);
        return isSequenceFirst(c, t.shape) ? encodeSwapPass(device, encoder, buffers, given, t.shape, `${label} batch-first`) : given;
      };
      encodeKeyValue(device, encoder, buffers, c, w, {
        B, S, xk: input(k, 'key'), xv: input(v, 'value'), kernels,
        cache: { keys: state.keys, values: state.values, capacity: state.handle.capacity(), dtype: state.dtype },
      });
      device.queue.submit([encoder.finish()]);
    }, { call: 'setKeyValue' });
  } catch (error) {
    buffers.free();
    throw error;
  }
  const ticket = (state.keyValueTicket = (state.keyValueTicket ?? 0) + 1);
  state.pending = submitted.verdict.then((failed) => {
    buffers.free();
    if (!failed || state.keyValueTicket !== ticket) return null;
    state.handle.reset();
    return failed;
  });
}

/**
 * cache.setKeyValue on the GPU for `layer` ({ device, config, planner, weights (its LayerWeights),
 * kernels(sizes) (its kernel plan) }): checked by the planner (the wasm layer's checks), then
 * submitted (submitKeyValue).
 */
export function setKeyValueOnGpu(layer, cache, key, value) {
  const state = checkCache(cache);
  if (!layer.weights.loaded) throw noWeightsYet();
  const k = checkInput('key', key, { expected: '[B, S, kdim]' });
  const v = checkInput('value', value, { expected: '[B, S, vdim]' });
  if (!layer.planner.planKeyValue(state.handle, { shape: k.shape }, { shape: v.shape })) throwHandleError(layer.planner, 'setKeyValue');
  const B = state.handle.batch(), S = state.handle.length();
  submitKeyValue(layer.device, state, layer.config, layer.weights.current(), k, v, layer.kernels({ B, L: 0, S, newKeys: S }));
}

/**
 * Runs `run()` (a call with the cache whose state is `state`, or none) once the cache's pending
 * setKeyValue succeeded, with the cache marked busy meanwhile: its length was planned with, so no
 * other call may change it.
 */
export async function runWithCache(state, run) {
  if (state?.pending) {  // (a setKeyValue still on the GPU; if it failed its handle was reset)
    const failed = await state.pending;
    state.pending = null;
    if (failed) throw failed;
  }
  if (!state) return run();
  state.busy = true;
  try {
    return await run();
  } finally {
    state.busy = false;
  }
}
