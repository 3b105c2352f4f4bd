// forward(..., { out, weightsOut }): results written into the caller's own Float32Arrays, on
// every build: the same numbers as fresh arrays, the same array objects handed back, nothing
// allocated per call, and a wrong buffer refused before anything runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const E = 16, H = 4, B = 2, L = 5, S = 7;

for (const build of builds) {
  describe(`caller-owned outputs on ${build.label}`, () => {
    const setup = () => {
      build.use();
      const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H });
      const sd = {};
      let seed = 1;
      for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
        sd[key] = seededFloats(shape.reduce((a, b) => a * b, 1), seed++, 0.3);
      }
      layer.loadStateDict(sd);
      const q = { data: seededFloats(B * L * E, 11), shape: [B, L, E] };
      const kv = { data: seededFloats(B * S * E, 12), shape: [B, S, E] };
      return { layer, q, kv };
    };

    test('equal the fresh results and are the very arrays passed in', () => {
      const { layer, q, kv } = setup();
      const options = { causal: true, needWeights: true, averageWeights: false };
      const fresh = layer.forward(q, kv, kv, options);
      const out = new Float32Array(B * L * E).fill(NaN), weightsOut = new Float32Array(B * H * L * S).fill(NaN);
      const mine = layer.forward(q, kv, kv, { ...options, out, weightsOut });
      assert.equal(mine.output.data, out);
      assert.equal(mine.weights.data, weightsOut);
      assert.deepEqual(mine.output.shape, [B, L, E]);
      assert.deepEqual(mine.weights.shape, [B, H, L, S]);
      assert.deepEqual(out, fresh.output.data);
      assert.deepEqual(weightsOut, fresh.weights.data);
      layer.dispose();
    });

    test('a loop reusing its buffers keeps the heap flat', () => {
      const { layer, q } = setup();
      const out = new Float32Array(B * L * E);
      layer.forward(q, null, null, { out });
      const before = build.heapAllocatedBytes();
      for (let i = 0; i < 200; i++) layer.forward(q, null, null, { out });
      assert.equal(build.heapAllocatedBytes(), before);
      layer.dispose();
    });

    test('a wrong buffer is refused before the call runs and leaves the buffer untouched', () => {
      const { layer, q } = setup();
      const short = new Float32Array(B * L * E - 1).fill(7);
      assert.throws(() => layer.forward(q, null, null, { out: short }),
        { name: 'RangeError', message: `forward: out: expected a Float32Array of ${B * L * E} floats for shape [${B}, ${L}, ${E}], got ${B * L * E - 1}` });
      assert.ok(short.every((x) => x === 7));
      assert.throws(() => layer.forward(q, null, null, { out: new Float64Array(B * L * E) }),
        { name: 'TypeError', message: 'forward: out must be a Float32Array, got a Float64Array' });
      layer.dispose();
    });
  });
}
