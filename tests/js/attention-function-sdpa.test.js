// scaledDotProductAttention (bindings/js/core/attention-function.js) against PyTorch's
// F.scaled_dot_product_attention semantics: float64 values of its documented formula
// (tests/fixtures/sdpa-float64.json from tools/make_sdpa_fixtures.py: GQA, is_causal with L != S
// both ways, causal_lower_right, scale, bool and float masks, unbatched); dropout against the
// layer's Philox stream (the same seed gives the layer's mask); and the refusals, each naming its
// argument.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { seededFloats } from './seeded.js';

const FIXTURES = JSON.parse(readFileSync(new URL('../fixtures/sdpa-float64.json', import.meta.url), 'utf8'));

const f32 = ({ data, shape }) => ({ data: Float32Array.from(data), shape });

function assertClose(what, got, want, atol = 2e-6, rtol = 2e-5) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  for (let i = 0; i < want.data.length; i++) {
    const ok = Math.abs(got.data[i] - want.data[i]) <= atol + rtol * Math.abs(want.data[i]);
    assert.ok(ok, `${what}[${i}]: got ${got.data[i]}, want ${want.data[i]}`);
  }
}

/** An identity matrix of size n, flat. */
function identity(n) {
  const m = new Float32Array(n * n);
  for (let i = 0; i < n; i++) m[i * n + i] = 1;
  return m;
}

