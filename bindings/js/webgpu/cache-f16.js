// float16 KV caches on the GPU: the cache's keys and values held as packed halves (2 per u32,
// [B, capacity, features] elements), written by cache_f16_pack.wgsl (float32 rows rounded to
// nearest even, as the wasm layer's f16 cache rounds on append) and read as they are by the
// attention kernels (as f16, or unpacked from u32 words without shader-f16: half-reads.js).
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/** Bytes of a buffer holding `elements` halves. */
export const halfBufferBytes = (elements) => Math.max(16, Math.ceil(elements / 8) * 16);

/**
 * Encodes: per batch row b < B, the `rows` rows of `features` floats of src (from row b * rows)
 * written as halves into `cache` at rows first .. first + rows - 1 of batch row b (capacity rows each).
 */
export function encodePackHalves(device, pass, buffers, { src, cache, B, rows, first, features, capacity }) {
  const count = rows * features;
  if (count === 0 || B === 0) return;
  const params = buffers.uniform(uniformData('cache_f16_pack', { first: first * features, count, batch_stride: capacity * features }), 'f16 pack');
  // (a word of two halves per invocation, and the two words where the rows may start or end mid-word)
  dispatch(device, pass, pipeline(device, 'cache_f16_pack'), { 0: src, 1: cache, 2: params },
    flatWorkgroups('cache_f16_pack', Math.floor(count / 2) + 2, B));
}

/**
 * Encodes the first `rows` rows of each batch row of the f16 `cache` widened into a new float32
 * buffer [B, rows, features]; returns it. For the step path (steps.js), whose plain kernels read
 * float32; the fused kernels read the halves directly (half-reads.js).
 */
export function encodeUnpackHalves(device, pass, buffers, { cache, B, rows, features, capacity, label }) {
  const count = rows * features;
  const out = buffers.storage(B * count, label);
  if (count === 0 || B === 0) return out;
  const params = buffers.uniform(uniformData('cache_f16_unpack', { count, batch_stride: capacity * features }), 'f16 unpack');
  dispatch(device, pass, pipeline(device, 'cache_f16_unpack'), { 0: cache, 1: out, 2: params }, flatWorkgroups('cache_f16_unpack', count, B));
  return out;
}
