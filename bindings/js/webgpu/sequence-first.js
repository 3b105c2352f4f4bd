// PyTorch's default layout, sequence-first [L, B, features] (config batchFirst: false), on the
// GPU: the call's inputs are swapped into the batch-first [B, L, features] every kernel reads, and
// its output swapped back; in backward, dLoss/dOutput in and the inputs' gradients out. One copy of
// each tensor per call (swap_leading_axes.wgsl), as the wasm layer's (src/mha/layer/sequence_first.hpp);
// docs/webgpu.md gives what it costs against the call. The attention weights are [B, L, S] either
// way, as PyTorch's.
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * Whether a batchFirst: false layer's tensor of `shape` (a call's planned output, a setKeyValue
 * key) is sequence-first: batched, 3-D (unbatched [L, features] tensors have one layout).
 */
export const isSequenceFirst = (config, shape) => config.batchFirst === false && shape.length === 3;

/**
 * Encodes into `pass` a new buffer (made in `buffers`) holding x [d0, d1, features] with its two
 * leading axes swapped: [d1, d0, features]. Returns it.
 */
export function encodeSwapLeadingAxes(device, pass, buffers, x, [d0, d1, features], label) {
  const floats = d0 * d1 * features;
  const y = buffers.storage(floats, label);
  if (floats === 0) return y;
  const dims = buffers.uniform(uniformData('swap_leading_axes', { d0, d1, features }), 'swap dims');
  dispatch(device, pass, pipeline(device, 'swap_leading_axes'), { 0: x, 1: y, 2: dims }, flatWorkgroups('swap_leading_axes', floats));
  return y;
}

/** encodeSwapLeadingAxes in a compute pass of its own in `encoder`. */
export function encodeSwapPass(device, encoder, buffers, x, shape, label) {
  const pass = encoder.beginComputePass();
  const y = encodeSwapLeadingAxes(device, pass, buffers, x, shape, label);
  pass.end();
  return y;
}
