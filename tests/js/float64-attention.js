// A float64 reference of one attention output row, for tests that check sampled rows of the
// wasm layer (PyTorch's nn.MultiheadAttention with in_proj / out_proj and biases).

/** Row `row` of x [rows, E] times W^T [n, E] plus b, in float64: one projection of one token. */
export function projectRow(x, row, weight, bias, offset = 0, n = bias.length - offset) {
  const E = weight.length / (bias.length);
  const y = new Float64Array(n);
  for (let o = 0; o < n; o++) {
    let acc = bias[offset + o];
    for (let d = 0; d < E; d++) acc += x[row * E + d] * weight[(offset + o) * E + d];
    y[o] = acc;
  }
  return y;
}

/**
 * softmax(q k^T / sqrt(Dh)) v for each of `numHeads` heads of the query row `q` against the rows
 * `keys` and `values` (arrays of Float64Array), then out_proj: the output row, E floats.
 */
export function attendRow(q, keys, values, numHeads, outWeight, outBias) {
  const E = q.length, Dh = E / numHeads;
  const attended = new Float64Array(E);
  for (let h = 0; h < numHeads; h++) {
    const scores = keys.map((k) => {
      let dot = 0;
      for (let d = h * Dh; d < (h + 1) * Dh; d++) dot += q[d] * k[d];
      return dot / Math.sqrt(Dh);
    });
    const max = Math.max(...scores);
    const p = scores.map((s) => Math.exp(s - max));
    const sum = p.reduce((a, c) => a + c, 0);
    for (let j = 0; j < keys.length; j++) for (let d = h * Dh; d < (h + 1) * Dh; d++) attended[d] += (p[j] / sum) * values[j][d];
  }
  return projectRow(attended, 0, outWeight, outBias);
}
