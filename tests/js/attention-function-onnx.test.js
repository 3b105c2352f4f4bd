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
import { readNodeTest } from './onnx-node-test.js';

const ROOT = new URL('../fixtures/onnx-attention/', import.meta.url);
const CASES = readdirSync(ROOT).filter((name) => name.startsWith('test_attention')).sort();

/**
 * An ONNX Attention node's inputs and attributes as a scaledDotProductAttention call
 * (docs/attention-function.md, "ONNX"): the 3-D form takes numHeads / kvNumHeads; is_causal is
 * offset-aligned (j <= i + P with a past, j <= i + nonpad_kv_seqlen[b] - L with it, else
 * top-left); qk_matmul_output_mode 0 and 1 are the scaled scores (after softcap, as ONNX's
 * reference computes them), 2 the logits, 3 the pattern.
 */
function onnxCall({ node, inputs }) {
  const [Q, K, V, mask, pastKey, pastValue, nonpad] = inputs;
  const a = node.attributes;
  const tensor = (t) => t && { data: t.data, shape: t.shape };
  const options = {};
  if (Q.shape.length === 3) {
    options.numHeads = a.q_num_heads;
    options.kvNumHeads = a.kv_num_heads;
  }
  if (a.scale !== undefined) options.scale = a.scale;
  if (a.softcap) options.softcap = a.softcap;
  if (mask) options.attnMask = tensor(mask);
  if (pastKey) {
    options.pastKey = tensor(pastKey);
    options.pastValue = tensor(pastValue);
  }
  if (nonpad) options.kvSeqLens = Int32Array.from(nonpad.data);
  const L = Q.shape.length === 3 ? Q.shape[1] : Q.shape[2];
  if (a.is_causal) {
    if (pastKey) options.causalOffset = pastKey.shape[2];
    else if (nonpad) options.causalOffset = Int32Array.from(nonpad.data, (n) => n - L);
    else options.causal = true;
  }
  const mode = a.qk_matmul_output_mode ?? 0;
  const step = mode === 3 ? 'pattern' : mode === 2 ? 'logits' : a.softcap ? 'capped' : 'scores';
  return { query: tensor(Q), key: tensor(K), value: tensor(V), options, step };
}

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
        const { query, key, value, options, step } = onnxCall(c);
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
