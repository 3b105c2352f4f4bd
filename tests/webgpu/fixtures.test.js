// Every PyTorch fixture (tests/fixtures) through forwardAsync on WebGPU, within the wasm path's
// tolerance (|ours - torch| <= 1e-5 + 1e-4 |torch|), on a device with subgroups and one without.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { caseOptions, layerConfig, loadFixtures, worstError } from '../js/fixtures.js';
import { ADAPTERS, adapterName, modules } from './devices.js';

const { tolerance, cases } = loadFixtures();
let largest = 0;

for (const [label, mha] of await modules()) {
  describe(`WebGPU parity with torch.nn.MultiheadAttention (${label})`, () => {
    test('the module says what it runs on', () => {
      assert.equal(mha.backend, 'webgpu');
      assert.ok(ADAPTERS[adapterName].is(mha.adapterInfo), `${JSON.stringify(mha.adapterInfo)}: ${adapterName}`);
      assert.equal(mha.adapterInfo.isFallbackAdapter, true);
      assert.equal(mha.features.includes('subgroups'), !label.includes('without'));
      assert.equal(mha.features.includes('shader-f16'), !label.includes('without') && ADAPTERS[adapterName].shaderF16);
    });

    for (const c of cases) {
      test(c.name, async () => {
        const layer = new mha.MultiHeadAttention(layerConfig(c));
        try {
          assert.equal(layer.backend, 'webgpu');
          layer.loadStateDict(c.stateDict);
          const t = c.tensors;
          const { output, weights } = await layer.forwardAsync(t.query, t.key ?? null, t.value ?? null, caseOptions(c));
          assert.deepEqual(output.shape, t.output.shape);
          assert.ok(output.data instanceof Float32Array);
          const e = worstError(output.data, t.output.data, tolerance);
          largest = Math.max(largest, e.absolute);
          assert.ok(e.ratio <= 1, `output[${e.index}] off by ${e.absolute}`);
          if (c.options.needWeights) {
            assert.deepEqual(weights.shape, t.weights.shape);
            const w = worstError(weights.data, t.weights.data, tolerance);
            largest = Math.max(largest, w.absolute);
            assert.ok(w.ratio <= 1, `weights[${w.index}] off by ${w.absolute}`);
          } else {
            assert.equal(weights, null);
          }
        } finally {
          layer.dispose();
        }
      });
    }
  });
}

after(() => console.log(`# WebGPU: largest absolute error over all fixtures: ${largest.toExponential(3)}`));
