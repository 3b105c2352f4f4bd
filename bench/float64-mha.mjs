// nn.MultiheadAttention's forward pass (batch-first, projections with bias, no mask) in float64:
// the reference every implementation of a benchmark is checked against before it is timed.

/** y [rows, out] = x [rows, in] W^T + b in float64; W [out, in] as nn.Linear; `rowsOf` W's rows used. */
function linear(x, rows, inF, weight, bias, firstRow, outF) {
  const y = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let acc = bias[firstRow + o];
      const w = (firstRow + o) * inF;
      for (let d = 0; d < inF; d++) acc += x[r * inF + d] * weight[w + d];
      y[r * outF + o] = acc;
    }
  }
  return y;
}

/**
 * The output [B, L, E] as a Float64Array for query [B, L, E] and key = value [B, S, E] (self-attention:
 * `key` null), weights as nn.MultiheadAttention's state dict.
 */
export function float64Attention({ B, L, S, E, H }, weights, query, key = null) {
  const Dh = E / H, scale = 1 / Math.sqrt(Dh);
  const { in_proj_weight: w, in_proj_bias: b } = weights;
  const out = new Float64Array(B * L * E);
  for (let n = 0; n < B; n++) {
    const xq = query.subarray(n * L * E, (n + 1) * L * E);
    const xkv = key ? key.subarray(n * S * E, (n + 1) * S * E) : xq;
    const q = linear(xq, L, E, w, b, 0, E), k = linear(xkv, S, E, w, b, E, E), v = linear(xkv, S, E, w, b, 2 * E, E);
    const attended = new Float64Array(L * E);
    const p = new Float64Array(S);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) {
        let max = -Infinity;
        for (let j = 0; j < S; j++) {
          let dot = 0;
          for (let d = h * Dh; d < (h + 1) * Dh; d++) dot += q[i * E + d] * k[j * E + d];
          p[j] = dot * scale;
          max = Math.max(max, p[j]);
        }
        let sum = 0;
        for (let j = 0; j < S; j++) sum += (p[j] = Math.exp(p[j] - max));
        for (let j = 0; j < S; j++) {
          const pj = p[j] / sum;
          for (let d = h * Dh; d < (h + 1) * Dh; d++) attended[i * E + d] += pj * v[j * E + d];
        }
      }
    }
    out.set(linear(attended, L, E, weights['out_proj.weight'], weights['out_proj.bias'], 0, E), n * L * E);
  }
  return out;
}

/** The largest |got - want| over the largest |want|: one number for "is this output right". */
export function relativeError(got, want) {
  let err = 0, scale = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return got.length === want.length ? err / scale : Infinity;
}

/**
 * One decode step of a self-attention layer with `Hkv` key/value heads (GQA; Hkv = H is MHA) in
 * float64: `history` [P, E] are the cached tokens, `token` [E] the new one, which attends to all
 * P + 1. Weights as the layer's state dict (in_proj_weight, or q/k/v_proj_weight; in_proj_bias;
 * out_proj). Returns the output [E] and the cache as onnxruntime takes it, past_key / past_value
 * [Hkv, P, Dh] (BNSH, batch 1), each element the float64 projection rounded to float32.
 */
export function float64DecodeStep({ E, H, Hkv, P }, weights, history, token) {
  const Dh = E / H, KV = Hkv * Dh, G = H / Hkv, scale = 1 / Math.sqrt(Dh);
  const packed = weights.in_proj_weight;
  const wq = packed ? packed.subarray(0, E * E) : weights.q_proj_weight;
  const wk = packed ? packed.subarray(E * E, E * E + KV * E) : weights.k_proj_weight;
  const wv = packed ? packed.subarray(E * E + KV * E) : weights.v_proj_weight;
  const b = weights.in_proj_bias;
  const keys = new Float64Array((P + 1) * KV), values = new Float64Array((P + 1) * KV);
  const rows = new Float64Array((P + 1) * E);
  rows.set(history.subarray(0, P * E));
  rows.set(token, P * E);
  for (let t = 0; t <= P; t++) {
    for (let o = 0; o < KV; o++) {
      let k = b[E + o], v = b[E + KV + o];
      for (let i = 0; i < E; i++) {
        k += wk[o * E + i] * rows[t * E + i];
        v += wv[o * E + i] * rows[t * E + i];
      }
      keys[t * KV + o] = k;
      values[t * KV + o] = v;
    }
  }
  const q = linear(token, 1, E, wq, b, 0, E);
  const attended = new Float64Array(E);
  const p = new Float64Array(P + 1);
  for (let h = 0; h < H; h++) {
    const kv = Math.floor(h / G) * Dh;
    let max = -Infinity;
    for (let j = 0; j <= P; j++) {
      let dot = 0;
      for (let d = 0; d < Dh; d++) dot += q[h * Dh + d] * keys[j * KV + kv + d];
      p[j] = dot * scale;
      max = Math.max(max, p[j]);
    }
    let sum = 0;
    for (let j = 0; j <= P; j++) sum += (p[j] = Math.exp(p[j] - max));
    for (let j = 0; j <= P; j++) {
      for (let d = 0; d < Dh; d++) attended[h * Dh + d] += (p[j] / sum) * values[j * KV + kv + d];
    }
  }
  const output = linear(attended, 1, E, weights['out_proj.weight'], weights['out_proj.bias'], 0, E);
  const pastKey = new Float32Array(KV * P), pastValue = new Float32Array(KV * P);
  for (let t = 0; t < P; t++) {
    for (let o = 0; o < KV; o++) {
      const at = (Math.floor(o / Dh) * P + t) * Dh + (o % Dh);
      pastKey[at] = keys[t * KV + o];
      pastValue[at] = values[t * KV + o];
    }
  }
  return { output, pastKey, pastValue };
}
