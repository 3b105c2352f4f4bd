// The one reader of a MultiHeadAttention config, for every backend that builds a wasm layer (the
// WebGPU layer builds one of the same config): each key's JavaScript type checked here once, with
// one message; the values' ranges are the C++ core's (src/mha/plan/attention_config.hpp, resolve()).
import { checkSeed } from './call-reader.js';
import { configKeys, DTYPES } from './options.js';
import { checkBoolean, checkInteger, checkKnownKeys, checkPlainObject, describe } from './validate.js';

/** How a layer may store its projections (docs/quantized.md). */
export const WEIGHT_DTYPES = ['f32', 'f16', 'int8', 'q4'];
const ALLOWED = WEIGHT_DTYPES.map((d) => `'${d}'`).join(', ');
const ROTARY_KEYS = ['dim', 'base', 'interleaved'];
const QK_NORM_KEYS = ['over', 'eps'];

/** Config's weightDtype: one of WEIGHT_DTYPES (default 'f32'). */
export function checkWeightDtype(value) {
  if (value === undefined) return 'f32';
  if (!WEIGHT_DTYPES.includes(value)) {
    throw new TypeError(`weightDtype must be one of ${ALLOWED} (how the projection weights are stored), got ${describe(value)}`);
  }
  return value;
}

/**
 * A layer's config checked: `{ dtype, weightDtype, seed, coreConfig }`, coreConfig being what the
 * core's LayerHandle / Float64LayerHandle takes (rotary's dim filled in, alibiSlopes an array).
 */
export function readLayerConfig(config) {
  checkPlainObject('MultiHeadAttention: config', config);
  checkKnownKeys('config', config, configKeys('wasm'));
  checkInteger('embedDim', config.embedDim);
  checkInteger('numHeads', config.numHeads);
  checkInteger('kdim', config.kdim, { optional: true });
  checkInteger('vdim', config.vdim, { optional: true });
  checkInteger('numKvHeads', config.numKvHeads, { optional: true });
  checkBoolean('bias', config.bias);
  checkBoolean('batchFirst', config.batchFirst);
  checkBoolean('addBiasKv', config.addBiasKv);
  checkBoolean('addZeroAttn', config.addZeroAttn);
  if (config.scale !== undefined && (typeof config.scale !== 'number' || !Number.isFinite(config.scale))) {
    throw new RangeError(`scale must be a finite number, got ${describe(config.scale)}`);
  }
  if (config.dropout !== undefined && typeof config.dropout !== 'number') {
    throw new TypeError(`dropout must be a number in [0, 1), got ${describe(config.dropout)}`);
  }
  checkSeed('seed', config.seed);
  if (config.dtype !== undefined && typeof config.dtype !== 'string') {
    throw new TypeError(`dtype must be ${DTYPES.map((d) => `'${d}'`).join(' or ')}, got ${describe(config.dtype)}`);
  }
  const weightDtype = checkWeightDtype(config.weightDtype);
  const { seed, ...coreConfig } = config;  // (the seed is the JavaScript layer's: dropout's first call)
  return { dtype: config.dtype ?? 'float32', weightDtype, seed, coreConfig: checkVariants(coreConfig) };
}

/**
 * Type checks of the variant options (free head sizes, q/k norms, rotary, window, ALiBi, softcap, sinks, gate);
 * their values are checked by the core (src/mha/plan/attention_config.hpp, resolve()). Returns the
 * config the core takes.
 */
function checkVariants(config) {
  for (const name of ['headDim', 'valueHeadDim', 'outputDim', 'slidingWindow']) {
    checkInteger(name, config[name], { optional: true });
  }
  // qkNorm: { over: 'head' | 'projection', eps } (which values the core names).
  if (config.qkNorm !== undefined) {
    if (config.qkNorm === null || typeof config.qkNorm !== 'object' || Array.isArray(config.qkNorm)) {
      throw new TypeError(`qkNorm must be { over: 'head' | 'projection', eps }, got ${describe(config.qkNorm)}`);
    }
    checkKnownKeys('qkNorm', config.qkNorm, QK_NORM_KEYS);
    if (typeof config.qkNorm.over !== 'string') {
      throw new TypeError(`qkNorm.over must be 'head' or 'projection', got ${describe(config.qkNorm.over)}`);
    }
    if (config.qkNorm.eps !== undefined && typeof config.qkNorm.eps !== 'number') {
      throw new TypeError(`qkNorm.eps must be a number, got ${describe(config.qkNorm.eps)}`);
    }
  }
  // rotary: true or {} rotates the whole head (a dim that does not fit is the core's error to name).
  const rotary = config.rotary === true ? {} : config.rotary;
  if (rotary !== undefined) {
    if (rotary === null || typeof rotary !== 'object' || Array.isArray(rotary)) {
      throw new TypeError(`rotary must be true (the whole head) or { dim, base, interleaved }, got ${describe(rotary)}`);
    }
    checkKnownKeys('rotary', rotary, ROTARY_KEYS);
    checkInteger('rotary.dim', rotary.dim, { optional: true });
    if (rotary.base !== undefined && typeof rotary.base !== 'number') {
      throw new TypeError(`rotary.base must be a number, got ${describe(rotary.base)}`);
    }
    checkBoolean('rotary.interleaved', rotary.interleaved);
  }
  checkBoolean('alibi', config.alibi);
  let { alibiSlopes } = config;
  if (alibiSlopes !== undefined) {
    if (!(alibiSlopes instanceof Float32Array) && !Array.isArray(alibiSlopes)) {
      throw new TypeError(`alibiSlopes must be a Float32Array or an array of numbers (one per head), got ${describe(alibiSlopes)}`);
    }
    if (config.alibi === false) throw new TypeError('alibiSlopes: given with alibi: false; omit one of them');
    alibiSlopes = [...alibiSlopes];
    if (!alibiSlopes.every((x) => typeof x === 'number')) throw new TypeError('alibiSlopes must hold numbers');
  }
  if (config.softcap !== undefined && typeof config.softcap !== 'number') {
    throw new TypeError(`softcap must be a number, got ${describe(config.softcap)}`);
  }
  checkBoolean('sinks', config.sinks);
  checkBoolean('gate', config.gate);
  const headDim = config.headDim ?? Math.floor(config.embedDim / config.numHeads);
  return {
    ...config,
    ...(rotary ? { rotary: { ...rotary, dim: rotary.dim ?? headDim } } : {}),
    ...(alibiSlopes ? { alibiSlopes } : {}),
  };
}
