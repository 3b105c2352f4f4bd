// Quantized weights above 2 GiB, on every build: layers with weightDtype int8 / q4 / f16
// (loadStateDict quantizes) and a layer given int8 and q4 panels directly (loadQuantized: codes,
// scales and zero points copied in by the wrapper, their addresses passed as numbers) are loaded,
// run and decoded after the filler of memory-4g-filler.js; every pointer the JS side saw is above
// 2^31 and every result equals the same calls at low addresses, bit for bit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { below2GiB, recordPointers, takeLowMemory, TWO_GIB } from './memory-4g-filler.js';
import { seededFloats } from './seeded.js';

const E = 96, H = 4, KV = 2, B = 2, L = 12;  // (E 96: a q4 row of 3 blocks)

/** Canonical quantized panels of a [rows, cols] projection with seeded codes (docs/quantized.md). */
function panels(dtype, rows, cols, seed) {
  const blocks = Math.ceil(cols / 32);
  const codes = (n, Kind) => Kind.from(seededFloats(n, seed, 1), (x) => (Kind === Int8Array ? Math.round(x * 127) : Math.floor((x + 1) * 128)));
  const scales = (n) => seededFloats(n, seed + 1, 0.01).map(Math.abs);
  return dtype === 'int8'
    ? { dtype, data: codes(rows * cols, Int8Array), scales: scales(rows) }
    : { dtype, data: codes(rows * blocks * 16, Uint8Array), scales: scales(rows * blocks), zeroPoints: codes(rows * Math.ceil(blocks / 2), Uint8Array) };
}

function run(MultiHeadAttention) {
  const results = {};
  const x = { data: seededFloats(B * L * E, 31, 1.0), shape: [B, L, E] };
  const exercise = (layer) => {
    const full = layer.forward(x, null, null, { causal: true, needWeights: true });
    const cache = layer.createCache({ batch: B, capacity: L + 1 });
    layer.forward(x, null, null, { cache });
    const step = layer.forward({ data: x.data.subarray(0, B * E), shape: [B, 1, E] }, null, null, { cache });
    return { output: full.output.data, weights: full.weights.data, step: step.output.data, stateDict: layer.stateDict() };
  };
  for (const weightDtype of ['int8', 'q4', 'f16']) {
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: KV, weightDtype });
    const sd = Object.fromEntries(Object.entries(layer.stateDictShapes())
      .map(([key, shape], i) => [key, seededFloats(shape.reduce((a, b) => a * b, 1), 40 + i, 0.2)]));
    results[weightDtype] = exercise(layer.loadStateDict(sd));
    layer.dispose();
  }
  for (const dtype of ['int8', 'q4']) {
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: KV });
    const weights = Object.fromEntries(Object.entries(layer.stateDictShapes()).map(([key, shape], i) => [key,
      shape.length === 2 ? panels(dtype, shape[0], shape[1], 50 + i) : seededFloats(shape[0], 60 + i, 0.1)]));
    results[`loadQuantized ${dtype}`] = exercise(layer.loadQuantized(weights));
    layer.dispose();
  }
  return results;
}

// (The relaxed-SIMD builds differ from these only in their multiply-add: not in how they address.)
for (const name of BUILDS.filter((build) => !build.includes('relaxed'))) {
  describe(`quantized weights above 2 GiB on ${name}`, () => {
    let build, supported, low, high, pointers, held;
    before(async () => {
      build = await loadBuild(name);
      build.module.setNumThreads?.(2);
      try {  // (a build without quantized weights: the tests are skipped)
        new build.MultiHeadAttention({ embedDim: 8, numHeads: 2, weightDtype: 'int8' }).dispose();
        supported = typeof build.module.LayerHandle.prototype.loadQuantized === 'function';
      } catch {
        supported = false;
      }
      if (!supported) return;
      low = run(build.MultiHeadAttention);
      held = takeLowMemory(build.module);
      pointers = recordPointers(build.module);
      high = run(build.MultiHeadAttention);
    });
    after(() => {
      for (const p of held ?? []) build.module._free(p);
    });

    test('every pointer the JS side saw is above 2^31', (t) => {
      if (!supported) return t.skip('this build has no quantized weights');
      assert.ok(pointers.length > 40, `${pointers.length} pointers seen`);
      assert.ok(pointers.some((p) => p >= TWO_GIB));
      assert.deepEqual(below2GiB(pointers), [], 'pointers below 2^31 (or not unsigned)');
    });

    test('int8, q4, f16 and loadQuantized layers give the same results as at low addresses, bit for bit', (t) => {
      if (!supported) return t.skip('this build has no quantized weights');
      for (const kind of Object.keys(low)) assert.deepEqual(high[kind], low[kind], kind);
    });
  });
}
