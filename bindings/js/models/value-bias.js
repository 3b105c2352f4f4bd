// Each head's value-bias output b_V[kv(h)] · W_O[h] [H, E] of a layer, which direct logit
// attribution leaves out of a head's share (TransformerLens' fold_value_biases). Computed while
// the layer is built, from its stored tensors (the family says where its value bias and output
// weight are, with fold_ln's share of the first norm's bias added for LayerNorm families), so
// attribution never reads the checkpoint again. No DOM.

/** The [H, E] outputs (zeros where v has no bias) of layer l; `weight(key)` gives a stored tensor as float32. */
export function valueBiasOutputs(family, architecture, weight, l) {
  const { numHeads: H, numKvHeads: K, headDim: D, embedDim: E } = architecture;
  const out = new Float32Array(H * E);
  const folded = family.valueBias?.(weight, architecture, l);
  if (!folded) return out;
  const { bias, at } = folded;
  for (let h = 0; h < H; h++) {
    const kv = Math.floor(h / (H / K));
    for (let e = 0; e < E; e++) {
      let s = 0;
      for (let d = 0; d < D; d++) s += bias[kv * D + d] * at(h, d, e);
      out[h * E + e] = s;
    }
  }
  return out;
}
