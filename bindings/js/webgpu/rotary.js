// Rotary position embedding on the GPU (rotary.wgsl), in place on projected q or k rows. The
// angles' cos and sin are computed here in float64, as src/mha/layer/rotary.cpp does, then rounded.
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/** [rows, dim / 2, 2] cos/sin of each row's position: positions[r], else first + its row within its batch row. */
export function rotaryTable({ dim, base }, batch, rowsPerBatch, positions, first = 0) {
  const half = dim / 2;
  const invFreq = Array.from({ length: half }, (_, t) => 1 / base ** ((2 * t) / dim));
  const table = new Float32Array(batch * rowsPerBatch * half * 2);
  for (let r = 0; r < batch * rowsPerBatch; r++) {
    const position = positions ? positions[r] : first + (r % rowsPerBatch);
    for (let t = 0; t < half; t++) {
      const angle = position * invFreq[t];
      table[(r * half + t) * 2] = Math.cos(angle);
      table[(r * half + t) * 2 + 1] = Math.sin(angle);
    }
  }
  return table;
}

/** Encodes the rotation of `rows` rows of x (row stride `rowStride`, `heads` heads of headDim). */
export function encodeRotary(device, pass, buffers, { x, table, rows, rowStride, heads, headDim, rotary }) {
  const half = rotary.dim / 2;
  const total = rows * heads * half;
  if (total === 0) return;
  const params = buffers.uniform(uniformData('rotary', {
    rows, row_stride: rowStride, heads, head_dim: headDim, half, interleaved: Boolean(rotary.interleaved),
  }), 'rotary');
  dispatch(device, pass, pipeline(device, 'rotary'), { 0: x, 1: buffers.upload(table, 'rotary table'), 2: params },
    flatWorkgroups('rotary', total));
}
