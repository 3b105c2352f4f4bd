// The q/k norms on the GPU (qk_norm.wgsl; config qkNorm, src/mha/kernels/qk_norm.hpp on the CPU),
// in place on projected q or k rows, before rotary.
import { dispatch, flatGroups, pipeline } from './pipelines.js';

/**
 * Encodes the norm of `rows` rows of x (row stride `rowStride`, `heads` heads of headDim) with
 * `weight` (a GPUBuffer of the norm's weights): per head, or over the row's heads * headDim.
 */
export function encodeQkNorm(device, pass, buffers, { x, weight, rows, rowStride, heads, headDim, qkNorm }) {
  const perHead = qkNorm.over === 'head';
  const groups = perHead ? heads : 1, size = perHead ? headDim : heads * headDim;
  if (rows * groups === 0) return;
  const params = new ArrayBuffer(32);
  new Uint32Array(params, 0, 4).set([rows, rowStride, groups, size]);
  new Float32Array(params, 16, 1)[0] = qkNorm.eps;
  dispatch(device, pass, pipeline(device, 'qk_norm'), { 0: x, 1: weight, 2: buffers.uniform(new Uint32Array(params), 'q/k norm') },
    flatGroups(rows * groups));
}
