// The life of a forward result with grad: true, on every build: backward once, a checked dOut,
// release(), the layer's dispose() and loadStateDict() in between, grad with a cache, and the
// FinalizationRegistry that frees a forgotten result. Each test also checks the wasm heap: what
// forward kept is freed exactly once, whichever way the result ends. Each measured window is
// preceded by the same calls once on the same layer (warmedUp), so whatever a first call makes
// and keeps is made before the window opens, whenever it happens; a test of its own checks that
// the warm-up itself leaves nothing behind once the layer is disposed (docs/contributing.md).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const E = 8, H = 2, B = 2, L = 3;
const INDEX_URL = new URL('../../bindings/js/index.js', import.meta.url).href;

const stateDict = () => ({
  in_proj_weight: seededFloats(3 * E * E, 1), in_proj_bias: seededFloats(3 * E, 2),
  'out_proj.weight': seededFloats(E * E, 3), 'out_proj.bias': seededFloats(E, 4),
});
const x = { data: seededFloats(B * L * E, 5), shape: [B, L, E] };
const dOut = { data: seededFloats(B * L * E, 6), shape: [B, L, E] };

for (const build of builds) {
  const make = () => new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
  // A layer that has run forward with grad and backward once: the warm-up before a measured window.
  const warmedUp = () => {
    const layer = make();
    layer.forward(x, null, null, { grad: true }).backward(dOut);
    return layer;
  };

  describe(`backward's lifetime on ${build.label}`, () => {
    test('the warm-up (a layer, forward with grad, backward) leaves nothing behind after dispose()', () => {
      build.use();
      const heap = build.heapAllocatedBytes();
      warmedUp().dispose();
      assert.equal(build.heapAllocatedBytes(), heap);
    });

    test('backward works once; a second call is an Error that says so, and frees nothing twice', () => {
      build.use();
      const layer = warmedUp();
      const heap = build.heapAllocatedBytes();
      const r = layer.forward(x, null, null, { grad: true });
      assert.ok(build.heapAllocatedBytes() > heap, 'forward with grad keeps its saved state in wasm memory');
      const g = r.backward(dOut);
      assert.equal(build.heapAllocatedBytes(), heap, 'backward frees the saved state');
      assert.throws(() => r.backward(dOut), (e) => e instanceof Error && /^backward: /.test(e.message)
        && /once|already/.test(e.message));
      assert.equal(build.heapAllocatedBytes(), heap);
      // The first gradients are intact and the layer still works.
      assert.deepEqual(layer.forward(x, null, null, { grad: true }).backward(dOut), g);
      layer.dispose();
    });

    test('release() frees the saved state without backward; backward after it is an Error; release() again is a no-op', () => {
      build.use();
      const layer = warmedUp();
      const heap = build.heapAllocatedBytes();
      const r = layer.forward(x, null, null, { grad: true });
      r.release();
      assert.equal(build.heapAllocatedBytes(), heap);
      r.release();
      assert.equal(build.heapAllocatedBytes(), heap);
      assert.throws(() => r.backward(dOut), (e) => e instanceof Error && /^backward: /.test(e.message) && /release/.test(e.message));
      assert.equal(build.heapAllocatedBytes(), heap);
      layer.dispose();
    });

    test('release() after backward is a no-op', () => {
      build.use();
      const layer = warmedUp();
      const heap = build.heapAllocatedBytes();
      const r = layer.forward(x, null, null, { grad: true });
      const g = r.backward(dOut);
      r.release();
      r.release();
      assert.equal(build.heapAllocatedBytes(), heap);
      assert.ok(g.query.data.some((v) => v !== 0), 'the gradients stay with the caller');
      layer.dispose();
    });

    test('a wrong dOut is refused before anything runs; the result then still works', () => {
      build.use();
      const layer = warmedUp();
      const r = layer.forward(x, null, null, { grad: true });
      const heap = build.heapAllocatedBytes();
      // Data shorter than its shape, a shape that is not the output's, the wrong array kind, no tensor.
      assert.throws(() => r.backward({ data: dOut.data.subarray(1), shape: [B, L, E] }), RangeError);
      assert.throws(() => r.backward({ data: dOut.data, shape: [B, E, L] }),
        (e) => e instanceof RangeError && /^backward: /.test(e.message) && e.message.includes(`[${B}, ${L}, ${E}]`));
      assert.throws(() => r.backward({ data: Float64Array.from(dOut.data), shape: [B, L, E] }), TypeError);
      assert.throws(() => r.backward(dOut.data), TypeError);
      assert.throws(() => r.backward(), TypeError);
      assert.equal(build.heapAllocatedBytes(), heap);
      const g = r.backward(dOut);
      assert.deepEqual(g, layer.forward(x, null, null, { grad: true }).backward(dOut));
      layer.dispose();
    });

    test('backward after the layer\'s dispose() is an Error; nothing is left behind', () => {
      build.use();
      const heap = build.heapAllocatedBytes();
      const layer = make();
      const results = [0, 1, 2].map(() => layer.forward(x, null, null, { grad: true }));
      layer.dispose();
      for (const r of results) {
        assert.throws(() => r.backward(dOut), (e) => e instanceof Error && /^backward: /.test(e.message) && /dispose/.test(e.message));
      }
      results[0].release();  // harmless
      assert.equal(build.heapAllocatedBytes(), heap);
    });

    test('loadStateDict between forward and backward: backward is an Error (the weights it would differentiate are gone)', () => {
      build.use();
      const layer = warmedUp();
      const heap = build.heapAllocatedBytes();
      const r = layer.forward(x, null, null, { grad: true });
      const saved = build.heapAllocatedBytes() - heap;
      layer.loadStateDict(stateDict());
      assert.throws(() => r.backward(dOut), (e) => e instanceof Error && /^backward: /.test(e.message) && /loadStateDict|weights/.test(e.message));
      r.release();
      layer.forward(x);  // a successful call drops the handle's record of the last error message
      // The saved state is gone; what remains is the repacked weights' placement (it moves by a few bytes).
      assert.ok(Math.abs(build.heapAllocatedBytes() - heap) <= 32, `${build.heapAllocatedBytes() - heap} bytes more (saved state ${saved})`);
      layer.dispose();
    });

    test('grad: true with a cache is a TypeError that says why; without grad there is no backward', () => {
      build.use();
      const layer = warmedUp();
      const cache = layer.createCache({ capacity: 8 });
      const refused = () => layer.forward({ data: x.data.subarray(0, E), shape: [1, 1, E] }, null, null, { cache, grad: true });
      assert.throws(refused, TypeError);  // (the warm-up of the measured call below)
      const heap = build.heapAllocatedBytes();
      assert.throws(refused, (e) => e instanceof TypeError && /cache/.test(e.message) && /whole sequence|training/.test(e.message));
      assert.equal(build.heapAllocatedBytes(), heap);
      for (const options of [{}, { grad: false }]) {
        const r = layer.forward(x, null, null, options);
        assert.equal(r.backward, undefined);
        assert.equal(r.release, undefined);
      }
      layer.dispose();
    });

    test('two results of one layer are independent', () => {
      build.use();
      const layer = warmedUp();
      const heap = build.heapAllocatedBytes();
      const a = layer.forward(x, null, null, { grad: true });
      const y = { data: seededFloats(B * L * E, 7), shape: [B, L, E] };
      const b = layer.forward(y, null, null, { grad: true });
      const gb = b.backward(dOut);
      const ga = a.backward(dOut);
      assert.notDeepEqual(ga.query.data, gb.query.data);
      assert.deepEqual(ga, layer.forward(x, null, null, { grad: true }).backward(dOut));
      assert.equal(build.heapAllocatedBytes(), heap);
      layer.dispose();
    });
  });
}

