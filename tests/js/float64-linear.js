// The float64 reference of nn.Linear for the tests of linear() (linear.test.js) and mha.Linear
// (linear-layer.test.js), and the tolerance their float32 results are held to.
import assert from 'node:assert/strict';

/** y[r, o] = sum_i x[r, i] W[o, i] + b[o], in float64. */
export function textbookLinear(x, w, b, rows, inF, outF) {
  const y = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = b ? b[o] : 0;
      for (let i = 0; i < inF; i++) s += x[r * inF + i] * w[o * inF + i];
      y[r * outF + o] = s;
    }
  }
  return y;
}

/** got (float32 sums of `depth` products of values below 1) against want, element by element. */
export function assertClose(name, got, want, depth) {
  assert.equal(got.length, want.length, `${name}: length`);
  const tolerance = 1e-6 * depth;
  got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= tolerance * (1 + Math.abs(want[i])), `${name}[${i}]: ${v} vs ${want[i]}`));
}
