// The O(tokens x width) steps of a model around its products, as plain loops over float32 rows
// [rows, E]: the norms, the MLPs' activations and residual adds. No DOM: worker and Node. (A
// forward runs silu and tanh GELU in wasm SIMD instead, core/mlp-activation.js, and its norms with
// the residual add before them in wasm, core/row-norm.js; these loops are their reference, the
// hooked path's and the exact-erf GELU's.)

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

/**
 * erf(x) to about 1e-7 relative (Numerical Recipes' erfc: a Chebyshev fit of exp(-z²)·erfc, with
 * fractional error below 1.2e-7 everywhere), in float64.
 */
export function erf(x) {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - erfc : erfc - 1;
}

/** GELU with the exact erf (torch's nn.GELU(), Hugging Face's "gelu"), in place. */
export function geluErf(a) {
  for (let i = 0; i < a.length; i++) a[i] = 0.5 * a[i] * (1 + erf(a[i] / Math.SQRT2));
  return a;
}

/** SiLU (x · sigmoid x) of one value. */
const silu = (g) => g / (1 + Math.exp(-g));

/** One value through an MLP's activation: 'gelu_tanh', 'gelu' (erf) or 'silu'. */
export function activation(act) {
  if (act === 'silu') return silu;
  const c = Math.sqrt(2 / Math.PI);
  if (act === 'gelu_tanh') return (v) => 0.5 * v * (1 + Math.tanh(c * (v + 0.044715 * v * v * v)));
  if (act === 'gelu') return (v) => 0.5 * v * (1 + erf(v / Math.SQRT2));
  throw new TypeError(`activation: unknown '${act}'`);
}

/** An ungated MLP's activation of its up product, in place. */
export function activate(a, act) {
  if (act === 'gelu_tanh') return geluTanh(a);
  if (act === 'gelu') return geluErf(a);
  const f = activation(act);
  for (let i = 0; i < a.length; i++) a[i] = f(a[i]);
  return a;
}

/** A gated MLP (SwiGLU with 'silu', GeGLU with a GELU): act(gate) * up, from the stacked [rows, 2I] product. */
export function gated(gateUp, rows, I, act = 'silu') {
  const f = activation(act);
  const out = new Float32Array(rows * I);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < I; i++) out[r * I + i] = f(gateUp[r * 2 * I + i]) * gateUp[r * 2 * I + I + i];
  }
  return out;
}

/** SwiGLU: silu(gate) * up, from the stacked [rows, 2I] product. */
export const swiglu = (gateUp, rows, I) => gated(gateUp, rows, I, 'silu');

/** c · tanh(x / c), in place (Gemma 2's final-logit softcap). */
export function softcap(a, c) {
  for (let i = 0; i < a.length; i++) a[i] = c * Math.tanh(a[i] / c);
  return a;
}

export function addInto(x, y) {
  for (let i = 0; i < x.length; i++) x[i] += y[i];
}