// Garbage collection needs --expose-gc, so this part runs in a child process.
const CHILD = `
import { init } from ${JSON.stringify(INDEX_URL)};
const mha = await init({ threads: 1 });
const warnings = [];
console.warn = (...args) => warnings.push(args.join(' '));
const E = 16, x = { data: new Float32Array(2 * 5 * E).fill(0.25), shape: [2, 5, E] };
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: 4 }).initialize({ seed: 1 });
layer.forward(x, null, null, { grad: true }).release();
const before = mha.heapAllocatedBytes();
(() => { for (let i = 0; i < 50; i++) layer.forward(x, null, null, { grad: true }); })();
const leaked = mha.heapAllocatedBytes();
for (let round = 0; round < 50 && mha.heapAllocatedBytes() !== before; round++) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, 10));
}
console.log(JSON.stringify({ before, leaked, after: mha.heapAllocatedBytes(), warnings }));
`;

test('results collected without backward or release() are freed, with one warning in all', () => {
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { encoding: 'utf8' });
  const { before, leaked, after, warnings } = JSON.parse(out.trim().split('\n').pop());
  assert.ok(leaked > before, 'the results held wasm memory');
  assert.equal(after, before, 'the registry freed every collected result');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /^mha-wasm: .*garbage-collected.*release\(\)/);
});
