// batchFirst: false (PyTorch's default batch_first=False): batched tensors are [L, B, features].
// Every path gives exactly what the batch-first layer gives on the same data transposed: forward,
// weights, out buffers, grad and backward, capture, a self cache (decoding) and a cross cache.
// PyTorch's own numbers for this layout: tests/js/pytorch-mha.test.js.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { seededFloats } from './seeded.js';

const mha = await init();

/** [d0, d1, F] -> [d1, d0, F]. */
function swap({ data, shape: [d0, d1, F] }) {
  const out = new Float32Array(data.length);
  for (let i = 0; i < d0; i++) for (let j = 0; j < d1; j++) out.set(data.subarray((i * d1 + j) * F, (i * d1 + j + 1) * F), (j * d0 + i) * F);
  return { data: out, shape: [d1, d0, F] };
}

const B = 3, L = 4, S = 5, E = 8, H = 2, KD = 6;
const config = { embedDim: E, numHeads: H, kdim: KD, vdim: KD };
const layers = () => {
  const batchFirst = new mha.MultiHeadAttention(config).initialize({ seed: 3 });
  const sequenceFirst = new mha.MultiHeadAttention({ ...config, batchFirst: false }).loadStateDict(batchFirst.stateDict());
  return [batchFirst, sequenceFirst];
};
const q = { data: seededFloats(B * L * E, 1), shape: [B, L, E] };
const k = { data: seededFloats(B * S * KD, 2), shape: [B, S, KD] };
const v = { data: seededFloats(B * S * KD, 3), shape: [B, S, KD] };
const keyPaddingMask = { data: Uint8Array.from({ length: B * S }, (_, i) => (i % 4 === 3 ? 1 : 0)), shape: [B, S] };

