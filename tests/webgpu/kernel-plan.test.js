// The kernels a WebGPU call runs (bindings/js/webgpu/kernel-plan.js), for a few shapes: the
// float32 GEMM by rows and by the device's choice, flash-decoding for a few query rows against a
// cache only, and the tile sizes the workgroup storage allows. No device needed: the plan is a
// function of the config, the call's sizes and the device's GEMM choice.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DECODE_ROWS, gemmChoiceOf, planKernels, setGemmKernel } from '../../bindings/js/webgpu/kernel-plan.js';

const small = { headDim: 16, valueHeadDim: 16 };  // e.g. embedDim 64, 4 heads

test('projections: gemm_tiled from a tile of 32 rows up with the automatic choice, else gemm; a forced choice everywhere', () => {
  assert.deepEqual(planKernels(small, { B: 1, L: 32, S: 32 }, 'auto').projections,
    { query: 'gemm_tiled', keyValue: 'gemm_tiled', output: 'gemm_tiled' });
  assert.deepEqual(planKernels(small, { B: 1, L: 31, S: 31 }, 'auto').projections,
    { query: 'gemm', keyValue: 'gemm', output: 'gemm' });
  // Rows are B * L (queries, output) and B * newKeys (keys, values): 4 x 8 queries, 4 x 1 new keys.
  assert.deepEqual(planKernels(small, { B: 4, L: 8, S: 9, newKeys: 1 }, 'auto').projections,
    { query: 'gemm_tiled', keyValue: 'gemm', output: 'gemm_tiled' });
  assert.deepEqual(planKernels(small, { B: 8, L: 512, S: 512 }, 'gemm').projections,
    { query: 'gemm', keyValue: 'gemm', output: 'gemm' });
  assert.deepEqual(planKernels(small, { B: 1, L: 1, S: 1 }, 'gemm_tiled').projections,
    { query: 'gemm_tiled', keyValue: 'gemm_tiled', output: 'gemm_tiled' });
});

test('attention: flash-decoding for up to DECODE_ROWS query rows against a cache, without weights or dropout', () => {
  assert.equal(DECODE_ROWS, 4);
  const decode = planKernels(small, { B: 1, L: 1, S: 300, newKeys: 1, cache: true });
  assert.equal(decode.attention, 'decode');
  assert.equal(decode.decodeChunks, 3);  // 300 keys in chunks of 128
  assert.equal(planKernels(small, { B: 2, L: 4, S: 4, newKeys: 4, cache: true }).decodeChunks, 1);
  for (const sizes of [
    { B: 1, L: 5, S: 300, newKeys: 5, cache: true },  // more rows than DECODE_ROWS
    { B: 1, L: 1, S: 300, newKeys: 1, cache: true, weights: true },
    { B: 1, L: 1, S: 300, newKeys: 1, cache: true, dropout: true },
    { B: 1, L: 1, S: 300 },  // no cache
  ]) {
    const plan = planKernels(small, sizes);
    assert.equal(plan.attention, 'flash', JSON.stringify(sizes));
    assert.equal(plan.decodeChunks, 0);
  }
});

test('tiles: keys and query rows per tile as the workgroup storage holds them', () => {
  const sizes = { B: 1, L: 8, S: 8 };
  assert.deepEqual([planKernels(small, sizes).keysPerTile, planKernels(small, sizes).rowsPerTile], [32, 64]);
  const wide = planKernels({ headDim: 256, valueHeadDim: 256 }, sizes);
  assert.deepEqual([wide.keysPerTile, wide.rowsPerTile], [7, 7]);  // 1000 vec4s / (64 + 64 (+ 1))
  const tooWide = planKernels({ headDim: 2048, valueHeadDim: 2048 }, sizes);
  assert.deepEqual([tooWide.keysPerTile, tooWide.rowsPerTile], [0, 0]);  // the layer refuses such a call
});

test("a device's GEMM choice: gemm on a fallback adapter, automatic elsewhere, setGemmKernel's when set", () => {
  const device = {};
  assert.equal(gemmChoiceOf(device, { isFallbackAdapter: true }), 'gemm');
  assert.equal(gemmChoiceOf(device, { isFallbackAdapter: false }), 'auto');
  setGemmKernel(device, 'gemm_tiled');
  assert.equal(gemmChoiceOf(device, { isFallbackAdapter: true }), 'gemm_tiled');
  assert.throws(() => setGemmKernel(device, 'tiled'), { name: 'TypeError', message: 'setGemmKernel: unknown kernel tiled' });
});
