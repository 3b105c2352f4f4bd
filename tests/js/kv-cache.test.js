// The KV cache through the public API on every build: a causal prefill and one-token steps equal
// the full causal forward over the whole text (GQA/MQA, chunked prefill, variants, weights),
// cross caches equal cross-attention, float16's error is bounded, errors keep the cache, random
// append/truncate/reset sequences agree with recomputation, and 10,000 steps keep the heap flat.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import fc from 'fast-check';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });

function loadedLayer(MultiHeadAttention, config, seed = 1) {
  const layer = new MultiHeadAttention(config);
  const sd = {};
  for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
    sd[key] = seededFloats(shape.reduce((a, b) => a * b, 1), seed++, shape.length === 2 ? 1 / Math.sqrt(shape[1]) : 0.3);
  }
  return layer.loadStateDict(sd);
}

/** Rows [from, to) of a [B, L, E] tensor, as [B, to - from, E]. */
function rows({ data, shape: [B, L, E] }, from, to) {
  const out = new Float32Array(B * (to - from) * E);
  for (let b = 0; b < B; b++) out.set(data.subarray((b * L + from) * E, (b * L + to) * E), b * (to - from) * E);
  return { data: out, shape: [B, to - from, E] };
}

function assertClose(got, want, tolerance, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tolerance * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

/** Runs `chunks` through a cache and compares every call's rows with the full causal forward. */
function checkAgainstFull(layer, x, chunks, { tolerance = 1e-5, dtype = 'f32' } = {}) {
  const [B, L] = x.shape;
  const H = layer.config.numHeads, D = layer.config.outputDim;
  const full = layer.forward(x, null, null, { causal: true, needWeights: true, averageWeights: false });
  const cache = layer.createCache({ batch: B, capacity: L, dtype });
  let done = 0;
  for (const n of chunks) {
    const r = layer.forward(rows(x, done, done + n), null, null, { cache, needWeights: true, averageWeights: false });
    const S = done + n;
    assert.equal(cache.length, S);
    assert.deepEqual(r.output.shape, [B, n, D]);
    assert.deepEqual(r.weights.shape, [B, H, n, S]);
    for (let b = 0; b < B; b++) {
      for (let i = 0; i < n; i++) {
        assertClose(r.output.data.subarray((b * n + i) * D, (b * n + i + 1) * D),
          full.output.data.subarray((b * L + done + i) * D, (b * L + done + i + 1) * D), tolerance, `output row ${done + i}`);
        for (let h = 0; h < H; h++) {
          assertClose(r.weights.data.subarray(((b * H + h) * n + i) * S, ((b * H + h) * n + i + 1) * S),
            full.weights.data.subarray(((b * H + h) * L + done + i) * L, ((b * H + h) * L + done + i) * L + S),
            tolerance, `weights row ${done + i} head ${h}`);
        }
      }
    }
    done += n;
  }
  cache.dispose();
}

const CONFIGS = {
  'plain': { embedDim: 16, numHeads: 2 },
  'GQA': { embedDim: 32, numHeads: 4, numKvHeads: 2 },
  'MQA': { embedDim: 16, numHeads: 4, numKvHeads: 1 },
  'a group of 7 heads (pairs and one alone)': { embedDim: 56, numHeads: 7, numKvHeads: 1 },
  'Llama-like (rotary + GQA)': { embedDim: 32, numHeads: 4, numKvHeads: 2, rotary: { dim: 8 } },
  'Mistral-like (+ sliding window 3)': { embedDim: 32, numHeads: 4, numKvHeads: 2, rotary: { dim: 8 }, slidingWindow: 3 },
  'every variant': {
    embedDim: 24, numHeads: 6, numKvHeads: 3, headDim: 6, valueHeadDim: 5, outputDim: 7, rotary: { dim: 4, interleaved: true },
    alibi: true, softcap: 3, sinks: true, slidingWindow: 5,
  },
};

for (const build of builds) {
  describe(`KV cache on ${build.label}`, () => {
    for (const [name, config] of Object.entries(CONFIGS)) {
      test(`${name}: prefill + one-token steps + chunks == the full causal forward`, () => {
        build.use();
        const layer = loadedLayer(build.MultiHeadAttention, config);
        const x = { data: seededFloats(2 * 9 * config.embedDim, 5), shape: [2, 9, config.embedDim] };
        checkAgainstFull(layer, x, [1, 1, 1, 1, 1, 1, 1, 1, 1]);
        checkAgainstFull(layer, x, [5, 1, 1, 1, 1]);
        checkAgainstFull(layer, x, [3, 2, 1, 3]);
        layer.dispose();
      });
    }

    test('a long prefill over many key tiles, then steps', () => {
      build.use();
      const layer = loadedLayer(build.MultiHeadAttention, CONFIGS.GQA);
      const x = { data: seededFloats(1 * 300 * 32, 6), shape: [1, 300, 32] };
      checkAgainstFull(layer, x, [290, 1, 1, 8]);
      layer.dispose();
    });

    test('a layer whose one-token projections split across threads (E 512: 1 MiB of query weights, 256 KiB of key weights)', () => {
      build.use();
      const layer = loadedLayer(build.MultiHeadAttention, { embedDim: 512, numHeads: 8, numKvHeads: 2 });
      for (const B of [1, 2]) {
        const x = { data: seededFloats(B * 6 * 512, 10), shape: [B, 6, 512] };
        checkAgainstFull(layer, x, [3, 1, 1, 1]);
      }
      layer.dispose();
    });

    test('cross-attention cache: setKeyValue once, forward reads it, equal to forward(query, key, value)', () => {
      build.use();
      const layer = loadedLayer(build.MultiHeadAttention, { embedDim: 16, numHeads: 4, numKvHeads: 2, kdim: 6, vdim: 10 });
      const q = { data: seededFloats(2 * 3 * 16, 1), shape: [2, 3, 16] };
      const k = { data: seededFloats(2 * 7 * 6, 2), shape: [2, 7, 6] }, v = { data: seededFloats(2 * 7 * 10, 3), shape: [2, 7, 10] };
      const want = layer.forward(q, k, v, { needWeights: true });
      const cache = layer.createCache({ batch: 2, capacity: 8 }).setKeyValue(k, v);
      assert.equal(cache.kind, 'cross');
      for (let call = 0; call < 2; call++) {
        const got = layer.forward(q, null, null, { cache, needWeights: true });
        assertClose(got.output.data, want.output.data, 1e-5, 'output');
        assertClose(got.weights.data, want.weights.data, 1e-5, 'weights');
        assert.equal(cache.length, 7);
      }
      assert.throws(() => layer.forward(q, k, v, { cache }), { name: 'TypeError', message: /forward: key: with a cache the keys and values come from it/ });
      layer.dispose();
    });

    test('float16 cache: half the bytes, results within 1e-3 of the float32 cache', () => {
      build.use();
      const config = CONFIGS['Llama-like (rotary + GQA)'];
      const layer = loadedLayer(build.MultiHeadAttention, config);
      const x = { data: seededFloats(2 * 12 * 32, 8, 1), shape: [2, 12, 32] };
      const c32 = layer.createCache({ batch: 2, capacity: 12 }), c16 = layer.createCache({ batch: 2, capacity: 12, dtype: 'f16' });
      assert.equal(c16.byteSize * 2, c32.byteSize);
      assert.equal(c32.byteSize, 2 * 2 * 12 * (8 + 8) * 4);
      let worst = 0;
      for (let i = 0; i < 12; i++) {
        const step = rows(x, i, i + 1);
        const a = layer.forward(step, null, null, { cache: c32 }).output.data, b = layer.forward(step, null, null, { cache: c16 }).output.data;
        for (let j = 0; j < a.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]) / (1 + Math.abs(a[j])));
      }
      assert.ok(worst < 1e-3 && worst > 0, `largest f16 difference ${worst}`);
      layer.dispose();
    });

    test('errors leave the cache as it was; truncate and reset; layer.dispose frees its caches', () => {
      build.use();
      const layer = loadedLayer(build.MultiHeadAttention, CONFIGS.plain);
      const other = loadedLayer(build.MultiHeadAttention, CONFIGS.plain);
      const x = { data: seededFloats(1 * 6 * 16, 4), shape: [1, 6, 16] };
      const cache = layer.createCache({ capacity: 4 });
      const first = layer.forward(rows(x, 0, 3), null, null, { cache }).output.data;
      assert.throws(() => layer.forward(rows(x, 3, 5), null, null, { cache }),
        { name: 'RangeError', message: 'forward: cache: appending 2 tokens to the 3 it holds would exceed its capacity of 4 tokens' });
      assert.equal(cache.length, 3);
      assert.throws(() => other.forward(rows(x, 3, 4), null, null, { cache }), { name: 'TypeError' });
      assert.throws(() => layer.forward(rows(x, 3, 4), null, null, { cache, causal: false }), { name: 'TypeError' });
      assert.equal(cache.length, 3);
      // Truncate to 1 and append tokens 1..2 again: the same rows as the first time.
      cache.truncate(1);
      const again = layer.forward(rows(x, 1, 3), null, null, { cache }).output.data;
      assert.deepEqual(again, first.subarray(16));
      cache.reset();
      assert.equal(cache.length, 0);
      assert.equal(cache.kind, 'none');
      const heap = build.heapAllocatedBytes();
      layer.dispose();
      assert.equal(cache.alive, false);
      assert.throws(() => cache.length, { name: 'TypeError', message: 'KvCache.length: this cache was disposed' });
      assert.ok(build.heapAllocatedBytes() < heap);
      other.dispose();
    });

    test('random append / truncate / reset sequences agree with recomputing from the kept tokens', () => {
      build.use();
      const E = 8;
      const layer = loadedLayer(build.MultiHeadAttention, { embedDim: E, numHeads: 2, rotary: { dim: 4 } });
      const pool = seededFloats(40 * E, 9);
      const token = (t) => pool.subarray((t % 40) * E, (t % 40 + 1) * E);
      const op = fc.oneof(
        fc.record({ kind: fc.constant('append'), tokens: fc.array(fc.nat(39), { minLength: 1, maxLength: 4 }) }),
        fc.record({ kind: fc.constant('truncate'), keep: fc.nat(12) }),
        fc.record({ kind: fc.constant('reset') }),
      );
      fc.assert(fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const cache = layer.createCache({ capacity: 64 });
        const held = [];  // the reference: the tokens the cache should hold
        try {
          for (const o of ops) {
            if (o.kind === 'append') {
              const data = new Float32Array(o.tokens.length * E);
              o.tokens.forEach((t, i) => data.set(token(t), i * E));
              const got = layer.forward({ data, shape: [1, o.tokens.length, E] }, null, null, { cache }).output.data;
              held.push(...o.tokens);
              const all = new Float32Array(held.length * E);
              held.forEach((t, i) => all.set(token(t), i * E));
              const want = layer.forward({ data: all, shape: [1, held.length, E] }, null, null, { causal: true }).output.data;
              assertClose(got, want.subarray((held.length - o.tokens.length) * E), 1e-5, 'appended rows');
            } else if (o.kind === 'truncate') {
              const keep = Math.min(o.keep, held.length);
              cache.truncate(keep);
              held.length = keep;
            } else {
              cache.reset();
              held.length = 0;
            }
            assert.equal(cache.length, held.length);
          }
        } finally {
          cache.dispose();
        }
      }), { numRuns: 60, seed: 42 });
      layer.dispose();
    });
  });
}

describe('KV cache soak', () => {
  test('10,000 decode steps with truncate and reset keep the wasm heap flat', () => {
    const build = builds[0];
    const layer = loadedLayer(build.MultiHeadAttention, CONFIGS['Mistral-like (+ sliding window 3)']);
    const cache = layer.createCache({ capacity: 256 });
    const step = { data: seededFloats(32, 3), shape: [1, 1, 32] };
    const out = new Float32Array(32);
    for (let i = 0; i < 300; i++) layer.forward(step, null, null, { cache: i % 200 === 0 ? cache.reset() : cache, out });
    const before = build.heapAllocatedBytes();
    for (let i = 0; i < 10_000; i++) {
      if (cache.length === 256) cache.truncate(i % 2 ? 17 : 0);
      if (i % 2500 === 0) cache.reset();
      layer.forward(step, null, null, { cache, out });
    }
    assert.equal(build.heapAllocatedBytes(), before);
    console.log(`# 10,000 cached steps: heap ${before} -> ${build.heapAllocatedBytes()} bytes`);
    layer.dispose();
  });
});
