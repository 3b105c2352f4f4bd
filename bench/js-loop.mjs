// The floor: the same forward pass as plain JavaScript loops over Float32Arrays.
function linear(x, rows, inp, w, b, out, wOffset, bOffset) {
  const y = new Float32Array(rows * out);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < out; o++) {
      let acc = b[bOffset + o];
      const wo = wOffset + o * inp, xr = r * inp;
      for (let i = 0; i < inp; i++) acc += x[xr + i] * w[wo + i];
      y[r * out + o] = acc;
    }
  }
  return y;
}

export function forwardJs({ B, L, S, E, H }, weights, query, key) {
  const Dh = E / H, scale = 1 / Math.sqrt(Dh);
  const w = weights.in_proj_weight, b = weights.in_proj_bias;
  const q = linear(query, B * L, E, w, b, E, 0, 0);
  const k = linear(key, B * S, E, w, b, E, E * E, E);
  const v = linear(key, B * S, E, w, b, E, 2 * E * E, 2 * E);
  const attended = new Float32Array(B * L * E), p = new Float32Array(S);
  for (let bt = 0; bt < B; bt++) {
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) {
        const qi = (bt * L + i) * E + h * Dh;
        let max = -Infinity;
        for (let j = 0; j < S; j++) {
          const kj = (bt * S + j) * E + h * Dh;
          let dot = 0;
          for (let d = 0; d < Dh; d++) dot += q[qi + d] * k[kj + d];
          p[j] = dot * scale;
          if (p[j] > max) max = p[j];
        }
        let sum = 0;
        for (let j = 0; j < S; j++) sum += (p[j] = Math.exp(p[j] - max));
        for (let j = 0; j < S; j++) {
          const pj = p[j] / sum, vj = (bt * S + j) * E + h * Dh;
          for (let d = 0; d < Dh; d++) attended[qi + d] += pj * v[vj + d];
        }
      }
    }
  }
  return linear(attended, B * L, E, weights['out_proj.weight'], weights['out_proj.bias'], E, 0, 0);
}
