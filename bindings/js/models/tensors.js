// A checkpoint's tensors as they are stored: F32 as Float32Array, F16 and BF16 as their raw 16-bit
// patterns (Uint16Array), so a half-precision model holds half the memory. Each is widened to
// float32 where a kernel needs it: whole for a matrix product (then dropped), a row for an
// embedding lookup. No DOM: runs in the page's worker and in Node.
import { halfToFloat } from '../formats/float16.js';

export const FLOAT_DTYPES = ['F32', 'F16', 'BF16'];

/** binary16 -> float32 for all 65536 patterns, built on first use (a table lookup per element). */
let halfTable = null;
function halfToFloatTable() {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) halfTable[bits] = halfToFloat(bits);
  }
  return halfTable;
}

/** Elements [begin, end) of a stored tensor as float32 (into `out` when given). */
export function widen(tensor, begin = 0, end = tensor.data.length, out = new Float32Array(end - begin)) {
  const { dtype, data } = tensor;
  if (dtype === 'F32') {
    out.set(data.subarray(begin, end));
  } else if (dtype === 'BF16') {
    // bfloat16 is the upper half of a float32.
    const bits = new Uint32Array(out.buffer, out.byteOffset, end - begin);
    for (let i = begin; i < end; i++) bits[i - begin] = data[i] << 16;
  } else if (dtype === 'F16') {
    const table = halfToFloatTable();
    for (let i = begin; i < end; i++) out[i - begin] = table[data[i]];
  } else {
    throw new TypeError(`widen: dtype must be one of ${FLOAT_DTYPES.join(', ')}, got ${dtype}`);
  }
  return out;
}

/** The transpose of a [rows, cols] tensor, in its own dtype (GPT-2's Conv1D weights are [in, out]). */
export function transposed({ dtype, shape: [rows, cols], data }) {
  const out = new data.constructor(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  }
  return { dtype, shape: [cols, rows], data: out };
}

/** Bytes a stored tensor holds. */
export const byteSize = (tensor) => tensor.data.byteLength;
