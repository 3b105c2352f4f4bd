// The option walk (issue 41: nothing accepted and ignored): every config key and every forward
// option of a MultiHeadAttention layer, given a sentinel value in a context where it applies (its
// prerequisites alongside), must either change what the layer does or be refused by an Error
// naming it. "What the layer does" is a signature: the resolved config, the state-dict shapes,
// and a call's output, weights, captured steps, gradient function and output array, on the same
// seeded weights. The lists of keys are read from the layer's own "unknown option" message, so an
// option added without a sentinel here fails the walk. Shared by tests/js/option-walk.test.js
// (wasm) and tests/webgpu/option-walk.test.js (WebGPU: `call` is forwardAsync there).
import assert from 'node:assert/strict';

export const BASE_CONFIG = Object.freeze({ embedDim: 8, numHeads: 2, dropout: 0.5, seed: 1 });
const B = 1, L = 3;
const input = (features, phase = 1, Type = Float32Array) => ({ data: Type.from({ length: B * L * features }, (_, i) => Math.sin(i + phase)), shape: [B, L, features] });

/** Each config key's sentinel (a value other than its default), merged into BASE_CONFIG. */
export const CONFIG_SENTINELS = {
  embedDim: { embedDim: 12 }, numHeads: { numHeads: 4 }, kdim: { kdim: 5 }, vdim: { vdim: 5 }, bias: { bias: false },
  numKvHeads: { numKvHeads: 1 }, scale: { scale: 0.3 }, headDim: { headDim: 3 }, valueHeadDim: { valueHeadDim: 5 },
  outputDim: { outputDim: 7 }, qkNorm: { qkNorm: { over: 'head' } }, rotary: { rotary: { dim: 2 } }, slidingWindow: { slidingWindow: 1 }, alibi: { alibi: true },
  alibiSlopes: { alibiSlopes: [0.5, 0.25] }, softcap: { softcap: 0.5 }, sinks: { sinks: true }, gate: { gate: true },
  dropout: { dropout: 0.25 }, seed: { seed: 2 }, weightDtype: { weightDtype: 'int8' },
  // PyTorch's (issue 40): [1, 3, 8] read sequence-first is 3 sequences of 1 token; the appended key rows.
  batchFirst: { batchFirst: false }, addBiasKv: { addBiasKv: true }, addZeroAttn: { addZeroAttn: true },
  // PyTorch's dtype: a float64 layer (Float64Array in and out; its walk's base has no dropout, which it lacks).
  dtype: { dtype: 'float64' },
};

/** Config both signatures of a key's walk share: what the sentinel needs beside it (BASE_CONFIG's dropout off for dtype). */
const CONFIG_CONTEXT = { dtype: { dropout: 0 } };

/**
 * Each forward option's sentinel: { with: prerequisites (in both calls), value: the option's
 * value, layer: extra config (rotary for positions) }. Functions get the layer (for a cache).
 */
export const CALL_SENTINELS = {
  causal: { value: true },
  keyPaddingMask: { value: { data: Uint8Array.from([0, 1, 0]), shape: [B, L] } },
  attnMask: { value: { data: Uint8Array.from([0, 1, 0, 0, 0, 1, 0, 0, 0]), shape: [L, L] } },
  needWeights: { value: true },
  averageWeights: { with: { needWeights: true }, value: false },
  positions: { layer: { rotary: { dim: 2 } }, value: { data: Int32Array.from([4, 9, 2]), shape: [B, L] } },
  out: { value: () => new Float32Array(B * L * 8) },
  weightsOut: { with: { needWeights: true, averageWeights: false }, value: () => new Float32Array(B * 2 * L * L) },
  cache: { value: (layer) => layer.createCache({ capacity: L }) },
  grad: { value: true },
  training: { value: true },
  seed: { with: { training: true }, value: 12345 },
  weightsBeforeDropout: { with: { training: true, needWeights: true }, value: true },
  checkFinite: { value: true, nan: true, worksByRefusing: true },  // (its work: an Error naming the NaN element)
  capture: { value: ['q'] },
  patch: { value: { z: { data: new Float32Array(B * L * 2 * 4), shape: [B, L, 2, 4] } } },
  // PyTorch's static keys / values: per head [B * numKvHeads, S, headDim], in place of the projections.
  staticK: { value: { data: Float32Array.from({ length: B * 2 * L * 4 }, (_, i) => Math.cos(i)), shape: [B * 2, L, 4] } },
  staticV: { value: { data: Float32Array.from({ length: B * 2 * L * 4 }, (_, i) => Math.cos(2 * i)), shape: [B * 2, L, 4] } },
};

/** The key list of an "unknown option 'x'; known options: a, b" message. */
export function knownOptions(fn) {
  try {
    fn();
  } catch (error) {
    const m = /known options: (.*)$/.exec(error.message);
    if (m) return m[1].split(', ');
    throw error;
  }
  throw new Error('an unknown option was accepted');
}

