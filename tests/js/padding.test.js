// Padding safety: keys and values at positions every query has masked out are never read, so
// NaN or Inf there cannot reach the output (bool masks, float -Infinity masks, causal).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats as filled } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [3] });
const E = 16, H = 4, B = 2, L = 3, S = 7;

const stateDict = () => ({
  in_proj_weight: filled(3 * E * E, 1, 0.3), in_proj_bias: filled(3 * E, 2), 'out_proj.weight': filled(E * E, 3, 0.3),
  'out_proj.bias': filled(E, 4),
});
const query = { data: filled(B * L * E, 5), shape: [B, L, E] };
const key = { data: filled(B * S * E, 6), shape: [B, S, E] };
const value = { data: filled(B * S * E, 7), shape: [B, S, E] };

// Keys 5 and 6 of batch 0 and keys 0, 3 of batch 1 are padding.
const PADDED = [[5, 6], [0, 3]];
const POISONS = [NaN, Infinity, -Infinity, 3.4e38, -3.4e38];

/** A copy of `tensor` whose rows at the given (batch, position) pairs hold NaN/Inf. */
function poisoned(tensor, positions) {
  const data = tensor.data.slice();
  let n = 0;
  for (const [b, j] of positions) {
    for (let d = 0; d < E; d++) data[(b * S + j) * E + d] = POISONS[n++ % POISONS.length];
  }
  return { data, shape: tensor.shape };
}
const paddedPositions = PADDED.flatMap((js, b) => js.map((j) => [b, j]));

function keyPaddingMask(asFloat) {
  const data = asFloat ? new Float32Array(B * S) : new Uint8Array(B * S);
  PADDED.forEach((js, b) => js.forEach((j) => { data[b * S + j] = asFloat ? -Infinity : 1; }));
  return { data, shape: [B, S] };
}

function attnMaskBlockingColumns(columns, { asFloat, perHead }) {
  const rows = perHead ? B * H : 1;
  const data = asFloat ? new Float32Array(rows * L * S) : new Uint8Array(rows * L * S);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < L; i++) for (const j of columns) data[(r * L + i) * S + j] = asFloat ? -Infinity : 1;
  }
  return { data, shape: perHead ? [B * H, L, S] : [L, S] };
}

function assertSame(got, want) {
  assert.deepEqual(got.output.data, want.output.data);
  assert.ok(got.output.data.every(Number.isFinite), 'output is finite');
  if (want.weights) assert.deepEqual(got.weights.data, want.weights.data);
}