for (const build of BUILDS) {
  describe(`scaledDotProductAttention: PyTorch SDPA semantics on ${build}`, async () => {
    const mha = await loadBuild(build);

    for (const c of FIXTURES.cases) {
      test(c.name, () => {
        const options = { ...c.options, needWeights: true };
        if (c.attnMask) {
          const { data, shape } = c.attnMask;
          options.attnMask = { data: c.attnMask.bool ? Uint8Array.from(data) : Float32Array.from(data), shape };
        }
        const r = mha.scaledDotProductAttention(f32(c.query), f32(c.key), f32(c.value), options);
        assertClose('output', r.output, c.output);
        assertClose('weights', r.weights, c.weights);
      });
    }

    test('dropout: the same seed gives the layer\'s Philox mask (identity projections), kept ones scaled by 1 / (1 - p)', () => {
      const [B, H, L, E, p, seed] = [2, 3, 40, 8, 0.25, 1234];
      const layer = new mha.MultiHeadAttention({ embedDim: H * E, numHeads: H, bias: false, dropout: p });
      const D = H * E;
      const shapes = layer.stateDictShapes();
      layer.loadStateDict(Object.fromEntries(Object.keys(shapes).map((name) => [name,
        name === 'in_proj_weight' ? Float32Array.from([...identity(D), ...identity(D), ...identity(D)]) : identity(D)])));
      const x = (s) => ({ data: seededFloats(B * L * D, s), shape: [B, L, D] });
      const [q, k, v] = [x(1), x(2), x(3)];
      const want = layer.forward(q, k, v, { training: true, seed, needWeights: true, averageWeights: false });
      const got = mha.scaledDotProductAttention(q, k, v, { numHeads: H, dropout: p, seed, needWeights: true });
      assertClose('output', got.output, want.output, 1e-6, 1e-5);
      assertClose('weights', got.weights, want.weights, 1e-7, 1e-5);
      const plain = mha.scaledDotProductAttention(q, k, v, { numHeads: H, needWeights: true });
      let kept = 0;
      for (let i = 0; i < plain.weights.data.length; i++) {
        const w = got.weights.data[i];
        if (w !== 0) {
          kept++;
          assert.ok(Math.abs(w - plain.weights.data[i] / (1 - p)) <= 1e-6, `weights[${i}]`);
        }
      }
      const fraction = kept / plain.weights.data.length;
      assert.ok(Math.abs(fraction - (1 - p)) < 0.03, `kept ${fraction}`);
      const again = mha.scaledDotProductAttention(q, k, v, { numHeads: H, dropout: p, seed });
      assert.deepEqual(again.output.data, got.output.data);
      layer.dispose();
    });

    test('a call large enough to split over threads (and a decode-sized one) equals the formula in float64', () => {
      for (const [B, Hq, Hkv, L, S, E] of [[2, 8, 2, 130, 150, 32], [3, 6, 3, 2, 300, 16]]) {
        const q = { data: seededFloats(B * Hq * L * E, 21), shape: [B, Hq, L, E] };
        const k = { data: seededFloats(B * Hkv * S * E, 22), shape: [B, Hkv, S, E] };
        const v = { data: seededFloats(B * Hkv * S * E, 23), shape: [B, Hkv, S, E] };
        const r = mha.scaledDotProductAttention(q, k, v, { causal: 'bottom-right' });
        for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) for (let i = 0; i < L; i += 7) {
          const kvh = Math.floor(h / (Hq / Hkv)), seen = i + S - L + 1;
          const logits = Array.from({ length: seen }, (_, j) => {
            let dot = 0;
            for (let d = 0; d < E; d++) dot += q.data[((b * Hq + h) * L + i) * E + d] * k.data[((b * Hkv + kvh) * S + j) * E + d];
            return dot / Math.sqrt(E);
          });
          const max = Math.max(...logits), p = logits.map((x) => Math.exp(x - max)), sum = p.reduce((a, x) => a + x, 0);
          for (let d = 0; d < E; d++) {
            const want = p.reduce((a, pj, j) => a + (pj / sum) * v.data[((b * Hkv + kvh) * S + j) * E + d], 0);
            const got = r.output.data[((b * Hq + h) * L + i) * E + d];
            assert.ok(Math.abs(got - want) <= 1e-5, `[${B}, ${Hq}, ${L}] output[${b}, ${h}, ${i}, ${d}]: got ${got}, want ${want}`);
          }
        }
      }
    });

    test('a bool mask\'s 1 means attend (the layer\'s masks are the opposite)', () => {
      const q = { data: seededFloats(2 * 3 * 4, 7), shape: [2, 3, 4] };
      const k = { data: seededFloats(2 * 5 * 4, 8), shape: [2, 5, 4] };
      const attendOnly2 = Uint8Array.from([0, 0, 1, 0, 0]);
      const r = mha.scaledDotProductAttention(q, k, k, { attnMask: { data: attendOnly2, shape: [5] }, needWeights: true });
      for (let row = 0; row < 6; row++) assert.deepEqual([...r.weights.data.subarray(row * 5, row * 5 + 5)], [0, 0, 1, 0, 0]);
      assert.deepEqual([...r.output.data.subarray(0, 4)], [...k.data.subarray(8, 12)]);
    });

    test('refusals name the argument and the expected shape', () => {
      const t = (shape, s = 1) => ({ data: seededFloats(shape.reduce((n, d) => n * d, 1), s), shape });
      const call = (q, k, v, o) => () => mha.scaledDotProductAttention(q, k, v, o);
      assert.throws(call(t([2, 3]), t([2, 3]), t([2, 3])),
        { name: 'RangeError', message: 'scaledDotProductAttention: query: expected shape [B, Hq, L, E], [Hq, L, E], or [B, L, Hq*E] with numHeads, got [2, 3]' });
      assert.throws(call(t([1, 4, 3, 8]), t([1, 3, 5, 8]), t([1, 3, 5, 8])),
        { name: 'RangeError', message: /^scaledDotProductAttention: key: the query's heads \(Hq = 4\) must be a multiple of the key's \(Hkv = 3\)/ });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 4, 8])),
        { name: 'RangeError', message: /^scaledDotProductAttention: value: expected shape \[B, Hkv, S, Ev\] with Hkv = 2 and S = 5/ });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { attnMask: { data: new Uint8Array(12), shape: [4, 3] } }),
        { name: 'RangeError', message: /^scaledDotProductAttention: attnMask: shape \[4, 3\] does not broadcast to \[B, Hq, L, T\] = \[1, 2, 3, 5\]/ });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { pastKey: t([1, 2, 4, 8]) }),
        { name: 'TypeError', message: 'scaledDotProductAttention: pastValue: pastKey and pastValue must be given together' });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { grad: 1 }),
        { name: 'TypeError', message: 'scaledDotProductAttention: grad must be a boolean, got number 1' });
      const r = mha.scaledDotProductAttention(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { grad: true });
      assert.throws(() => r.backward(t([1, 2, 3, 7])),
        { name: 'RangeError', message: 'backward: dOut: expected the output\'s shape [1, 2, 3, 8], got [1, 2, 3, 7]' });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { isCausal: true }),
        { name: 'TypeError', message: /^scaledDotProductAttention: options: unknown option 'isCausal'; known options: attnMask, causal/ });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { causal: false, causalOffset: 2 }),
        { name: 'TypeError', message: /^scaledDotProductAttention: causalOffset: implies causal/ });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { kvSeqLens: Int32Array.of(6) }),
        { name: 'RangeError', message: 'scaledDotProductAttention: kvSeqLens: every length must be from 0 to T = P + S = 5, got 6 for batch row 0' });
      assert.throws(call(t([1, 2, 3, 8]), t([1, 2, 5, 8]), t([1, 2, 5, 8]), { dropout: 1 }),
        { name: 'RangeError', message: 'scaledDotProductAttention: dropout must be a number in [0, 1), got 1' });
      assert.throws(call(t([1, 3, 8]), t([1, 5, 8]), t([1, 5, 8]), { numHeads: 3 }),
        { name: 'RangeError', message: /^scaledDotProductAttention: query: the last dimension of shape \[B, L, numHeads\*E\] must be a positive multiple of numHeads = 3/ });
      assert.throws(call(t([1, 2, 3, 8]), null, t([1, 2, 5, 8])),
        { name: 'TypeError', message: /^scaledDotProductAttention: key is required/ });
    });

    test('scaledDotProductAttentionAsync settles with the same result, and rejects with its own name', async () => {
      const t = (shape, s) => ({ data: seededFloats(shape.reduce((n, d) => n * d, 1), s), shape });
      const [q, k, v] = [t([1, 2, 3, 8], 1), t([1, 2, 5, 8], 2), t([1, 2, 5, 8], 3)];
      const sync = mha.scaledDotProductAttention(q, k, v, { causal: 'bottom-right' });
      const async = await mha.scaledDotProductAttentionAsync(q, k, v, { causal: 'bottom-right' });
      assert.deepEqual(async.output, sync.output);
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, k, v, { scale: 'x' }),
        { name: 'TypeError', message: 'scaledDotProductAttentionAsync: scale must be a number, got string x' });
    });
  });
}
