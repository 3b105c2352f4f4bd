// The residual stream's norms in wasm (core/row-norm.js over src/mha/kernels/row_norm.hpp),
// in every build, against elementwise.js' JavaScript loops (float64 sums): LayerNorm and RMSNorm,
// with the fused residual add (x keeps the sum) and without (x untouched), on widths with and
// without a vector tail and rows with a large mean; nothing stays on the heap; bad sizes are named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROW_NORM } from '../../bindings/js/core/row-norm.js';
import { layerNorm, rmsNorm } from '../../bindings/js/models/elementwise.js';
import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { seededFloats } from './seeded.js';

for (const name of BUILDS) {
  test(`${name}: LayerNorm and RMSNorm, with and without the residual add, equal the JavaScript loops`, async () => {
    const build = await loadBuild(name);
    const kernel = build[ROW_NORM];
    for (const [rows, E] of [[1, 5], [3, 64], [2, 131]]) {
      for (const withBias of [true, false]) {
        for (const withAdd of [true, false]) {
          const x = seededFloats(rows * E, rows * E + 1).map((v) => 4 * v + 30);  // a large mean
          const add = withAdd ? seededFloats(rows * E, 7) : null;
          const weight = seededFloats(E, 3), bias = withBias ? seededFloats(E, 4) : null;
          const sum = Float32Array.from(x, (v, i) => (add ? Math.fround(v + add[i]) : v));
          const want = withBias ? layerNorm(sum, E, weight, bias, 1e-5) : rmsNorm(sum, E, weight, 1e-5);
          const before = build.module.heapAllocatedBytes();
          const got = kernel(x, E, weight, bias, 1e-5, add);
          assert.equal(build.module.heapAllocatedBytes(), before, 'nothing kept');
          assert.equal(got.length, rows * E);
          assert.deepEqual(x, sum, withAdd ? 'x holds the residual sum' : 'x is left as it was');
          const what = `${withBias ? 'LayerNorm' : 'RMSNorm'}${withAdd ? ' + add' : ''} ${rows}x${E}`;
          got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-6 * (1 + Math.abs(want[i])), `${what} [${i}]: ${v} vs ${want[i]}`));
        }
      }
    }
    assert.throws(() => kernel(new Float32Array(6), 4, new Float32Array(4), null, 1e-5), {
      name: 'RangeError', message: 'rowNorm: x must hold [rows, 4] and weight [4]; got 6, 4 floats',
    });
    assert.throws(() => kernel(new Float32Array(8), 4, new Float32Array(4), new Float32Array(4), 1e-5, new Float32Array(4)), {
      name: 'RangeError', message: 'rowNorm: x must hold [rows, 4] and weight, bias [4], add as x; got 8, 4, 4, 4 floats',
    });
  });
}
