// Runs the bad-input table (bad-inputs.table.js) on every wasm build: each row throws exactly its
// error, and after it the module still works and holds no more wasm memory than before.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { E, H, ROWS, stateDict, x } from './bad-inputs.table.js';
import { MARKDOWN_URL, renderBadInputs } from './bad-inputs.render.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const probe = x(2, 3);
probe.data.forEach((_, i) => { probe.data[i] = Math.sin(i); });

// The limit in a memory message depends on the build (4 GiB by default), and so does the attention
// kernels' scratch (vector width, threads; the table gives mha-simd's); the rest must match.
const withoutLimit = (message) => message
  .replace(/more than the [\d.]+ GiB this build/, 'more than the N GiB this build')
  .replace(/attention scratch [\d.]+ (bytes|KiB|MiB|GiB)/, 'attention scratch N');

test(`the table has at least 40 rows (${ROWS.length})`, () => assert.ok(ROWS.length >= 40));

test('docs/bad-inputs.md is rendered from the table (run: node tests/js/bad-inputs.render.js)', () => {
  assert.equal(readFileSync(MARKDOWN_URL, 'utf8'), renderBadInputs());
});

for (const build of builds) {
  describe(`bad-input table on ${build.label}`, () => {
    build.use();
    const heapAtStart = build.heapAllocatedBytes();
    const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
    const expected = layer.forward(probe, null, null, { needWeights: true }).output.data;

    /** Runs one row's call; returns what it threw (undefined if nothing). Layers it made are disposed. */
    const runRow = (row) => {
      const made = [];
      const kit = {
        layer,
        make: (config) => { const l = new build.MultiHeadAttention(config); made.push(l); return l; },
        makeKeras: (config) => { const l = new build.KerasMultiHeadAttention(config); made.push(l); return l; },
        makeLinear: (config) => { const l = new build.Linear(config); made.push(l); return l; },
        linear: build.linear,
        linearBackward: build.linearBackward,
        scaledDotProductAttention: build.scaledDotProductAttention,
      };
      try {
        row.call(kit);
        return undefined;
      } catch (error) {
        return error;
      } finally {
        for (const l of made) l.dispose();
      }
    };
    const stillWorks = () => assert.deepEqual(layer.forward(probe, null, null, { needWeights: true }).output.data, expected);

    for (const row of ROWS) {
      test(row.input, () => {
        // The warm-up: the same call once, so the window below holds only what this call itself
        // keeps (docs/contributing.md); the last test checks the warm-ups leave nothing behind.
        runRow(row);
        stillWorks();
        const heapBefore = build.heapAllocatedBytes(), memoryBefore = build.memoryBytes();
        const error = runRow(row);
        assert.ok(error, 'the call throws');
        assert.equal(error.constructor, row.error, `${error.constructor.name}: ${error.message}`);
        if (row.limitDependent) assert.equal(withoutLimit(error.message), withoutLimit(row.message));
        else assert.equal(error.message, row.message);
        // Still works, with the same numbers; nothing lost, nothing grown.
        stillWorks();
        assert.equal(build.heapAllocatedBytes(), heapBefore);
        assert.equal(build.memoryBytes(), memoryBefore);
      });
    }

    test('the rows\' warm-ups leave nothing behind: once the shared layer is disposed, the heap is as before it', () => {
      layer.dispose();
      assert.equal(build.heapAllocatedBytes(), heapAtStart);
    });
  });
}
