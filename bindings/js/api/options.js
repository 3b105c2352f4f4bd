// The option schema: every MultiHeadAttention config key and forward option, once, with its
// type, its default, the backends that take it and whether a float64 layer does. What is derived
// from it: the key lists of the "unknown option 'x'; known options: ..." messages (the wasm and
// WebGPU layers), the float64 refusals the JavaScript side makes (forward options and methods),
// the refusals of a dtype by a backend (WebGPU, the tfjs layer), and the table of docs/api.md
// "Which backends take each option" (tools/option-table.mjs; tests/js/option-schema.test.js holds
// the schema to the layers, the types and that table).
//
// A value's range is the C++ core's to check (src/mha/plan/attention_config.hpp, resolve()), and so is
// its refusal of a config key by a float64 layer: those keys say REFUSED_BY_CORE here.

/** A float64 layer takes the option. */
const TAKES = true;
/** A float64 layer refuses the option, in the core's own words (src/mha/plan/attention_config.hpp). */
export const REFUSED_BY_CORE = 'core';

/** Why a float64 layer has no KV cache: the `cache` option's refusal and createCache's. */
const NO_KV_CACHE = 'a float64 layer has no KV cache';
const STEPS_FLOAT32 = 'the steps are captured and patched by float32 layers only';

/**
 * One option: `name`; `type` and `default` as docs/api.md writes them; `backends`: whether the
 * wasm and WebGPU layers take it, and `keras`, the argument of the Keras layers
 * (KerasMultiHeadAttention, and mha-wasm/tfjs' layer where it takes one) that sets it, or null;
 * `float64`: TAKES, REFUSED_BY_CORE, or the reason the JavaScript refusal gives.
 */
function option(name, type, defaultValue, { wasm = true, webgpu = true, keras = null, float64 = TAKES } = {}) {
  return Object.freeze({ name, type, default: defaultValue, backends: Object.freeze({ wasm, webgpu, keras }), float64 });
}

/** The layer's config keys, in the order the "unknown option" message lists them. */
export const CONFIG_OPTIONS = Object.freeze([
  option('embedDim', 'integer', 'required', { keras: 'queryDim' }),
  option('numHeads', 'integer', 'required', { keras: 'numHeads' }),
  option('kdim', 'integer', 'embedDim', { keras: 'keyInputDim' }),
  option('vdim', 'integer', 'embedDim', { keras: 'valueInputDim' }),
  option('bias', 'boolean', 'true', { keras: 'useBias' }),
  option('numKvHeads', 'integer', 'numHeads'),
  option('scale', 'number', '1 / sqrt(headDim)'),
  option('headDim', 'integer', 'embedDim / numHeads', { keras: 'keyDim' }),
  option('valueHeadDim', 'integer', 'headDim', { keras: 'valueDim' }),
  option('outputDim', 'integer', 'embedDim', { keras: 'outputShape' }),
  option('qkNorm', "{ over: 'head' | 'projection', eps }", 'off', { float64: REFUSED_BY_CORE }),
  option('rotary', 'true | { dim, base, interleaved }', 'off', { float64: REFUSED_BY_CORE }),
  option('slidingWindow', 'integer', 'off', { keras: 'slidingWindow', float64: REFUSED_BY_CORE }),
  option('alibi', 'boolean', 'false', { float64: REFUSED_BY_CORE }),
  option('alibiSlopes', 'Float32Array | number[]', 'off', { float64: REFUSED_BY_CORE }),
  option('softcap', 'number', 'off', { float64: REFUSED_BY_CORE }),
  option('sinks', 'boolean', 'false', { float64: REFUSED_BY_CORE }),
  option('gate', 'boolean', 'false', { keras: 'useGate', float64: REFUSED_BY_CORE }),
  option('dropout', 'number in [0, 1)', '0', { keras: 'dropout', float64: REFUSED_BY_CORE }),
  option('seed', 'integer', 'random', { keras: 'seed' }),
  option('weightDtype', "'f32' | 'f16' | 'int8' | 'q4'", "'f32'", { keras: 'weightDtype', float64: REFUSED_BY_CORE }),
  option('batchFirst', 'boolean', 'true'),
  option('addBiasKv', 'boolean', 'false'),
  option('addZeroAttn', 'boolean', 'false'),
  option('dtype', "'float32' | 'float64'", "'float32'"),
]);

/**
 * The forward options, in the docs' order (the shared ones, then a backend's own). `keras` names
 * the option of KerasMultiHeadAttention.call that sets it.
 */
