// Float16Array inputs in Chromium (which has Float16Array; Node 20 has none): a call on
// Float16Array tensors is computed in float32 and returns Float16Array results, equal to the same
// call on the inputs widened to Float32Array with its results rounded to half, and within half
// precision of PyTorch's fixtures; float masks may be Float16Array; mixed dtypes and the options
// that cannot take half results are refused by name. On wasm and on WebGPU (SwiftShader).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { caseOptions, layerConfig, loadFixtures } from '../js/fixtures.js';
import { openServedPage } from './browser.js';

const NAMES = ['self_weights_per_head', 'kdim_vdim', 'attn_float_3d'];
const { cases } = loadFixtures();
const chosen = cases.filter((c) => NAMES.includes(c.name));

let served, page;
before(async () => {
  served = await openServedPage();
  ({ page } = served);
});
after(() => served?.close());

const plain = (t) => t && { data: Array.from(t.data), shape: t.shape, kind: t.data.constructor.name };

/** Runs each case in the page on `backend`, with half inputs and with their float32 widening. */
function runInPage(backend) {
  const input = chosen.map((c) => ({
    name: c.name, config: layerConfig(c), stateDict: Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, Array.from(v)])),
    query: plain(c.tensors.query), key: plain(c.tensors.key), value: plain(c.tensors.value),
    options: Object.fromEntries(Object.entries(caseOptions(c)).map(([k, v]) => [k, v?.data ? plain(v) : v])),
  }));
  return page.evaluate(async ({ input, backend }) => {
    const { init } = await import('/bindings/js/index.js');
    const mha = await init({ backend });
    const run = (layer, ...args) => (backend === 'webgpu' ? layer.forwardAsync(...args) : layer.forward(...args));
    const half = (t) => t && { data: Float16Array.from(t.data), shape: t.shape };
    const widened = (t) => t && { data: Float32Array.from(Float16Array.from(t.data)), shape: t.shape };
    const typed = (t, as) => (t?.kind === 'Float32Array' ? as(t) : t && { data: new globalThis[t.kind](t.data), shape: t.shape });
    const results = [];
    for (const c of input) {
      const layer = new mha.MultiHeadAttention(c.config);
      layer.loadStateDict(Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, new Float32Array(v)])));
      const options = (as) => ({ ...Object.fromEntries(Object.entries(c.options).map(([k, v]) => [k, v?.kind ? typed(v, as) : v])),
        needWeights: true, capture: ['pattern'] });
      const h = await run(layer, half(c.query), half(c.key), half(c.value), options(half));
      const f = await run(layer, widened(c.query), widened(c.key), widened(c.value), options(widened));
      results.push({
        kinds: [h.output.data.constructor.name, h.weights.data.constructor.name, h.captured.pattern.data.constructor.name],
        output: Array.from(h.output.data), weights: Array.from(h.weights.data), pattern: Array.from(h.captured.pattern.data),
        expected: {
          output: Array.from(Float16Array.from(f.output.data)), weights: Array.from(Float16Array.from(f.weights.data)),
          pattern: Array.from(Float16Array.from(f.captured.pattern.data)),
        },
        shape: h.output.shape,
      });
      layer.dispose();
    }
    const layer = new mha.MultiHeadAttention({ embedDim: 4, numHeads: 2 }).initialize({ seed: 1 });
    const errors = [];
    for (const [query, key, value, options] of [
      [half({ data: [1, 2, 3, 4], shape: [1, 1, 4] }), { data: new Float32Array(4), shape: [1, 1, 4] }, half({ data: [0, 0, 0, 0], shape: [1, 1, 4] }), {}],
      [half({ data: [1, 2, 3, 4], shape: [1, 1, 4] }), null, null, { grad: true }],
      [half({ data: [1, 2, 3, 4], shape: [1, 1, 4] }), null, null, { out: new Float32Array(4) }],
    ]) {
      try {
        await run(layer, query, key, value, options);
        errors.push(null);
      } catch (error) {
        errors.push(`${error.name}: ${error.message}`);
      }
    }
    layer.dispose();
    return { results, errors };
  }, { input, backend });
}

for (const backend of ['wasm', 'webgpu']) {
  test(`Float16Array inputs on ${backend}: Float16Array results, the float32 call's rounded to half, near PyTorch's`, async () => {
    const { results, errors } = await runInPage(backend);
    const call = backend === 'webgpu' ? 'forwardAsync' : 'forward';
    chosen.forEach((c, n) => {
      const r = results[n];
      assert.deepEqual(r.kinds, ['Float16Array', 'Float16Array', 'Float16Array'], c.name);
      assert.deepEqual(r.shape, c.tensors.output.shape, c.name);
      for (const what of ['output', 'weights', 'pattern']) assert.deepEqual(r[what], r.expected[what], `${c.name}: ${what}`);
      // Half inputs and results: PyTorch's float32 output within half precision (2^-8 relative, plus the inputs' rounding).
      const want = c.tensors.output.data;
      r.output.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 2e-2 * (1 + Math.abs(want[i])), `${c.name}: output[${i}] ${x} vs ${want[i]}`));
    });
    assert.deepEqual(errors, [
      `TypeError: ${call}: key.data must be a Float16Array like the query's (one dtype per call), got Float32Array`,
      `TypeError: ${call}: grad: not with Float16Array inputs (they are computed in float32 and the results returned as Float16Array); pass Float32Array inputs for this option`,
      `TypeError: ${call}: out: not with Float16Array inputs (they are computed in float32 and the results returned as Float16Array); pass Float32Array inputs for this option`,
    ]);
  });
}
