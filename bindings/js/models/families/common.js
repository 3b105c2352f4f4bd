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
 * - rotary: { dim, base } (dim < headDim: partial) or null; layerRotaryBases: each layer's base
 *   where they differ (Gemma 3's local layers), else null; learnedPositions: a position table;
 * - qkNorm: { over: 'head' | 'projection', eps }: q and k RMS-normed between the projection and
 *   rotary (Qwen3, Gemma 3, OLMo-2; MultiHeadAttention's qkNorm), or null;
 * - preNorms: false when a block has no norm before its attention and MLP (OLMo-2: no ln1, ln2);
 * - mlp: { gated, act: 'gelu_tanh' | 'gelu' (exact erf) | 'silu' } or null (attention only);
 * - parallelResidual: attention and MLP both read resid_pre (no resid_mid);
 * - postNorms: norms after the attention and after the MLP (Gemma 2: ln1_post, ln2_post);
 * - embedScale: the embeddings' factor (Gemma's √hidden_size); attnScale: the scores' factor
 *   (null: 1/√headDim); attnSoftcap / finalSoftcap: c·tanh(x / c) of the scores / the logits;
 * - layerWindows: each layer's sliding window (keys) or null;
 * - encoder: bidirectional attention (padding masks only), embeddings with token types and their own
 *   LayerNorm, post-LN blocks (norm1 after the attention's add, norm2 after the MLP's: BERT, RoBERTa).
 */
export const DEFAULT_TRAITS = Object.freeze({
  norm: 'none', rotary: null, layerRotaryBases: null, qkNorm: null, preNorms: true, learnedPositions: false,
  mlp: null, parallelResidual: false, postNorms: false,
  embedScale: 1, attnScale: null, attnSoftcap: null, finalSoftcap: null, layerWindows: null,
  encoder: false,
});

const LAYER_TYPES = ['sliding_attention', 'full_attention'];

/**
 * Which layers slide (true) and which attend globally: config.layer_types where the config lists
 * them (checked: one known type a layer), else `fallback(l)` (true: sliding).
 */
export function slidingLayers(config, numLayers, fallback) {
  const types = config.layer_types;
  if (types === undefined || types === null) return Array.from({ length: numLayers }, (_, l) => fallback(l));
  refuseUnless(Array.isArray(types) && types.length === numLayers,
    `layer_types must list one type for each of the ${numLayers} layers, got ${JSON.stringify(types)}`);
  types.forEach((type, l) => refuseUnless(LAYER_TYPES.includes(type),
    `layer_types[${l}] '${type}' is not supported (only ${LAYER_TYPES.join(', ')})`));
  return types.map((type) => type === 'sliding_attention');
}

/** Layer l's rotary settings { dim, base } (its own base where the layers' differ), or null. */
export function rotaryOf(a, l) {
  if (!a.rotary) return null;
  return a.layerRotaryBases ? { dim: a.rotary.dim, base: a.layerRotaryBases[l] } : a.rotary;
}

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
 * The rotary settings of a config, flat (`thetaKey`, `partialKey`, rope_scaling) or v5's
 * rope_parameters { rope_type, rope_theta, partial_rotary_factor }: { theta, partial }. Any
 * scaling type but 'default' is refused by name with the value found.
 */
export function ropeOf(config, { thetaKey = 'rope_theta', theta = 10000, partialKey = 'partial_rotary_factor', partial = 1 } = {}) {
  const params = config.rope_parameters;
  for (const key of ['rope_scaling', 'rope_parameters']) {
    const value = config[key];
    if (value === undefined || value === null) continue;
    refuseUnless(typeof value === 'object' && !Array.isArray(value), `${key} must be an object or null, got ${JSON.stringify(value)}`);
    const type = value.rope_type ?? value.type ?? 'default';
    refuseUnless(type === 'default',
      `${key} ${JSON.stringify(value)}: rope type '${type}' is not supported (only plain rotary: rope_scaling null, or rope_type 'default')`);
  }
  const thetaValue = params?.rope_theta !== undefined ? positiveNumber(params, 'rope_theta') : positiveNumber(config, thetaKey, theta);
  const [key, found] = params?.partial_rotary_factor !== undefined
    ? ['rope_parameters.partial_rotary_factor', params.partial_rotary_factor] : [partialKey, config[partialKey] ?? partial];
  refuseUnless(typeof found === 'number' && found > 0 && found <= 1, `${key} must be a number in (0, 1], got ${JSON.stringify(found)}`);
  return { theta: thetaValue, partial: found, partialKey: key };
}

/** The rotary dimension of a head: int(headDim · factor), which must be even. */
export function rotaryDim(headDim, factor, key) {
  const dim = Math.floor(headDim * factor + 1e-9);
  refuseUnless(dim >= 2 && dim % 2 === 0, `${key} ${factor} gives ${dim} rotary features of the head's ${headDim}; it must be a positive even number`);
  return dim;
}

/** A norm weight w as (1 + w) (Gemma's RMSNorm multiplies by 1 + its zero-centred weight), float32. */
export function plusOne(weight) {
  const out = Float32Array.from(weight);
  for (let i = 0; i < out.length; i++) out[i] += 1;
  return out;
}

/** The config's grouped heads: { numHeads, numKvHeads } with the multiple checked. */
export function headsOf(config) {
  const numHeads = positiveInteger(config, 'num_attention_heads');
  const numKvHeads = positiveInteger(config, 'num_key_value_heads', numHeads);
  refuseUnless(numHeads % numKvHeads === 0,
    `num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`);
  return { numHeads, numKvHeads };
}

/** Refuses a key whose value asks for what no forward here does: `ok(value)` says which values run. */
export function refuseKey(config, key, ok, why) {
  const value = config[key];
  refuseUnless(value === undefined || ok(value), `${key} ${JSON.stringify(value)} is not supported (${why})`);
}
