// forwardAsync / backwardAsync / callAsync on every wasm build: the promise twins of forward,
// backward and Keras' call settle with the very result the synchronous call gives (bit for bit),
// and reject with its errors, named by the async call.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const E = 8, H = 2, B = 2, L = 3, S = 5;

const stateDict = () => ({
  in_proj_weight: seededFloats(3 * E * E, 11), in_proj_bias: seededFloats(3 * E, 12),
  'out_proj.weight': seededFloats(E * E, 13), 'out_proj.bias': seededFloats(E, 14),
});
const query = { data: seededFloats(B * L * E, 15), shape: [B, L, E] };
const key = { data: seededFloats(B * S * E, 16), shape: [B, S, E] };
const value = { data: seededFloats(B * S * E, 17), shape: [B, S, E] };
const dOut = { data: seededFloats(B * L * E, 18), shape: [B, L, E] };

for (const build of builds) {
  const make = () => new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());

  describe(`forwardAsync on ${build.label}`, () => {
    test('resolves with forward\'s result: output and per-head weights, self- and cross-attention, masks', async () => {
      build.use();
      const layer = make();
      try {
        const keyPaddingMask = { data: Uint8Array.from({ length: B * S }, (_, i) => (i % S === 4 ? 1 : 0)), shape: [B, S] };
        const cases = [
          [query, null, null, { causal: true, needWeights: true, averageWeights: false }],
          [query, key, value, { needWeights: true, keyPaddingMask }],
          [query, key, value, {}],
        ];
        for (const [q, k, v, options] of cases) {
          const promise = layer.forwardAsync(q, k, v, options);
          assert.ok(promise instanceof Promise);
          const got = await promise;
          const want = layer.forward(q, k, v, options);
          assert.deepEqual(got.output.shape, want.output.shape);
          assert.deepEqual(got.output.data, want.output.data);
          assert.deepEqual(got.weights, want.weights);
        }
        const { weights } = await layer.forwardAsync(query, null, null, { causal: true, needWeights: true, averageWeights: false });
        assert.deepEqual(weights.shape, [B, H, L, L]);
        assert.equal(weights.data[1], 0, 'causal: query 0 does not see key 1');
      } finally {
        layer.dispose();
      }
    });

    test('out buffers are filled as forward fills them', async () => {
      build.use();
      const layer = make();
      try {
        const out = new Float32Array(B * L * E);
        const { output } = await layer.forwardAsync(query, key, value, { out });
        assert.equal(output.data, out);
        assert.deepEqual(out, layer.forward(query, key, value).output.data);
      } finally {
        layer.dispose();
      }
    });

    test('grad: true resolves with a result whose backwardAsync gives backward\'s gradients, once', async () => {
      build.use();
      const layer = make();
      try {
        const heap = build.heapAllocatedBytes();
        const r = await layer.forwardAsync(query, key, value, { grad: true });
        const g = await r.backwardAsync(dOut);
        assert.equal(build.heapAllocatedBytes(), heap, 'backwardAsync frees the saved state');
        const want = layer.forward(query, key, value, { grad: true }).backward(dOut);
        assert.deepEqual(g, want);
        assert.deepEqual(Object.keys(g.params).sort(), ['in_proj_bias', 'in_proj_weight', 'out_proj.bias', 'out_proj.weight']);
        await assert.rejects(r.backwardAsync(dOut), (e) => e instanceof Error && /^backwardAsync: already called/.test(e.message));
        const r2 = await layer.forwardAsync(query, null, null, { grad: true });
        await assert.rejects(r2.backwardAsync({ data: dOut.data, shape: [B, E, L] }),
          (e) => e instanceof RangeError && e.message === `backwardAsync: dOut: expected the output's shape [${B}, ${L}, ${E}], got [${B}, ${E}, ${L}]`);
        r2.release();
      } finally {
        layer.dispose();
      }
    });

    test('bad input rejects (never throws synchronously) with forward\'s error named forwardAsync', async () => {
      build.use();
      const layer = make();
      let promise;
      assert.doesNotThrow(() => { promise = layer.forwardAsync({ data: query.data, shape: [B, L, E + 1] }); });
      await assert.rejects(promise, (e) => e instanceof RangeError && /^forwardAsync: query: /.test(e.message) && e.message.includes(`${E + 1}`));
      await assert.rejects(layer.forwardAsync(query, key, { data: value.data.subarray(0, S * E), shape: [1, S, E] }),
        (e) => e instanceof RangeError && /^forwardAsync: value: expected shape \[B, S, vdim\]/.test(e.message));
      await assert.rejects(layer.forwardAsync(query, null, null, { nope: true }),
        (e) => e instanceof TypeError && /^forwardAsync: options: unknown/.test(e.message));
      // The layer still works after a rejection, and a disposed layer says so by the async call's name.
      assert.deepEqual((await layer.forwardAsync(query)).output.data, layer.forward(query).output.data);
      layer.dispose();
      await assert.rejects(layer.forwardAsync(query), (e) => e instanceof TypeError
        && e.message === 'MultiHeadAttention.forwardAsync: this layer was disposed');
    });
  });

  describe(`KerasMultiHeadAttention.callAsync on ${build.label}`, () => {
    test('resolves with call\'s result; bad input rejects named callAsync', async () => {
      build.use();
      const keras = new build.KerasMultiHeadAttention({ numHeads: 2, keyDim: 4, queryDim: E });
      try {
        keras.layer.initialize({ seed: 3 });
        const got = await keras.callAsync(query, value, null, { returnAttentionScores: true });
        const want = keras.call(query, value, null, { returnAttentionScores: true });
        assert.deepEqual(got.output, want.output);
        assert.deepEqual(got.scores, want.scores);
        assert.deepEqual(got.scores.shape, [B, 2, L, S]);
        await assert.rejects(keras.callAsync(query, { data: value.data, shape: [B, S, E + 1] }),
          (e) => e instanceof RangeError && /^callAsync: /.test(e.message));
      } finally {
        keras.dispose();
      }
    });
  });
}