export const FORWARD_OPTIONS = Object.freeze([
  option('causal', 'boolean', 'false', { keras: 'useCausalMask' }),
  option('keyPaddingMask', 'mask [B, S]', 'none'),
  option('attnMask', 'mask [L, S] or [B·H, L, S]', 'none', { keras: 'attentionMask' }),
  option('needWeights', 'boolean', 'false', { keras: 'returnAttentionScores' }),
  option('averageWeights', 'boolean', 'true'),
  option('positions', 'Int32Array [B, L]', '0, 1, ...'),
  option('out', "the layer's array", 'none'),
  option('weightsOut', "the layer's array", 'none'),
  option('cache', 'KvCache', 'none', { float64: NO_KV_CACHE }),
  option('grad', 'boolean', 'false'),
  option('training', 'boolean', 'false', { keras: 'training' }),
  option('seed', 'integer', "the layer's next", { keras: 'seed' }),
  option('weightsBeforeDropout', 'boolean', 'false'),
  option('checkFinite', 'boolean', 'false', { keras: 'checkFinite' }),
  option('capture', 'true | step names', 'none', { keras: 'capture', float64: STEPS_FLOAT32 }),
  option('patch', '{ <step>: tensor, heads? }', 'none', { keras: 'patch', float64: STEPS_FLOAT32 }),
  option('staticK', 'tensor [B·numKvHeads, S, headDim]', 'none'),
  option('staticV', 'tensor [B·numKvHeads, S, valueHeadDim]', 'none'),
  option('outputLocation', "'cpu' | 'gpu'", "'cpu'", { wasm: false }),
]);

/** The names of `options` by backend ('wasm', 'webgpu'), listed once (each forward call reads them). */
const namesByBackend = (options) => Object.freeze(Object.fromEntries(['wasm', 'webgpu'].map((backend) => [backend,
  Object.freeze(options.filter((o) => o.backends[backend]).map((o) => o.name))])));
const CONFIG_KEYS = namesByBackend(CONFIG_OPTIONS);
const FORWARD_KEYS = namesByBackend(FORWARD_OPTIONS);

/** The config keys a backend's layer takes ('wasm' or 'webgpu'). */
export const configKeys = (backend = 'wasm') => CONFIG_KEYS[backend];

/** The forward option keys a backend's layer takes ('wasm' or 'webgpu'). */
export const forwardOptionKeys = (backend = 'wasm') => FORWARD_KEYS[backend];

/**
 * What a float64 layer refuses beside options, by the name its error starts with: methods and
 * call forms a float64 layer lacks.
 */
const FLOAT64_REFUSED_CALLS = Object.freeze({
  createCache: NO_KV_CACHE,
  loadQuantized: "quantized weights are a float32 layer's",
  query: "ragged batches ({ data, shape, lengths }) are a float32 layer's",  // (a ragged query)
});

/** "<name>: not with dtype 'float64' (<why>)": the one wording of the JavaScript side's float64 refusals. */
const float64Refusal = (name, why) => new TypeError(`${name}: not with dtype 'float64' (${why})`);

/** Throws the refusal of a float64 layer's forward option given (not null or undefined) in `options`. */
export function refuseFloat64Options(options) {
  for (const o of FORWARD_OPTIONS) {
    if (typeof o.float64 === 'string' && o.float64 !== REFUSED_BY_CORE && options[o.name] != null) {
      throw float64Refusal(o.name, o.float64);
    }
  }
}

/** Throws the refusal of a method or call form a float64 layer lacks (FLOAT64_REFUSED_CALLS). */
export function refuseFloat64Call(name) {
  throw float64Refusal(name, FLOAT64_REFUSED_CALLS[name]);
}

/** The dtypes a layer computes in. */
export const DTYPES = Object.freeze(['float32', 'float64']);

/**
 * Which backends take dtype 'float64', and the refusal (after 'MultiHeadAttention: ') of those
 * that do not. Every backend takes 'float32'.
 */
const FLOAT64_BY_BACKEND = Object.freeze({
  wasm: TAKES,
  webgpu: "dtype 'float64' is not supported by the WebGPU backend (WGSL has no 64-bit floats: f64 is not a WebGPU "
    + 'shader type); use the wasm backend, whose float64 layer computes in float64',
  // (tf.layers.Layer's own dtype would take it, and compute in float32)
  tfjs: "dtype 'float64': the tfjs layer computes in float32 (tfjs has no float64 tensors); a float64 layer is the "
    + "wasm module's: new mha.MultiHeadAttention({ ..., dtype: 'float64' })",
});

/** Whether `backend` ('wasm', 'webgpu', 'tfjs') takes `dtype`. */
export const takesDtype = (backend, dtype) => dtype !== 'float64' || FLOAT64_BY_BACKEND[backend] === TAKES;

/** Throws the backend's refusal when it does not take the config's dtype ('MultiHeadAttention: ...'). */
export function checkDtypeOnBackend(backend, dtype) {
  if (!takesDtype(backend, dtype)) throw new TypeError(`MultiHeadAttention: ${FLOAT64_BY_BACKEND[backend]}`);
}