describe('batchFirst: false', () => {
  test('the config says so, and the default stays batch-first', () => {
    const [bf, sf] = layers();
    assert.equal(sf.config.batchFirst, false);
    assert.equal(bf.config.batchFirst, undefined);
    assert.throws(() => new mha.MultiHeadAttention({ ...config, batchFirst: 0 }), { name: 'TypeError', message: /batchFirst must be a boolean/ });
    bf.dispose();
    sf.dispose();
  });

  test('forward: [L, B, E] in and out, masks and weights in their PyTorch shapes', () => {
    const [bf, sf] = layers();
    const options = { keyPaddingMask, needWeights: true, averageWeights: false };
    const want = bf.forward(q, k, v, options);
    const out = new Float32Array(L * B * E);
    const got = sf.forward(swap(q), swap(k), swap(v), { ...options, out });
    assert.deepEqual(got.output.shape, [L, B, E]);
    assert.equal(got.output.data, out);
    assert.deepEqual(got.output, swap(want.output));
    assert.deepEqual(got.weights, want.weights);  // [B, H, L, S] in both layouts, as PyTorch's
    // Self-attention, and the unbatched form (the same in both layouts).
    assert.deepEqual(new mha.MultiHeadAttention({ embedDim: E, numHeads: H, batchFirst: false }).initialize({ seed: 1 })
      .forward(swap(q)).output.shape, [L, B, E]);
    const unbatched = { data: q.data.subarray(0, L * E), shape: [L, E] };
    const keyRow = { data: k.data.subarray(0, S * KD), shape: [S, KD] }, valueRow = { data: v.data.subarray(0, S * KD), shape: [S, KD] };
    assert.deepEqual(sf.forward(unbatched, keyRow, valueRow).output, bf.forward(unbatched, keyRow, valueRow).output);
    bf.dispose();
    sf.dispose();
  });

  test('shapes are checked in the sequence-first layout, and the messages say so', () => {
    const [bf, sf] = layers();
    // (S is read from the key's first dimension: here B.)
    assert.throws(() => sf.forward(swap(q), k, v), { name: 'RangeError', message: `forward: key: expected shape [S, B, kdim] = [${B}, ${B}, ${KD}], got [${B}, ${S}, ${KD}]` });
    assert.throws(() => sf.forward({ data: new Float32Array(L * B * (E + 1)), shape: [L, B, E + 1] }),
      { message: `forward: query: last dimension must be embedDim = ${E}, expected shape [L, B, ${E}], got [${L}, ${B}, ${E + 1}]` });
    assert.throws(() => sf.forward(swap(q), swap(k), swap(v), { keyPaddingMask: { data: keyPaddingMask.data, shape: [S, B] } }),
      { message: `forward: keyPaddingMask: expected shape [B, S] = [${B}, ${S}], got [${S}, ${B}]` });
    bf.dispose();
    sf.dispose();
  });

  test('grad: the output and every gradient as the batch-first layer\'s, the inputs\' in [L, B, ·]', () => {
    const [bf, sf] = layers();
    const dOut = { data: seededFloats(B * L * E, 9), shape: [B, L, E] };
    const want = bf.forward(q, k, v, { grad: true, keyPaddingMask }).backward(dOut);
    const r = sf.forward(swap(q), swap(k), swap(v), { grad: true, keyPaddingMask });
    assert.deepEqual(r.output.shape, [L, B, E]);
    assert.throws(() => r.backward(dOut), /dOut/);  // ([B, L, E] is not this output's shape)
    const got = r.backward(swap(dOut));
    assert.deepEqual(got.query, swap(want.query));
    assert.deepEqual(got.key, swap(want.key));
    assert.deepEqual(got.value, swap(want.value));
    for (const [name, g] of Object.entries(want.params)) assert.deepEqual(got.params[name], g, name);
    bf.dispose();
    sf.dispose();
  });

  test('capture: the same steps (they keep their [B, H, ...] layouts), with grad too', () => {
    const [bf, sf] = layers();
    const want = bf.forward(q, k, v, { capture: true });
    const got = sf.forward(swap(q), swap(k), swap(v), { capture: true });
    assert.deepEqual(got.output, swap(want.output));
    assert.deepEqual(Object.keys(got.captured), Object.keys(want.captured));
    for (const [name, step] of Object.entries(want.captured)) assert.deepEqual(got.captured[name], step, name);
    // With grad: the step-by-step path's backward, swapped back as the fast path's.
    const dOut = { data: seededFloats(B * L * E, 10), shape: [B, L, E] };
    const wantGrads = bf.forward(q, k, v, { capture: ['pattern'], grad: true }).backward(dOut);
    const gotGrads = sf.forward(swap(q), swap(k), swap(v), { capture: ['pattern'], grad: true }).backward(swap(dOut));
    assert.deepEqual(gotGrads.query, swap(wantGrads.query));
    assert.deepEqual(gotGrads.key, swap(wantGrads.key));
    assert.deepEqual(gotGrads.params, wantGrads.params);
    bf.dispose();
    sf.dispose();
  });

  test('a self cache: token by token, [1, B, E] per step', () => {
    const [bf0, sf0] = layers();
    const selfConfig = { embedDim: E, numHeads: H };
    const bf = new mha.MultiHeadAttention(selfConfig).initialize({ seed: 5 });
    const sf = new mha.MultiHeadAttention({ ...selfConfig, batchFirst: false }).loadStateDict(bf.stateDict());
    const bfCache = bf.createCache({ batch: B, capacity: L }), sfCache = sf.createCache({ batch: B, capacity: L });
    const whole = bf.forward(q, null, null, { causal: true }).output;
    for (let t = 0; t < L; t++) {
      const token = { data: new Float32Array(B * E), shape: [B, 1, E] };
      for (let b = 0; b < B; b++) token.data.set(q.data.subarray((b * L + t) * E, (b * L + t + 1) * E), b * E);
      const want = bf.forward(token, null, null, { cache: bfCache }).output;
      const got = sf.forward(swap(token), null, null, { cache: sfCache }).output;
      assert.deepEqual(got.shape, [1, B, E]);
      assert.deepEqual(got.data, want.data);  // ([1, B, E] and [B, 1, E] hold the same order)
      for (let b = 0; b < B; b++) {
        for (let i = 0; i < E; i++) assert.ok(Math.abs(got.data[b * E + i] - whole.data[(b * L + t) * E + i]) < 1e-5);
      }
    }
    for (const x of [bf0, sf0, bf, sf]) x.dispose();
  });

  test('a cross cache: setKeyValue takes [S, B, kdim] and [S, B, vdim]', () => {
    const [bf, sf] = layers();
    const bfCache = bf.createCache({ batch: B, capacity: S }), sfCache = sf.createCache({ batch: B, capacity: S });
    bfCache.setKeyValue(k, v);
    sfCache.setKeyValue(swap(k), swap(v));
    assert.throws(() => sf.createCache({ batch: B, capacity: S }).setKeyValue(k, v),
      { message: `setKeyValue: key: expected shape [S, B, kdim] = [S, ${B}, ${KD}] with S >= 1, got [${B}, ${S}, ${KD}]` });
    assert.deepEqual(sf.forward(swap(q), null, null, { cache: sfCache }).output, swap(bf.forward(q, null, null, { cache: bfCache }).output));
    bf.dispose();
    sf.dispose();
  });
});
