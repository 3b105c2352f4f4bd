// ONNX's conformance data for the Attention operator (opset 23/24), every stored case
// (tests/fixtures/onnx-attention/README.md says where it came from), through the public
// scaledDotProductAttention on every wasm build: Y, present_key / present_value and
// qk_matmul_output against ONNX's expected tensors. The float32 cases run as stored; the four
// float16 ones (Node 20 has no Float16Array) run widened to float32 against the float16
// outputs, with float16's tolerance.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { onnxAttentionCall, readNodeTest } from './onnx-node-test.js';

const ROOT = new URL('../fixtures/onnx-attention/', import.meta.url);
const CASES = readdirSync(ROOT).filter((name) => name.startsWith('test_attention')).sort();

function assertClose(what, got, want, { atol, rtol }) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  for (let i = 0; i < want.data.length; i++) {
    const g = got.data[i], w = want.data[i];
    if (g === w) continue;  // -Infinity in the logits
    assert.ok(Math.abs(g - w) <= atol + rtol * Math.abs(w), `${what}[${i}]: got ${g}, want ${w}`);
  }
}

for (const build of BUILDS) {
  describe(`ONNX Attention conformance cases on ${build}`, async () => {
    const mha = await loadBuild(build);

    test(`the ${CASES.length} stored cases (float32, and float16 widened) match ONNX's outputs`, () => {
      const passed = [];
      for (const name of CASES) {
        const c = readNodeTest(new URL(`${name}/`, ROOT));
        const half = c.inputs[0].dtype === 'float16';
        const tolerance = half ? { atol: 2e-3, rtol: 2e-3 } : { atol: 2e-6, rtol: 1e-4 };
        const { query, key, value, options, step } = onnxAttentionCall(c);
        const [Y, presentKey, presentValue, qk] = c.outputs;
        const r = mha.scaledDotProductAttention(query, key, value, { ...options, capture: qk !== undefined && qk !== null });
        assertClose(`${name}: Y`, r.output, Y, tolerance);
        if (presentKey) {
          assertClose(`${name}: present_key`, r.presentKey, presentKey, tolerance);
          assertClose(`${name}: present_value`, r.presentValue, presentValue, tolerance);
        }
        if (qk) assertClose(`${name}: qk_matmul_output (${step})`, r.steps[step], qk, tolerance);
        passed.push(name);
      }
      assert.equal(passed.length, 76);
    });
  });
}
