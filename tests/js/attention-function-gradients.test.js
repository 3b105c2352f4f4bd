// The gradients of scaledDotProductAttention (grad: true, then backward(dOut)) against float64
// central differences of the formula, for query, key, value and the pasts: GQA, a past, a
// broadcast bool mask (1 = attend) padded to the keys, offset-causal rows (one fully blocked,
// whose gradients are zero), softcap and a custom scale; and the 3-D form's gradients equal the
// 4-D form's in its layout.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { seededFloats } from './seeded.js';

const [B, Hq, Hkv, L, S, P, E, Ev] = [2, 4, 2, 3, 4, 2, 5, 3];
const T = P + S;
const OFFSETS = [-1, P];  // batch row 0: query 0 sees no key
const MASK = Uint8Array.from({ length: Hq * (T - 1) }, (_, i) => ((i * 7 + 3) % 5 !== 0 ? 1 : 0));  // [Hq, 1, T - 1]
const SOFTCAP = 1.5, SCALE = 0.4;

/** The output [B, Hq, L, Ev] in float64, from flat float64 inputs in the 4-D layouts. */
function formula(q, k, v, pk, pv) {
  const out = new Float64Array(B * Hq * L * Ev);
  const keyAt = (b, h, j, d) => (j < P ? pk[((b * Hkv + h) * P + j) * E + d] : k[((b * Hkv + h) * S + j - P) * E + d]);
  const valueAt = (b, h, j, d) => (j < P ? pv[((b * Hkv + h) * P + j) * Ev + d] : v[((b * Hkv + h) * S + j - P) * Ev + d]);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      const kvh = Math.floor(h / (Hq / Hkv));
      for (let i = 0; i < L; i++) {
        const logits = new Float64Array(T).fill(-Infinity);
        for (let j = 0; j < T; j++) {
          if (j >= T - 1 || !MASK[h * (T - 1) + j] || j > i + OFFSETS[b]) continue;
          let dot = 0;
          for (let d = 0; d < E; d++) dot += q[((b * Hq + h) * L + i) * E + d] * keyAt(b, kvh, j, d);
          logits[j] = SOFTCAP * Math.tanh((dot * SCALE) / SOFTCAP);
        }
        const max = Math.max(...logits);
        if (max === -Infinity) continue;
        const p = logits.map((x) => Math.exp(x - max));
        const sum = p.reduce((a, x) => a + x, 0);
        for (let d = 0; d < Ev; d++) {
          let o = 0;
          for (let j = 0; j < T; j++) if (p[j]) o += (p[j] / sum) * valueAt(b, kvh, j, d);
          out[((b * Hq + h) * L + i) * Ev + d] = o;
        }
      }
    }
  }
  return out;
}

const tensor = (shape, seed) => ({ data: seededFloats(shape.reduce((n, d) => n * d, 1), seed, 1), shape });

/** [B, H, N, D] -> [B, N, H*D]. */
function packHeads({ data, shape: [b, h, n, d] }) {
  const out = new Float32Array(data.length);
  for (let x = 0; x < b; x++) for (let y = 0; y < h; y++) for (let r = 0; r < n; r++) for (let c = 0; c < d; c++) out[((x * n + r) * h + y) * d + c] = data[((x * h + y) * n + r) * d + c];
  return { data: out, shape: [b, n, h * d] };
}

for (const build of BUILDS) {
  describe(`scaledDotProductAttention gradients on ${build}`, async () => {
    const mha = await loadBuild(build);
    const inputs = { query: tensor([B, Hq, L, E], 1), key: tensor([B, Hkv, S, E], 2), value: tensor([B, Hkv, S, Ev], 3),
      pastKey: tensor([B, Hkv, P, E], 4), pastValue: tensor([B, Hkv, P, Ev], 5) };
    const dOut = tensor([B, Hq, L, Ev], 6);
    const options = {
      pastKey: inputs.pastKey, pastValue: inputs.pastValue, attnMask: { data: MASK, shape: [Hq, 1, T - 1] },
      causalOffset: Int32Array.from(OFFSETS), softcap: SOFTCAP, scale: SCALE, grad: true,
    };

    test('dq, dk, dv, dPastKey and dPastValue equal float64 central differences of sum(output * dOut)', () => {
      const r = mha.scaledDotProductAttention(inputs.query, inputs.key, inputs.value, options);
      const grads = r.backward(dOut);
      const x = Object.fromEntries(Object.entries(inputs).map(([n, t]) => [n, Float64Array.from(t.data)]));
      const loss = () => formula(x.query, x.key, x.value, x.pastKey, x.pastValue).reduce((a, o, i) => a + o * dOut.data[i], 0);
      for (const name of Object.keys(inputs)) {
        assert.deepEqual(grads[name].shape, inputs[name].shape, `${name}: shape`);
        for (let i = 0; i < x[name].length; i++) {
          const keep = x[name][i], h = 1e-6;
          x[name][i] = keep + h;
          const up = loss();
          x[name][i] = keep - h;
          const down = loss();
          x[name][i] = keep;
          const want = (up - down) / (2 * h);
          assert.ok(Math.abs(grads[name].data[i] - want) <= 2e-5 + 1e-4 * Math.abs(want), `d${name}[${i}]: got ${grads[name].data[i]}, want ${want}`);
        }
      }
      // Batch row 0's query 0 sees no key: its output and gradient rows are zero.
      for (let h = 0; h < Hq; h++) {
        assert.deepEqual([...r.output.data.subarray(h * L * Ev, h * L * Ev + Ev)], [0, 0, 0]);
        assert.ok(grads.query.data.subarray(h * L * E, h * L * E + E).every((g) => g === 0));
      }
    });

    test('the 3-D form [B, L, H*E] gives the 4-D form\'s gradients in its layout; backwardAsync the same', async () => {
      const plain = { attnMask: { data: MASK.subarray(0, Hq * (S - 1)), shape: [Hq, 1, S - 1] }, causal: 'bottom-right', grad: true };
      const four = mha.scaledDotProductAttention(inputs.query, inputs.key, inputs.value, plain).backward(dOut);
      const r = mha.scaledDotProductAttention(packHeads(inputs.query), packHeads(inputs.key), packHeads(inputs.value),
        { ...plain, numHeads: Hq, kvNumHeads: Hkv });
      const three = await r.backwardAsync(packHeads(dOut));
      for (const name of ['query', 'key', 'value']) {
        const want = packHeads(four[name]);
        assert.deepEqual(three[name].shape, want.shape);
        three[name].data.forEach((g, i) => assert.ok(Math.abs(g - want.data[i]) <= 1e-6, `d${name}[${i}]`));
      }
      await assert.rejects(r.backwardAsync({ data: new Float32Array(3), shape: [3] }), { name: 'RangeError', message: /^backwardAsync: dOut: expected the output's shape/ });
    });
  });
}
