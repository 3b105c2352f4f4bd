// Every wasm build in dist/ (SIMD, scalar, SIMD + threads, and the two relaxed-SIMD ones)
// matches PyTorch on every fixture, and the threads build's thread control works and does not change results.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';

const { tolerance, cases } = loadFixtures();

function checkAllFixtures(MultiHeadAttention) {
  for (const c of cases) {
    const layer = new MultiHeadAttention(layerConfig(c));
    try {
      layer.loadStateDict(c.stateDict);
      const { output, weights } = runCase(layer, c);
      const e = worstError(output.data, c.tensors.output.data, tolerance);
      assert.ok(e.ratio <= 1, `${c.name}: output[${e.index}] off by ${e.absolute}`);
      if (c.options.needWeights) {
        const w = worstError(weights.data, c.tensors.weights.data, tolerance);
        assert.ok(w.ratio <= 1, `${c.name}: weights[${w.index}] off by ${w.absolute}`);
      }
    } finally {
      layer.dispose();
    }
  }
}

for (const name of BUILDS) {
  describe(`build ${name}`, async () => {
    const { module, MultiHeadAttention } = await loadBuild(name);

    test('matches PyTorch on all fixtures', () => checkAllFixtures(MultiHeadAttention));

    test('results are plain Float32Arrays the caller owns, never views of (shared) wasm memory', () => {
      const layer = new MultiHeadAttention({ embedDim: 4, numHeads: 2 });
      try {
        const shapes = layer.stateDictShapes();
        layer.loadStateDict(Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, new Float32Array(s[0] * (s[1] ?? 1)).fill(0.5)])));
        const { output, weights } = layer.forward({ data: new Float32Array(12).fill(1), shape: [3, 4] }, null, null, { needWeights: true });
        for (const { data } of [output, weights]) {
          assert.equal(data.constructor, Float32Array);
          assert.equal(Object.prototype.toString.call(data.buffer), '[object ArrayBuffer]');
          assert.equal(data.byteOffset, 0);
          assert.equal(data.buffer.byteLength, data.byteLength);
        }
        assert.deepEqual(Array.from(output.data), Array(12).fill(0.5 * 4 * (0.5 * 4 + 0.5) + 0.5));
      } finally {
        layer.dispose();
      }
    });

    test(name.endsWith('-threads') ? 'exports setNumThreads/numThreads' : 'has no thread control', () => {
      const threaded = name.endsWith('-threads');
      assert.equal(typeof module.setNumThreads, threaded ? 'function' : 'undefined');
      assert.equal(typeof module.numThreads, threaded ? 'function' : 'undefined');
    });

    if (name.endsWith('-threads')) {
      test('defaults to one thread per core; 1 and 3 threads give the same results', () => {
        assert.ok(module.numThreads() >= 1);
        assert.equal(module.setNumThreads(3), 3);
        assert.equal(module.numThreads(), 3);
        checkAllFixtures(MultiHeadAttention);
        const E = 64, L = 200;
        const layer = new MultiHeadAttention({ embedDim: E, numHeads: 4 });
        const state = {};
        let seed = 1;
        const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647) - 0.5;
        for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
          state[key] = Float32Array.from({ length: shape.reduce((a, b) => a * b) }, random);
        }
        layer.loadStateDict(state);
        const x = { data: Float32Array.from({ length: 2 * L * E }, random), shape: [2, L, E] };
        const three = layer.forward(x, null, null, { causal: true, needWeights: true });
        module.setNumThreads(1);
        const one = layer.forward(x, null, null, { causal: true, needWeights: true });
        layer.dispose();
        assert.deepEqual(three.output.data, one.output.data);
        assert.deepEqual(three.weights.data, one.weights.data);
        assert.equal(module.setNumThreads(0), 1, 'clamped to at least one thread');
      });
    }
  });
}
