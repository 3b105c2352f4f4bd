// The O(tokens x width) steps of a model around its products, as plain loops over float32 rows
// [rows, E]: the norms, the MLPs' activations and residual adds. No DOM: worker and Node.

/** Float32Arrays end to end. */
export function concat(arrays) {
  const out = new Float32Array(arrays.reduce((sum, a) => sum + a.length, 0));
  let offset = 0;
  for (const a of arrays) {
    out.set(a, offset);
    offset += a.length;
  }
  return out;
}

export function layerNorm(x, E, weight, bias, eps) {
  const y = new Float32Array(x.length);
  for (let r = 0; r < x.length / E; r++) {
    let mean = 0;
    for (let i = 0; i < E; i++) mean += x[r * E + i];
    mean /= E;
    let variance = 0;
    for (let i = 0; i < E; i++) variance += (x[r * E + i] - mean) ** 2;
    const inv = 1 / Math.sqrt(variance / E + eps);
    for (let i = 0; i < E; i++) y[r * E + i] = (x[r * E + i] - mean) * inv * weight[i] + bias[i];
  }
  return y;
}

export function rmsNorm(x, E, weight, eps) {
  const y = new Float32Array(x.length);
  for (let r = 0; r < x.length / E; r++) {
    let squares = 0;
    for (let i = 0; i < E; i++) squares += x[r * E + i] ** 2;
    const inv = 1 / Math.sqrt(squares / E + eps);
    for (let i = 0; i < E; i++) y[r * E + i] = weight[i] * (x[r * E + i] * inv);
  }
  return y;
}

/** GPT-2's "gelu_new": the tanh approximation, in place. */
export function geluTanh(a) {
  const c = Math.sqrt(2 / Math.PI);
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    a[i] = 0.5 * v * (1 + Math.tanh(c * (v + 0.044715 * v * v * v)));
  }
  return a;
}

/** SwiGLU: silu(gate) * up, from the stacked [rows, 2I] product. */
export function swiglu(gateUp, rows, I) {
  const out = new Float32Array(rows * I);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < I; i++) {
      const g = gateUp[r * 2 * I + i];
      out[r * I + i] = (g / (1 + Math.exp(-g))) * gateUp[r * 2 * I + I + i];
    }
  }
  return out;
}

export function addInto(x, y) {
  for (let i = 0; i < x.length; i++) x[i] += y[i];
}