const round = (array) => (array ? Array.from(array, (x) => Math.round(x * 1e5) / 1e5) : null);

/** What a layer does, as a string (errors included: a refusal is a behaviour too). */
async function signature(make, options = {}, { nan = false } = {}) {
  const parts = [];
  let layer;
  try {
    layer = make();
    parts.push(JSON.stringify(layer.config), JSON.stringify(layer.stateDictShapes()));
    layer.initialize({ seed: 3 });
    // The inputs the layer takes: its query size; key and value of their own sizes where they
    // differ; Float64Array for a float64 layer.
    const { embedDim: E, kdim, vdim } = layer.config;
    const Type = layer.config.dtype === 'float64' ? Float64Array : Float32Array;
    const x = input(E, 1, Type);
    if (nan) x.data[5] = NaN;
    const cross = kdim !== E || vdim !== E;
    const [k, v] = cross ? [input(kdim, 2, Type), input(vdim, 3, Type)] : [null, null];
    const resolved = Object.fromEntries(Object.entries(options).map(([key, o]) => [key, typeof o === 'function' ? o(layer) : o]));
    const r = await (layer.forwardAsync ? layer.forwardAsync(x, k, v, resolved) : layer.forward(x, k, v, resolved));
    // (A GPU-resident output, WebGPU's outputLocation 'gpu', is read back; its kind is part of the signature.)
    const data = r.output.data ?? (await r.output.read());
    parts.push(r.output.data ? `cpu ${r.output.data.constructor.name}` : 'gpu', JSON.stringify(round(data)), JSON.stringify(round(r.weights?.data)),
      JSON.stringify(Object.keys(r.captured ?? {})), typeof r.backward, typeof r.backwardAsync, String(r.output.data === resolved.out),
      String(r.weights?.data === resolved.weightsOut));
    for (const v of Object.values(resolved)) v?.dispose?.();
    r.release?.();
  } catch (error) {
    parts.push(`error: ${error.message}`);
  } finally {
    layer?.dispose();
  }
  return parts.join('\n');
}

/** Asserts `key` changes the signature, or is refused by an error naming it. */
function assertWorksOrRefused(key, base, changed) {
  const refused = changed.split('\n').find((p) => p.startsWith('error:'));
  if (refused && !base.includes(refused)) {
    assert.ok(refused.includes(key), `${key}: refused, but the error does not name it: ${refused}`);
    return 'refused';
  }
  assert.notEqual(changed, base, `${key}: accepted and ignored (nothing the layer does changed)`);
  return 'works';
}

/** Walks every config key of `MultiHeadAttention`; returns { key: 'works' | 'refused' }. */
export async function walkConfig(MultiHeadAttention) {
  const keys = knownOptions(() => new MultiHeadAttention({ ...BASE_CONFIG, notAnOption: 1 }));
  assert.deepEqual([...keys].sort(), Object.keys(CONFIG_SENTINELS).sort(), 'a sentinel for every config key');
  const base = await signature(() => new MultiHeadAttention(BASE_CONFIG), { training: true });
  const outcome = {};
  for (const key of keys) {
    const context = { ...BASE_CONFIG, ...CONFIG_CONTEXT[key] };
    const keyBase = CONFIG_CONTEXT[key] ? await signature(() => new MultiHeadAttention(context), { training: true }) : base;
    const changed = await signature(() => new MultiHeadAttention({ ...context, ...CONFIG_SENTINELS[key] }), { training: true });
    outcome[key] = assertWorksOrRefused(key, keyBase, changed);
  }
  return outcome;
}

/**
 * Walks every forward option; `known`: the layer's option list (its unknown-option message);
 * `extra`: sentinels of a backend's own options (WebGPU's outputLocation).
 */
export async function walkCall(MultiHeadAttention, known, extra = {}) {
  const sentinels = { ...CALL_SENTINELS, ...extra };
  assert.deepEqual([...known].sort(), Object.keys(sentinels).sort(), 'a sentinel for every forward option');
  const outcome = {};
  for (const key of known) outcome[key] = await walkOption(MultiHeadAttention, key, sentinels[key]);
  return outcome;
}

/** One forward option's walk: 'works' or 'refused' (by name), else an AssertionError. */
export async function walkOption(MultiHeadAttention, key, s = CALL_SENTINELS[key]) {
  const make = () => new MultiHeadAttention({ ...BASE_CONFIG, ...s.layer });
  const base = await signature(make, s.with ?? {}, { nan: s.nan });
  const changed = await signature(make, { ...s.with, [key]: s.value }, { nan: s.nan });
  const outcome = assertWorksOrRefused(key, base, changed);
  return outcome === 'refused' && s.worksByRefusing ? 'works' : outcome;
}
