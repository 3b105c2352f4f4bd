// The benchmark's shapes and its deterministic weights and inputs (the same in every process).
export const SHAPES = [
  { B: 1, L: 128, S: 128, E: 512, H: 8 },
  { B: 1, L: 512, S: 512, E: 768, H: 12 },
  { B: 1, L: 2048, S: 2048, E: 512, H: 8 },
  { B: 8, L: 64, S: 64, E: 256, H: 4 },
  { B: 1, L: 4096, S: 4096, E: 256, H: 4 },
  { B: 1, L: 256, S: 1024, E: 512, H: 8 },  // cross-attention: 256 queries over 1024 keys
];

/** FLOPs of one forward pass: q/out projections over L rows, k/v over S rows, QK^T and PV. */
export const flops = ({ B, L, S, E }) => 4 * B * L * E * E + 4 * B * S * E * E + 4 * B * L * S * E;

export const label = ({ B, L, S, E, H }) => (S === L ? `${B}x${L}x${E}x${H}` : `${B}x${L}x${E}x${H} S=${S}`);

/** Uniform values in [-0.5, 0.5) from a fixed seed (Park-Miller). */
export function randomArray(n, seed) {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) a[i] = (s = (s * 48271) % 2147483647) / 2147483647 - 0.5;
  return a;
}

/** nn.MultiheadAttention weights, scaled like PyTorch's init so softmax stays well spread. */
export function benchWeights(E) {
  const scale = (a, f) => a.map((x) => x * f);
  return {
    in_proj_weight: scale(randomArray(3 * E * E, 1), 2 / Math.sqrt(E)),
    in_proj_bias: scale(randomArray(3 * E, 2), 0.1),
    'out_proj.weight': scale(randomArray(E * E, 3), 2 / Math.sqrt(E)),
    'out_proj.bias': scale(randomArray(E, 4), 0.1),
  };
}

/**
 * Layer `l` of a stack: every tensor of `layer`'s state dict (any config: GQA, packed or separate
 * projections) from its own seeds, scaled like a trained layer's (weights 1/sqrt(in), biases 0.1).
 */
export function randomStateDict(layer, l = 0) {
  const sd = {};
  let seed = 1 + 10 * l;
  for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
    const scale = shape.length === 2 ? 1 / Math.sqrt(shape[1]) : 0.1;
    sd[key] = randomArray(shape.reduce((a, b) => a * b, 1), seed++).map((x) => x * scale);
  }
  return sd;
}
