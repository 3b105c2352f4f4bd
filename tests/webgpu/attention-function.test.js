// scaledDotProductAttentionAsync on the WebGPU backend (bindings/js/webgpu/attention-function.js):
// ONNX's stored Attention cases (tests/fixtures/onnx-attention/) against ONNX's Y and presents;
// the wasm module's function on the options the ONNX data does not reach (weights, dropout with a
// seed, the 3-D GQA form, window, ALiBi, sinks, a negative per-batch causal offset folded into
// the mask); and what it refuses, by name. On a device with every optional feature and on one
// with none (tests/webgpu/devices.js).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { onnxAttentionCall, readNodeTest } from '../js/onnx-node-test.js';
import { seededFloats } from '../js/seeded.js';
import { openDevice } from './devices.js';

const ROOT = new URL('../fixtures/onnx-attention/', import.meta.url);
const CASES = readdirSync(ROOT).filter((name) => name.startsWith('test_attention')).sort();
const wasm = await init();

function assertClose(what, got, want, tolerance = 2e-5) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  for (let i = 0; i < want.data.length; i++) {
    assert.ok(Math.abs(got.data[i] - want.data[i]) <= tolerance * (1 + Math.abs(want.data[i])), `${what}[${i}]: got ${got.data[i]}, want ${want.data[i]}`);
  }
}

const t = (shape, seed) => ({ data: seededFloats(shape.reduce((n, d) => n * d, 1), seed), shape });

for (const optional of [true, false]) {
  describe(`scaledDotProductAttentionAsync on WebGPU (${optional ? 'every optional feature' : 'no optional feature'})`, async () => {
    const mha = await init({ backend: 'webgpu', device: await openDevice(optional) });

    test(`ONNX's ${CASES.length} stored cases: Y and the presents (qk_matmul_output: capture is wasm-only)`, async () => {
      for (const name of CASES) {
        const c = readNodeTest(new URL(`${name}/`, ROOT));
        const half = c.inputs[0].dtype === 'float16';
        const { query, key, value, options } = onnxAttentionCall(c);
        const [Y, presentKey, presentValue] = c.outputs;
        const r = await mha.scaledDotProductAttentionAsync(query, key, value, options);
        assertClose(`${name}: Y`, r.output, Y, half ? 2e-3 : 2e-5);
        if (presentKey) {
          assertClose(`${name}: present_key`, r.presentKey, presentKey, half ? 2e-3 : 0);
          assertClose(`${name}: present_value`, r.presentValue, presentValue, half ? 2e-3 : 0);
        }
      }
    });

    test('equals the wasm function on weights, dropout with a seed, GQA in the 3-D form, window, ALiBi, sinks', async () => {
      const [B, Hq, Hkv, L, S, E] = [2, 4, 2, 7, 9, 8];
      const cases = [
        [t([B, Hq, L, E], 1), t([B, Hkv, S, E], 2), t([B, Hkv, S, 6], 3), { needWeights: true, causal: 'bottom-right', dropout: 0.3, seed: 99 }],
        [t([B, L, Hq * E], 4), t([B, S, Hkv * E], 5), t([B, S, Hkv * E], 6), { numHeads: Hq, kvNumHeads: Hkv, needWeights: true, slidingWindow: 3, causal: true }],
        [t([Hq, L, E], 7), t([Hkv, S, E], 8), t([Hkv, S, E], 9), { alibiSlopes: [0.5, 0.25, 0.125, 0.0625], sinks: Float32Array.of(0.1, -1, 2, 0), softcap: 2 }],
        [t([B, Hq, L, E], 10), t([B, Hkv, S, E], 11), t([B, Hkv, S, E], 12),
          { causalOffset: Int32Array.of(-2, 3), kvSeqLens: Int32Array.of(9, 4), attnMask: { data: Uint8Array.from({ length: S - 1 }, (_, j) => j % 3), shape: [S - 1] }, needWeights: true }],
      ];
      for (const [q, k, v, options] of cases) {
        const want = wasm.scaledDotProductAttention(q, k, v, options);
        const got = await mha.scaledDotProductAttentionAsync(q, k, v, options);
        assertClose(`${JSON.stringify(Object.keys(options))}: output`, got.output, want.output);
        if (want.weights) assertClose(`${JSON.stringify(Object.keys(options))}: weights`, got.weights, want.weights);
      }
    });

    test('refusals name the option (and the core\'s shape checks are the wasm function\'s)', async () => {
      const [q, k] = [t([1, 2, 3, 8], 1), t([1, 2, 5, 8], 2)];
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, k, k, { capture: true }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: capture: not supported by scaledDotProductAttentionAsync on WebGPU yet/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, k, k, { grad: true }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: grad: not supported/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, k, k, { causalOffset: -1, slidingWindow: 2 }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: causalOffset: a per-batch or negative offset with slidingWindow/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, t([1, 2, 5, 7], 3), k),
        { name: 'RangeError', message: /^scaledDotProductAttentionAsync: key: expected shape \[B, Hkv, S, E\] with E = 8/ });
    });
  });
}
