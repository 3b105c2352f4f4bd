// Between the attention layer's head-first rows and TransformerLens' position-first ones: q, k and
// v are [heads, L, D] in the layer's captured steps (docs/steps.md) and [L, heads, D] at
// hook_q / hook_k / hook_v. The one place that swaps them (hooked-forward.js, the page's encoder run).

/** [A, B, C] -> [B, A, C], as a new Float32Array. */
export function swapLeading(data, A, B, C) {
  const out = new Float32Array(data.length);
  for (let a = 0; a < A; a++) {
    for (let b = 0; b < B; b++) out.set(data.subarray((a * B + b) * C, (a * B + b + 1) * C), (b * A + a) * C);
  }
  return out;
}
