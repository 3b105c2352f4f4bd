// ONNX's four float16 Attention cases (tests/fixtures/onnx-attention/) in Chromium, whose
// Float16Array Node 20 lacks: the inputs as Float16Arrays through scaledDotProductAttention
// (wasm) and scaledDotProductAttentionAsync (WebGPU on SwiftShader), computed in float32,
// against ONNX's float16 outputs.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { onnxAttentionCall, readNodeTest } from '../js/onnx-node-test.js';
import { openServedPage } from './browser.js';

const ROOT = new URL('../fixtures/onnx-attention/', import.meta.url);
const HALF_CASES = readdirSync(ROOT).filter((name) => name.startsWith('test_attention'))
  .map((name) => ({ name, c: readNodeTest(new URL(`${name}/`, ROOT)) }))
  .filter(({ c }) => c.inputs[0].dtype === 'float16');

let served, page;
before(async () => {
  served = await openServedPage();
  ({ page } = served);
});
after(() => served?.close());

/** A tensor as the page rebuilds it: float16 bits, bools, int32s or floats, as plain arrays. */
function forPage(tensor, original) {
  if (!tensor) return tensor;
  if (original?.bits) return { kind: 'Float16Array', bits: Array.from(original.bits), shape: tensor.shape };
  return { kind: tensor.data.constructor.name, data: Array.from(tensor.data), shape: tensor.shape };
}

test(`the ${HALF_CASES.length} float16 cases, as Float16Arrays, on wasm and WebGPU in Chromium`, async () => {
  assert.equal(HALF_CASES.length, 4);
  const input = HALF_CASES.map(({ name, c }) => {
    const { query, key, value, options } = onnxAttentionCall(c);
    const [Q, K, V, mask, pastKey, pastValue] = c.inputs;
    const pageOptions = { ...options };
    if (options.attnMask) pageOptions.attnMask = forPage(options.attnMask, mask);
    if (options.pastKey) [pageOptions.pastKey, pageOptions.pastValue] = [forPage(options.pastKey, pastKey), forPage(options.pastValue, pastValue)];
    for (const name of ['kvSeqLens', 'causalOffset']) {
      if (ArrayBuffer.isView(options[name])) pageOptions[name] = { kind: 'Int32Array', array: Array.from(options[name]) };
    }
    return { name, query: forPage(query, Q), key: forPage(key, K), value: forPage(value, V), options: pageOptions };
  });
  const results = await page.evaluate(async (cases) => {
    const { init } = await import('/bindings/js/index.js');
    const wasm = await init();
    const gpu = await init({ backend: 'webgpu' });
    const typed = (t) => {
      if (!t || typeof t !== 'object' || !t.kind) return t;
      if (t.array) return Int32Array.from(t.array);
      const data = t.kind === 'Float16Array' ? new Float16Array(Uint16Array.from(t.bits).buffer) : new globalThis[t.kind](t.data);
      return { data, shape: t.shape };
    };
    const out = [];
    for (const c of cases) {
      const options = Object.fromEntries(Object.entries(c.options).map(([k, v]) => [k, typed(v)]));
      const [q, k, v] = [typed(c.query), typed(c.key), typed(c.value)];
      const isHalf = q.data instanceof Float16Array;
      const onWasm = wasm.scaledDotProductAttention(q, k, v, options);
      const onGpu = await gpu.scaledDotProductAttentionAsync(q, k, v, options);
      out.push({ isHalf, wasm: Array.from(onWasm.output.data), gpu: Array.from(onGpu.output.data), shape: onWasm.output.shape,
        presentKey: onWasm.presentKey && Array.from(onWasm.presentKey.data) });
    }
    return out;
  }, input);
  HALF_CASES.forEach(({ name, c }, n) => {
    const [Y, presentKey] = c.outputs;
    const r = results[n];
    assert.ok(r.isHalf, `${name}: the page made Float16Arrays`);
    assert.deepEqual(r.shape, Y.shape, `${name}: shape`);
    for (const [where, got] of [['wasm', r.wasm], ['WebGPU', r.gpu]]) {
      got.forEach((g, i) => assert.ok(Math.abs(g - Y.data[i]) <= 2e-3 * (1 + Math.abs(Y.data[i])), `${name} on ${where}: Y[${i}]: got ${g}, want ${Y.data[i]}`));
    }
    if (presentKey) r.presentKey.forEach((g, i) => assert.equal(g, presentKey.data[i], `${name}: present_key[${i}]`));
  });
});
