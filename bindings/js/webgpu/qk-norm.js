// The q/k norms on the GPU (qk_norm.wgsl; config qkNorm, src/mha/kernels/qk_norm.hpp on the CPU),
// in place on projected q or k rows, before rotary.
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * Encodes the norm of `rows` rows of x (row stride `rowStride`, `heads` heads of headDim) with
 * `weight` (a GPUBuffer of the norm's weights): per head, or over the row's heads * headDim.
 */
export function encodeQkNorm(device, pass, buffers, { x, weight, rows, rowStride, heads, headDim, qkNorm }) {
  const perHead = qkNorm.over === 'head';
  const groups = perHead ? heads : 1, size = perHead ? headDim : heads * headDim;
  if (rows * groups === 0) return;
  const params = uniformData('qk_norm', { rows, row_stride: rowStride, groups, size, eps: qkNorm.eps });
  dispatch(device, pass, pipeline(device, 'qk_norm'), { 0: x, 1: weight, 2: buffers.uniform(params, 'q/k norm') },
    flatWorkgroups('qk_norm', rows * groups));
}