for (const build of builds) {
  describe(`padding safety on ${build.label}`, () => {
    build.use();
    const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());

    for (const asFloat of [false, true]) {
      for (const averageWeights of [true, false]) {
        test(`keyPaddingMask (${asFloat ? 'float -Infinity' : 'bool'}), ${averageWeights ? 'averaged' : 'per-head'} weights: NaN/Inf in padded keys and values change nothing`, () => {
          const options = { keyPaddingMask: keyPaddingMask(asFloat), needWeights: true, averageWeights };
          const clean = layer.forward(query, key, value, options);
          const dirty = layer.forward(query, poisoned(key, paddedPositions), poisoned(value, paddedPositions), options);
          assertSame(dirty, clean);
          // Padded keys get exactly zero weight.
          const perRow = averageWeights ? 1 : H;
          for (const [b, j] of paddedPositions) {
            for (let r = 0; r < perRow * L; r++) assert.equal(dirty.weights.data[(b * perRow * L + r) * S + j], 0);
          }
        });
      }
    }

    for (const asFloat of [false, true]) {
      for (const perHead of [false, true]) {
        test(`attnMask ${perHead ? '[B*H, L, S]' : '[L, S]'} (${asFloat ? 'float' : 'bool'}) blocking whole key columns hides their NaN/Inf`, () => {
          const columns = [1, 4];
          const options = { attnMask: attnMaskBlockingColumns(columns, { asFloat, perHead }), needWeights: true };
          const positions = [0, 1].flatMap((b) => columns.map((j) => [b, j]));
          assertSame(layer.forward(query, poisoned(key, positions), poisoned(value, positions), options),
            layer.forward(query, key, value, options));
        });
      }
    }

    test('causal: keys after the last query (j >= L) are never read', () => {
      const positions = [0, 1].flatMap((b) => [3, 4, 5, 6].map((j) => [b, j]));
      const options = { causal: true, needWeights: true, averageWeights: false };
      assertSame(layer.forward(query, poisoned(key, positions), poisoned(value, positions), options),
        layer.forward(query, key, value, options));
    });

    test('long keys (S = 150): padding that fills whole kernel tiles, and scattered, hides NaN/Inf', () => {
      const S2 = 150, L2 = 20;
      const q = { data: filled(B * L2 * E, 11), shape: [B, L2, E] };
      const k = { data: filled(B * S2 * E, 12), shape: [B, S2, E] };
      const v = { data: filled(B * S2 * E, 13), shape: [B, S2, E] };
      const padded = (b, j) => (b === 0 ? j >= 40 : j % 5 === 2 || (j >= 64 && j < 128));
      const mask = { data: Uint8Array.from({ length: B * S2 }, (_, i) => (padded(Math.floor(i / S2), i % S2) ? 1 : 0)), shape: [B, S2] };
      const poison = (t) => {
        const data = t.data.slice();
        for (let i = 0; i < B * S2; i++) if (mask.data[i]) data.fill(i % 2 ? NaN : Infinity, i * E, (i + 1) * E);
        return { data, shape: t.shape };
      };
      for (const options of [{ keyPaddingMask: mask }, { keyPaddingMask: mask, causal: true, needWeights: true, averageWeights: false }]) {
        assertSame(layer.forward(q, poison(k), poison(v), options), layer.forward(q, k, v, options));
      }
    });

    test('the result equals attention over the unpadded keys only', () => {
      // Batch 1 without its padded keys 0 and 3: keys 1, 2, 4, 5, 6.
      const keep = [1, 2, 4, 5, 6];
      const pick = (t) => ({ data: Float32Array.from(keep.flatMap((j) => [...t.data.subarray((S + j) * E, (S + j + 1) * E)])), shape: [1, keep.length, E] });
      const q1 = { data: query.data.slice(L * E), shape: [1, L, E] };
      const full = layer.forward(query, key, value, { keyPaddingMask: keyPaddingMask(false) }).output.data.subarray(L * E);
      const short = layer.forward(q1, pick(key), pick(value)).output.data;
      for (let i = 0; i < short.length; i++) assert.ok(Math.abs(full[i] - short[i]) <= 1e-6 + 1e-5 * Math.abs(short[i]), `element ${i}: ${full[i]} vs ${short[i]}`);
    });

    test('a fully masked query row gives out_proj.bias and zero weights, even with NaN everywhere in keys', () => {
      const all = [0, 1].flatMap((b) => [...Array(S).keys()].map((j) => [b, j]));
      const mask = { data: new Uint8Array(B * S).fill(1), shape: [B, S] };
      const { output, weights } = layer.forward(query, poisoned(key, all), poisoned(value, all), { keyPaddingMask: mask, needWeights: true });
      const bias = filled(E, 4);
      for (let r = 0; r < B * L; r++) assert.deepEqual(output.data.subarray(r * E, (r + 1) * E), bias);
      assert.ok(weights.data.every((w) => w === 0));
    });

    test('self-attention: a NaN query row spoils only its own output row', () => {
      const q = { data: query.data.slice(), shape: query.shape };
      q.data.fill(NaN, (1 * L + 2) * E, (1 * L + 3) * E); // batch 1, position 2
      const mask = { data: new Uint8Array(B * L), shape: [B, L] };
      mask.data[1 * L + 2] = 1; // ... which is also padding as a key
      const clean = layer.forward(query, null, null, { keyPaddingMask: mask }).output.data;
      const dirty = layer.forward(q, null, null, { keyPaddingMask: mask }).output.data;
      for (let r = 0; r < B * L; r++) {
        const got = dirty.subarray(r * E, (r + 1) * E);
        if (r === 1 * L + 2) assert.ok(got.every(Number.isNaN));
        else assert.deepEqual(got, clean.subarray(r * E, (r + 1) * E));
      }
    });
  });
}
