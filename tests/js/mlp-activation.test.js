// The MLP activation in wasm SIMD (bindings/js/core/mlp-activation.js, src/mha/kernels/
// mlp_activation.hpp) on every build: SwiGLU and tanh GeGLU of the stacked [rows, 2I] product and
// the ungated silu / tanh GELU equal elementwise.js' JavaScript loops (Math.exp, Math.tanh) within
// float32 rounding, across both tails of the sigmoid; the heap is left as it was; bad calls are named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MLP_ACTIVATION } from '../../bindings/js/core/mlp-activation.js';
import { activate, gated } from '../../bindings/js/models/elementwise.js';
import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { seededFloats } from './seeded.js';

for (const name of BUILDS) {
  test(`${name}: SwiGLU, tanh GeGLU, silu and tanh GELU equal the JavaScript loops`, async () => {
    const build = await loadBuild(name);
    const kernel = build[MLP_ACTIVATION];
    for (const act of ['silu', 'gelu_tanh']) {
      for (const [rows, I] of [[1, 5], [3, 64], [2, 131]]) {
        for (const isGated of [true, false]) {
          const x = seededFloats(rows * I * (isGated ? 2 : 1), rows * I + (isGated ? 1 : 0));
          for (let i = 0; i < x.length; i++) x[i] *= i % 7 === 0 ? 40 : 5;  // both tails, and the middle
          const before = build.module.heapAllocatedBytes();
          const got = kernel(x, rows, I, act, isGated);
          assert.equal(build.module.heapAllocatedBytes(), before, 'nothing kept');
          const want = isGated ? gated(Float32Array.from(x), rows, I, act) : activate(Float32Array.from(x), act);
          assert.equal(got.length, rows * I);
          got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 2e-6 * (1 + Math.abs(want[i])), `${act} ${isGated ? 'gated' : 'ungated'} ${rows}x${I} [${i}]: ${v} vs ${want[i]}`));
        }
      }
    }
    assert.throws(() => kernel(new Float32Array(4), 1, 4, 'gelu', false), { name: 'TypeError', message: 'mlpActivation: act must be one of silu, gelu_tanh, got gelu' });
    assert.throws(() => kernel(new Float32Array(4), 1, 4, 'silu', true), { name: 'RangeError', message: 'mlpActivation: x must hold [1, 8], got 4 floats' });
  });
}
