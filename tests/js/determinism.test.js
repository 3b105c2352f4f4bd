// Determinism: the same input gives bit-identical output on every run of the same build (and,
// for the threaded build, the same thread count), whatever ran in between. Checked on every build.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats as filled } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [1, 2, 3] });
const E = 48, H = 6;

const stateDict = () => ({
  in_proj_weight: filled(3 * E * E, 1), in_proj_bias: filled(3 * E, 2), 'out_proj.weight': filled(E * E, 3),
  'out_proj.bias': filled(E, 4),
});
const query = { data: filled(3 * 37 * E, 5), shape: [3, 37, E] };
const key = { data: filled(3 * 53 * E, 6), shape: [3, 53, E] };
const value = { data: filled(3 * 53 * E, 7), shape: [3, 53, E] };
const mask = { data: Uint8Array.from({ length: 3 * 53 }, (_, i) => (i % 7 === 3 ? 1 : 0)), shape: [3, 53] };
const options = { keyPaddingMask: mask, needWeights: true, averageWeights: false };

/** The result's bytes, so -0 vs 0 and NaN payloads would count as differences too. */
const bytes = ({ output, weights }) => [new Uint8Array(output.data.buffer), new Uint8Array(weights.data.buffer)];

for (const build of builds) {
  test(`${build.label}: forward is bit-identical across runs, layers and interleaved calls`, () => {
    build.use();
    const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
    const first = bytes(layer.forward(query, key, value, options));
    const other = new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
    for (let run = 0; run < 20; run++) {
      // Something else in between: other shapes, self-attention, causal, an error.
      layer.forward({ data: filled((run + 1) * E, run), shape: [run + 1, E] }, null, null, { causal: true });
      assert.throws(() => layer.forward({ data: filled(E, 0), shape: [1, 1, E + 1] }), RangeError);
      assert.deepEqual(bytes(layer.forward(query, key, value, options)), first, `run ${run}`);
      assert.deepEqual(bytes(other.forward(query, key, value, options)), first, `second layer, run ${run}`);
    }
    layer.dispose();
    other.dispose();
  });
}
