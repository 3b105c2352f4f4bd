// The float32 projection kernels: gemm_tiled.wgsl (GPUs: tiles through workgroup memory) and
// gemm.wgsl (software adapters), y = x wᵀ + b for shapes on and off their 32 x 32 tiles and 4-float
// steps (M, N, K of 1, odd, and past a tile), with and without bias: each against float64, and
// the two kernels equal (the same float32 sums in the same order). The layer's tests run
// gemm.wgsl (SwiftShader is a fallback adapter); this runs gemm_tiled directly as a GPU would.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { encodeGemm } from '../../bindings/js/webgpu/gemm.js';
import { planKernels } from '../../bindings/js/webgpu/kernel-plan.js';
import { CallBuffers, readBack } from '../../bindings/js/webgpu/tensors.js';
import { openDevice } from './devices.js';
import { random } from './random-data.js';

const device = await openDevice(false);

async function gemm(kernel, x, w, bias, M, N, K) {
  const buffers = new CallBuffers(device);
  const y = buffers.storage(M * N, 'y');
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  encodeGemm(device, pass, buffers, { x: buffers.upload(x, 'x'), w: buffers.upload(w, 'w'), bias: bias && buffers.upload(bias, 'bias'), y, M, N, K, kernel });
  pass.end();
  device.queue.submit([encoder.finish()]);
  const out = await readBack(device, y, M * N);
  buffers.free();
  return out;
}

const SHAPES = [[1, 1, 1], [1, 96, 64], [33, 31, 7], [32, 32, 32], [64, 40, 36], [5, 70, 130], [97, 65, 44], [40, 3, 33]];

for (const [M, N, K] of SHAPES) {
  test(`M ${M} x N ${N} x K ${K}: gemm_tiled and gemm equal each other and float64`, async () => {
    const rand = random(M * 1000 + N * 10 + K);
    const x = Float32Array.from({ length: M * K }, () => rand() - 0.5);
    const w = Float32Array.from({ length: N * K }, () => rand() - 0.5);
    const bias = Float32Array.from({ length: N }, () => rand() - 0.5);
    for (const b of [bias, null]) {
      const tiled = await gemm('gemm_tiled', x, w, b, M, N, K);
      const direct = await gemm('gemm', x, w, b, M, N, K);
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let want = b ? b[n] : 0;
          let size = Math.abs(want);
          for (let k = 0; k < K; k++) {
            want += x[m * K + k] * w[n * K + k];
            size += Math.abs(x[m * K + k] * w[n * K + k]);
          }
          const got = tiled[m * N + n];
          assert.ok(Math.abs(got - want) <= 1e-6 * size + 1e-7, `y[${m}, ${n}] = ${got}, float64 ${want}`);
        }
      }
      assert.deepEqual(tiled, direct);
    }
  });
}

test('auto: gemm_tiled from a tile of rows up, gemm below (a decode step\'s rows)', async () => {
  // (the default choice, kernel-plan.js's: equal results either way; this checks both paths of the default run and agree)
  const rand = random(7);
  const [N, K] = [24, 40];
  for (const [M, kernel] of [[31, 'gemm'], [32, 'gemm_tiled']]) {
    const planned = planKernels({ headDim: 8, valueHeadDim: 8 }, { B: 1, L: M, S: M }, 'auto').projections.query;
    assert.equal(planned, kernel);
    const x = Float32Array.from({ length: M * K }, () => rand() - 0.5);
    const w = Float32Array.from({ length: N * K }, () => rand() - 0.5);
    assert.deepEqual(await gemm(planned, x, w, null, M, N, K), await gemm('gemm', x, w, null, M, N, K));
  }
});
