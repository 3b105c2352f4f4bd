// Rotary positions as Hugging Face's Llama applies them (rotate_half: feature i pairs with
// i + D/2, angle position · base^(-2i/D)), on rows in TransformerLens' layout [L, heads, D], with
// token i at position i. The attention layer rotates q and k itself; this twin exists only for
// the hook points around it: hook_q and hook_k hold the values before rotation (the layer's
// captured q and k rotated back), and a replacement there is rotated before the layer takes it.

/**
 * The rows rotated forward (sign 1) or back (sign -1), as a new Float32Array. With `dim` < D
 * (partial rotary: GPT-NeoX, Phi-3) only each head's first `dim` features rotate, pairs
 * (i, i + dim/2) at angle position · base^(-2i/dim); the rest pass as they are.
 */
export function rotateHalf(data, L, heads, D, base, sign, dim = D) {
  const half = dim / 2;
  const out = dim === D ? new Float32Array(data.length) : Float32Array.from(data);
  for (let p = 0; p < L; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p * base ** (-2 * i / dim);
      const cos = Math.cos(angle), sin = sign * Math.sin(angle);
      for (let h = 0; h < heads; h++) {
        const at = (p * heads + h) * D;
        const x1 = data[at + i], x2 = data[at + i + half];
        out[at + i] = x1 * cos - x2 * sin;
        out[at + i + half] = x2 * cos + x1 * sin;
      }
    }
  }
  return out;
}
