// The attention function's tensors between the layouts a caller gives them in ([B, H, N, D], or
// the 3-D form's rows) and the rows the layer's kernels read ([B * N, H * D], attention.js), on
// the GPU: steps_copy.wgsl for a layout change (the step path's copy, every head) and buffer
// copies for the rows of a past and of the new keys within each batch row. Used by
// attention-function.js (inputs, results, presents) and attention-function-backward.js (dOut, gradients).
import { encodeCopy } from './steps.js';

/**
 * One tensor between its [B, H, N, D] layout (`tensor`) and the kernels' rows [B * rowsPerBatch,
 * H * D] (`rows`, its first N rows of each batch row), on the GPU (steps.js' steps_copy, every
 * head): toRows true reads the tensor, false writes it.
 */
export function encodeLayout(device, pass, buffers, { tensor, rows, B, H, N, D, rowsPerBatch = N, toRows }) {
  encodeCopy(device, pass, buffers, {
    buffer: rows, step: tensor, flags: buffers.upload(new Uint32Array(H).fill(1), 'every head'), count: B * H * N * D,
    heads: H, rows: N, d: D, bufferRows: rowsPerBatch, split: true, toBuffer: toRows,
  });
}

/** For each batch row, `n` rows of `width` floats from `from` (rows fromStart... of fromRows) to `to` (at toStart of toRows). */
export function copyRows(encoder, { from, fromRows, fromStart = 0, to, toRows, toStart = 0, n, B, width }) {
  if (n * width === 0) return;
  for (let b = 0; b < B; b++) {
    encoder.copyBufferToBuffer(from, (b * fromRows + fromStart) * width * 4, to, (b * toRows + toStart) * width * 4, n * width * 4);
  }
}
