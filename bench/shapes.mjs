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
 * The decode benchmark's weights (bench/webgpu.mjs): benchWeights(E) for MHA (Hkv = H); for GQA
 * the same seeds split as PyTorch's separate projections, q_proj_weight [E, E], k_proj_weight and
 * v_proj_weight [Hkv·Dh, E], in_proj_bias [E + 2·Hkv·Dh].
 */
export function decodeWeights({ E, H, Hkv }) {
  if (Hkv === H) return benchWeights(E);
  const KV = Hkv * (E / H), scale = (a, f) => a.map((x) => x * f);
  const inProj = scale(randomArray((E + 2 * KV) * E, 1), 2 / Math.sqrt(E));
  return {
    q_proj_weight: inProj.subarray(0, E * E),
    k_proj_weight: inProj.subarray(E * E, (E + KV) * E),
    v_proj_weight: inProj.subarray((E + KV) * E),
    in_proj_bias: scale(randomArray(E + 2 * KV, 2), 0.1),
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

// The training table (bench/training.mjs): the self-attention shapes above and the Keras
// tutorial's layer (batch 64 of 32 tokens, E 100, MultiHeadAttention(num_heads=4, key_dim=128):
// head size 128, so the q/k/v projections have 512 rows and out_proj maps 512 back to 100).
export const TRAINING_SHAPES = [
  ...SHAPES.filter((s) => s.S === s.L).map((s) => ({ ...s, Dh: s.E / s.H })),
  { B: 64, L: 32, S: 32, E: 100, H: 4, Dh: 128, name: 'Keras tutorial' },
];

export const trainingLabel = (s) => `${s.B}x${s.L}x${s.E}x${s.H}${s.Dh !== s.E / s.H ? `x${s.Dh}` : ''}${s.name ? ` (${s.name})` : ''}`;

/**
 * FLOPs of one self-attention forward and of its backward (issue 22): the projections (q, k, v:
 * E -> H*Dh over L rows; out: H*Dh -> E) and 4·L·S·Dh per head for QKᵀ and PV; the backward
 * recomputes the scores (QKᵀ), and computes dV, dP, dQ, dK: 10·L·S·Dh per head, and twice the
 * projections (the gradient of the input and of the weight).
 */
export function trainingFlops({ B, L, S, E, H, Dh }) {
  const projections = 2 * B * L * E * H * Dh * 2 + 2 * B * S * E * H * Dh * 2;
  const attention = B * H * L * S * Dh;
  return { forward: projections + 4 * attention, backward: 2 * projections + 10 * attention };
}

/**
 * The training shapes' weights in PyTorch's separate-projection form (every peer can take it):
 * q/k/v from one [3·H·Dh, E] block (so with Dh = E/H they equal benchWeights' in_proj_weight),
 * in_proj_bias, out_proj [E, H·Dh] and its bias; scaled as benchWeights.
 */
export function trainingWeights({ E, H, Dh }) {
  const qd = H * Dh, scale = (a, f) => a.map((x) => x * f);
  const inProj = scale(randomArray(3 * qd * E, 1), 2 / Math.sqrt(E));
  return {
    q_proj_weight: inProj.subarray(0, qd * E),
    k_proj_weight: inProj.subarray(qd * E, 2 * qd * E),
    v_proj_weight: inProj.subarray(2 * qd * E),
    in_proj_bias: scale(randomArray(3 * qd, 2), 0.1),
    'out_proj.weight': scale(randomArray(E * qd, 3), 2 / Math.sqrt(qd)),
    'out_proj.bias': scale(randomArray(E, 4), 0.1),
  };
}
