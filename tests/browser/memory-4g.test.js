// The whole 4 GiB in Chromium, on the SIMD build and the threads build (shared memory): as
// tests/js/memory-4g.test.js in Node, a filler taken through the module's malloc pushes the
// layer's weights, inputs, cache, results and gradients above 2^31; every result equals the
// same calls at low addresses, and equals Node's result of the same build on the same kernel
// variants, bit for bit.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { loadBuild } from '../../tools/load-wasm-build.mjs';
import { startDemo } from './browser.js';

/** Runs in the page (and in Node): the calls, at low addresses and then above 2 GiB. */
async function lowAndHigh(name, module, MultiHeadAttention) {
  const E = 64, H = 4, B = 2, L = 24;
  const floats = (n, seed) => {
    let s = seed >>> 0;
    return Float32Array.from({ length: n }, () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 0.4);
  };
  const run = () => {
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: 2 });
    layer.loadStateDict(Object.fromEntries(Object.entries(layer.stateDictShapes())
      .map(([key, shape], i) => [key, floats(shape.reduce((a, b) => a * b, 1), i + 1)])));
    const x = { data: floats(B * L * E, 9), shape: [B, L, E] };
    const full = layer.forward(x, null, null, { causal: true, needWeights: true });
    const cache = layer.createCache({ batch: B, capacity: L });
    const steps = [];
    for (let i = 0; i < L; i++) {
      const row = new Float32Array(B * E);
      for (let b = 0; b < B; b++) row.set(x.data.subarray((b * L + i) * E, (b * L + i + 1) * E), b * E);
      steps.push(...layer.forward({ data: row, shape: [B, 1, E] }, null, null, { cache }).output.data);
    }
    const t = layer.forward(x, null, null, { grad: true, causal: true });
    const g = t.backward({ data: floats(B * L * E, 10), shape: [B, L, E] });
    layer.dispose();
    return [...full.output.data, ...full.weights.data, ...steps, ...g.query.data, ...g.params.q_proj_weight];
  };
  const low = run();
  const held = [module._malloc(2 ** 30) >>> 0, module._malloc(2 ** 30) >>> 0];
  for (const size of [2 ** 20, 2 ** 16, 2 ** 12, 2 ** 8, 8]) {
    for (;;) {
      const p = module._malloc(size) >>> 0;
      if (p === 0 || p >= 2 ** 31) { if (p) module._free(p); break; }
      held.push(p);
    }
  }
  const seen = [];
  const malloc = module._malloc;
  module._malloc = (n) => { const p = malloc(n); seen.push(p >>> 0); return p; };
  const high = run();
  module._malloc = malloc;
  const memoryBytes = (module.wasmMemory?.buffer ?? module.HEAP8.buffer).byteLength;
  for (const p of held) module._free(p);
  return { name, low, high, memoryBytes, lowestPointer: Math.min(...seen), pointers: seen.length };
}

let demo;
before(async () => {
  demo = await startDemo();
  await demo.page.evaluate(`window.lowAndHigh = ${lowAndHigh.toString()}`);  // the same function as in Node
});
after(async () => { await demo?.close(); });

for (const name of ['mha-simd', 'mha-simd-threads']) {
  test(`${name} in Chromium: inputs, weights, cache and results above 2 GiB`, async () => {
    const got = await demo.page.evaluate(async (buildName) => {
      const threads = buildName.endsWith('-threads');
      const { default: create } = await import(`/dist/${buildName}.mjs`);
      const args = { locateFile: (path) => `/dist/${path}` };
      if (threads) {
        const { workerScriptUrl } = await import('/bindings/js/platform.browser.js');
        const worker = await workerScriptUrl(new URL(`/dist/${buildName}.worker.js`, location.href), () => {});
        args.locateFile = (path) => (path.endsWith('.worker.js') ? worker.href : `/dist/${path}`);
        args.mainScriptUrlOrBlob = new URL(`/dist/${buildName}.mjs`, location.href).href;
      }
      const module = await create(args);
      if (threads) module.setNumThreads(2);
      const { defineMultiHeadAttention } = await import('/bindings/js/core/layer.js');
      const kernels = Object.entries(JSON.parse(module.kernelChoice())).map(([kernel, { variant }]) => `${kernel}=${variant}`).join(',');
      return { ...(await window.lowAndHigh(buildName, module, defineMultiHeadAttention(module))), kernels };
    }, name);
    assert.ok(got.memoryBytes > 2 ** 31, `memory ${got.memoryBytes}`);
    assert.ok(got.pointers > 10 && got.lowestPointer >= 2 ** 31, `lowest of ${got.pointers} pointers: ${got.lowestPointer}`);
    assert.deepEqual(got.high, got.low, 'above 2 GiB = at low addresses');
    const { module, MultiHeadAttention } = await loadBuild(name);
    module.setNumThreads?.(2);
    // The kernel variants Chromium's calibration picked: each process calibrates on its own, and
    // the flash and exp variants round apart (docs/performance.md#the-flash-attention-and-exp-variants).
    assert.equal(module.forceKernels(got.kernels, false), '', `Node takes Chromium's kernels ${got.kernels}`);
    const node = await lowAndHigh(name, module, MultiHeadAttention);
    assert.deepEqual(got.high, node.high, 'Chromium = Node');
  });
}
