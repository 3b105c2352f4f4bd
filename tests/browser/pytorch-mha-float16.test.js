// PyTorch's test_multihead_attention_dtype[float16] and test_multihead_attention_dtype_batch_first
// [float16] (test/nn/test_multihead_attention.py), ported to Chromium, which has Float16Array
// (Node 20 has none: tests/js/pytorch-mha.test.js lists them as run here). PyTorch's configuration
// with half weights and inputs, called with Float16Array query, key and value: the results must
// be Float16Arrays of the query's shape (PyTorch's own checks: out.size() and out.dtype) and,
// computed in float32, within one half rounding of the fixtures' numbers (torch's float32 call on
// the same half values, rounded to half: tools/make_pytorch_mha_fixtures.py, float16_cases). On
// wasm and on WebGPU (SwiftShader), as the rest of PyTorch's port (tests/webgpu/pytorch-mha.test.js).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { worstError } from '../js/fixtures.js';
import { casesOf, tensor, tensors } from '../js/pytorch-mha-fixtures.js';
import { openServedPage } from './browser.js';

// One rounding to half: 2^-10 of the value (its last bit), or 2^-14 near zero (half's smallest normal).
const HALF = { absolute: 2 ** -14, relative: 2 ** -10 };

let served, page;
before(async () => {
  served = await openServedPage();
  ({ page } = served);
});
after(() => served?.close());

const plain = (t) => t && { data: Array.from(t.data), shape: t.shape };

const CASES = casesOf('test/nn/test_multihead_attention.py, float16 (Chromium)');

test('the fixtures hold both float16 cases', () => {
  assert.deepEqual(CASES.map((c) => c.name),
    ['test_multihead_attention_dtype[float16]', 'test_multihead_attention_dtype_batch_first[float16]']);
});

for (const backend of ['wasm', 'webgpu']) {
  for (const c of CASES) {
    test(`${c.name} (${backend})`, async () => {
      assert.equal(c.draws.length, 1);
      const [draw] = c.draws;
      const t = tensors(draw.tensors);
      const input = {
        config: draw.config, options: draw.options,
        stateDict: Object.fromEntries(Object.entries(draw.stateDict).map(([k, v]) => [k, Array.from(tensor(v).data)])),
        query: plain(t.query), key: plain(t.key), value: plain(t.value), backend,
      };
      const got = await page.evaluate(async ({ config, options, stateDict, query, key, value, backend }) => {
        const { init } = await import('/bindings/js/index.js');
        const mha = await init({ backend });
        // The half model's weights: Float32Arrays of half values (the layer keeps float32 weights).
        const layer = new mha.MultiHeadAttention(config);
        layer.loadStateDict(Object.fromEntries(Object.entries(stateDict).map(([k, v]) => [k, Float32Array.from(Float16Array.from(v))])));
        const half = (x) => ({ data: Float16Array.from(x.data), shape: x.shape });
        const r = await (backend === 'webgpu' ? layer.forwardAsync : layer.forward).call(layer, half(query), half(key), half(value), options);
        layer.dispose();
        const out = (x) => x && { kind: x.data.constructor.name, data: Array.from(x.data), shape: x.shape };
        return { output: out(r.output), weights: out(r.weights) };
      }, input);

      const expected = tensors(draw.expected);
      assert.equal(got.output.kind, 'Float16Array', 'the output is a Float16Array, as torch returns half for half');
      assert.deepEqual(got.output.shape, t.query.shape, "the output has the query's shape (PyTorch's check)");
      const e = worstError(got.output.data, expected.output.data, HALF);
      assert.ok(e.ratio <= 1, `output[${e.index}] = ${got.output.data[e.index]}, torch ${expected.output.data[e.index]}`);
      if (draw.options.needWeights) {
        assert.equal(got.weights.kind, 'Float16Array');
        assert.deepEqual(got.weights.shape, expected.weights.shape);
        const w = worstError(got.weights.data, expected.weights.data, HALF);
        assert.ok(w.ratio <= 1, `weights[${w.index}] = ${got.weights.data[w.index]}, torch ${expected.weights.data[w.index]}`);
      } else {
        assert.equal(got.weights, null);
      }
    });
  }
}
