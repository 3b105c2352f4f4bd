// What every family's config reading shares: the checks of config.json's values (a wrong one is a
// TypeError naming the key and the value found), the traits every architecture carries, and the
// refusal of what a config asks for that no forward here implements. No DOM: worker and Node.

export const what = 'config.json';

export function positiveInteger(config, key, fallback) {
  const value = config[key] ?? fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new TypeError(`${what}: ${key} must be a positive integer, got ${JSON.stringify(config[key])}`);
  }
  return value;
}

export function positiveNumber(config, key, fallback) {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new TypeError(`${what}: ${key} must be a positive number, got ${JSON.stringify(config[key])}`);
  }
  return value;
}

export function refuseUnless(condition, message) {
  if (!condition) throw new TypeError(`${what}: ${message}`);
}

/**
 * The traits the forward, the hook points and the workflows read (architecture.js' result carries
 * them; a family's `traits` fills what an architecture built by hand leaves out):
 * - norm: 'layernorm' (with bias) | 'rmsnorm' | 'none'; a norm's weight as the forward multiplies
 *   by it (Gemma's 1 + w already added);
 * - rotary: { dim, base } (dim < headDim: partial) or null; learnedPositions: a position table;
 * - mlp: { gated, act: 'gelu_tanh' | 'gelu' (exact erf) | 'silu' } or null (attention only);
 * - parallelResidual: attention and MLP both read resid_pre (no resid_mid);
 * - postNorms: norms after the attention and after the MLP (Gemma 2: ln1_post, ln2_post);
 * - embedScale: the embeddings' factor (Gemma's √hidden_size); attnScale: the scores' factor
 *   (null: 1/√headDim); attnSoftcap / finalSoftcap: c·tanh(x / c) of the scores / the logits;
 * - layerWindows: each layer's sliding window (keys) or null.
 */
export const DEFAULT_TRAITS = Object.freeze({
  norm: 'none', rotary: null, learnedPositions: false, mlp: null, parallelResidual: false, postNorms: false,
  embedScale: 1, attnScale: null, attnSoftcap: null, finalSoftcap: null, layerWindows: null,
});

/** Config keys that ask for mixture-of-experts layers (refused by every family here). */
const MOE_KEYS = ['num_local_experts', 'num_experts', 'n_routed_experts', 'moe_intermediate_size', 'num_experts_per_tok'];

/** Refuses, by key and value, the mixture-of-experts keys a config of a dense family should not hold. */
export function refuseMixtureOfExperts(config) {
  for (const key of MOE_KEYS) {
    const value = config[key];
    refuseUnless(value === undefined || value === null || value === 0,
      `${key} ${JSON.stringify(value)} asks for mixture-of-experts layers, which are not supported`);
  }
}

/**
 * The rotary settings of a config, flat (rope_theta, rope_scaling, partial_rotary_factor) or v5's
 * rope_parameters { rope_type, rope_theta, partial_rotary_factor }: { theta, partial }. Any
 * scaling type but 'default' is refused by name with the value found.
 */
export function ropeOf(config, { thetaKey = 'rope_theta', theta = 10000, partialKey = 'partial_rotary_factor', partial = 1 } = {}) {
  const params = config.rope_parameters;
  const scaling = config.rope_scaling;
  for (const [key, value] of [['rope_scaling', scaling], ['rope_parameters', params]]) {
    if (value === undefined || value === null) continue;
    refuseUnless(typeof value === 'object' && !Array.isArray(value), `${key} must be an object or null, got ${JSON.stringify(value)}`);
    const type = value.rope_type ?? value.type ?? 'default';
    refuseUnless(type === 'default',
      `${key} ${JSON.stringify(value)}: rope type '${type}' is not supported (only plain rotary: rope_scaling null or rope_type 'default')`);
  }
  const source = params ?? config;
  const thetaValue = params ? positiveNumber(params, 'rope_theta', config[thetaKey] ?? theta) : positiveNumber(config, thetaKey, theta);
  const partialValue = params?.[partialKey] ?? config[partialKey] ?? partial;
  refuseUnless(typeof partialValue === 'number' && partialValue > 0 && partialValue <= 1,
    `${partialKey} must be a number in (0, 1], got ${JSON.stringify(source[partialKey])}`);
  return { theta: thetaValue, partial: partialValue };
}

/** The rotary dimension of a head: int(headDim · factor), which must be even. */
export function rotaryDim(headDim, factor, key) {
  const dim = Math.floor(headDim * factor);
  refuseUnless(dim >= 2 && dim % 2 === 0, `${key} ${factor} gives ${dim} rotary features of the head's ${headDim}; it must be a positive even number`);
  return dim;
}

/** A [rows, cols] tensor's rows [from, to) as float32 rows ([to - from, cols]), widened. */
export function rowsOf(f32data, cols, from, to) {
  return f32data.subarray(from * cols, to * cols);
}
