// The option walk (tests/js/option-walk.js) on the wasm layer: every config key and every forward
// option either changes what the layer does or is refused by an Error naming it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import {
  BASE_CONFIG, CALL_SENTINELS, knownOptions, walkCall, walkConfig, walkOption,
} from './option-walk.js';

const mha = await init({ threads: 1 });

test('every config key of MultiHeadAttention works or is refused by name', async () => {
  const outcome = await walkConfig(mha.MultiHeadAttention);
  // Each works on the wasm backend (none is refused).
  assert.deepEqual(Object.values(outcome).filter((o) => o !== 'works'), [], JSON.stringify(outcome));
});

test('every forward option works or is refused by name', async () => {
  const layer = new mha.MultiHeadAttention(BASE_CONFIG).initialize();
  const x = { data: new Float32Array(8), shape: [1, 8] };
  const known = knownOptions(() => layer.forward(x, null, null, { notAnOption: 1 }));
  layer.dispose();
  const outcome = await walkCall(mha.MultiHeadAttention, known);
  assert.deepEqual(Object.values(outcome).filter((o) => o !== 'works'), [], JSON.stringify(outcome));
});

test('every forward option of a float64 layer works or is refused by name', async () => {
  // A float64 layer (no dropout: it has none), its sentinels' float tensors as Float64Array.
  class Float64Layer extends mha.MultiHeadAttention {
    constructor(config) { super({ ...config, dropout: 0, dtype: 'float64' }); }
  }
  const widen = (v) => (v instanceof Float32Array ? Float64Array.from(v)
    : typeof v === 'function' ? (layer) => widen(v(layer))
      : v && typeof v === 'object' && !ArrayBuffer.isView(v) && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, widen(x)])) : v);
  // training, seed and weightsBeforeDropout act on dropout, which a float64 layer lacks: they change
  // nothing there, as on any layer without dropout. positions: the plan's refusal (no rotary), not rotary's.
  const skipped = ['training', 'seed', 'weightsBeforeDropout'];
  const outcome = {};
  for (const [key, sentinel] of Object.entries(CALL_SENTINELS)) {
    if (skipped.includes(key)) continue;
    const s = widen(key === 'positions' ? { ...sentinel, layer: {} } : sentinel);
    outcome[key] = await walkOption(Float64Layer, key, s);
  }
  assert.deepEqual(Object.entries(outcome).filter(([, o]) => o !== 'works').map(([k]) => k).sort(),
    ['cache', 'capture', 'patch', 'positions'], JSON.stringify(outcome));
});

test('the walk fails an option that is accepted and ignored', async () => {
  // A layer class whose forward drops `causal`: the walk must catch it.
  class Ignoring extends mha.MultiHeadAttention {
    forward(q, k, v, { causal, ...rest } = {}) { return super.forward(q, k, v, rest); }
  }
  await assert.rejects(walkOption(Ignoring, 'causal'), /causal: accepted and ignored/);
  assert.equal(await walkOption(mha.MultiHeadAttention, 'causal'), 'works');
});

test('every call option of KerasMultiHeadAttention works or is refused by name', () => {
  const B = 2, T = 3, F = 8;
  const make = (extra = {}) => new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 4, queryDim: F, seed: 1, dropout: 0.5, ...extra });
  const x = (nan = false) => {
    const data = Float32Array.from({ length: B * T * F }, (_, i) => Math.sin(i + 1));
    if (nan) data[3] = NaN;
    return { data, shape: [B, T, F] };
  };
  const ones = (shape, zeroAt = 1) => ({ data: Uint8Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (i === zeroAt ? 0 : 1)), shape });
  const SENTINELS = {
    attentionMask: { value: ones([T, T]) }, queryMask: { value: ones([B, T]) }, valueMask: { value: ones([B, T]) },
    keyMask: { value: ones([B, T]) }, useCausalMask: { value: true }, returnAttentionScores: { value: true },
    training: { value: true }, seed: { with: { training: true }, value: 99 }, checkFinite: { value: true, nan: true, worksByRefusing: true },
    capture: { value: ['z'] }, patch: { value: { z: { data: new Float32Array(B * T * 2 * 4), shape: [B, T, 2, 4] } } },
  };
  const probe = make();
  const known = knownOptions(() => probe.call(x(), x(), null, { notAnOption: 1 }));
  probe.dispose();
  assert.deepEqual([...known].sort(), Object.keys(SENTINELS).sort(), 'a sentinel for every call option');
  const signature = (options, nan) => {
    const layer = make();
    try {
      const r = layer.call(x(nan), x(nan), null, options);
      return JSON.stringify([Array.from(r.output.data, (v) => Math.round(v * 1e5)), r.scores && Array.from(r.scores.data), Object.keys(r.captured ?? {}), r.mask?.shape]);
    } catch (error) {
      return `error: ${error.message}`;
    } finally {
      layer.dispose();
    }
  };
  for (const [key, s] of Object.entries(SENTINELS)) {
    const base = signature(s.with ?? {}, s.nan), changed = signature({ ...s.with, [key]: s.value }, s.nan);
    if (changed.startsWith('error:') && !base.startsWith('error:')) {
      assert.ok(s.worksByRefusing && changed.includes('query'), `${key}: refused: ${changed}`);
      continue;
    }
    assert.notEqual(changed, base, `${key}: accepted and ignored`);
  }
});
