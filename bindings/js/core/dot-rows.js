// Rows of dot products on typed arrays, the inner loop of the package's JavaScript products
// (tfjs/conv1d.js: Conv1D's forward and input gradient) and the demo trainer's
// (web/training/matmul.js: x Wᵀ). Plain loops: JavaScript runs a few loads per cycle, so four
// rows share each load of the common operand.

/**
 * out[outAt + c] = (or += when `accumulate`) the dot product of a[aAt .. aAt + n) and row c of b
 * (b[bAt + c * bStride ..] + n), for c < count: four rows at a time, so each load of a feeds four
 * multiply-adds.
 */
export function dotRows(a, aAt, b, bAt, bStride, n, out, outAt, count, accumulate) {
  let c = 0;
  for (; c + 4 <= count; c += 4) {
    const b0 = bAt + c * bStride, b1 = b0 + bStride, b2 = b1 + bStride, b3 = b2 + bStride;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let i = 0; i < n; i++) {
      const av = a[aAt + i];
      s0 += av * b[b0 + i];
      s1 += av * b[b1 + i];
      s2 += av * b[b2 + i];
      s3 += av * b[b3 + i];
    }
    if (accumulate) {
      out[outAt + c] += s0; out[outAt + c + 1] += s1; out[outAt + c + 2] += s2; out[outAt + c + 3] += s3;
    } else {
      out[outAt + c] = s0; out[outAt + c + 1] = s1; out[outAt + c + 2] = s2; out[outAt + c + 3] = s3;
    }
  }
  for (; c < count; c++) {
    const b0 = bAt + c * bStride;
    let s = 0;
    for (let i = 0; i < n; i++) s += a[aAt + i] * b[b0 + i];
    out[outAt + c] = accumulate ? out[outAt + c] + s : s;
  }
}
