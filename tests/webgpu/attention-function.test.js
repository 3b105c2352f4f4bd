// scaledDotProductAttentionAsync on the WebGPU backend (bindings/js/webgpu/attention-function.js):
// ONNX's stored Attention cases (tests/fixtures/onnx-attention/) against ONNX's Y, presents and
// qk_matmul_output (through capture); the float64 PyTorch SDPA fixtures; the wasm module's
// function on the options the ONNX data does not reach (weights, dropout with a seed, the 3-D GQA
// form, window, ALiBi, sinks, a negative per-batch causal offset folded into the mask with the
// window and ALiBi, every captured step); gradients (grad, backwardAsync) against the wasm function's backward, which
// tests/js/attention-function-gradients.test.js checks against float64 finite differences; GPU
// tensors in and out; and what it refuses, by name. On a device with every optional feature and
// on one with none (tests/webgpu/devices.js).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { onnxAttentionCall, readNodeTest } from '../js/onnx-node-test.js';
import { seededFloats } from '../js/seeded.js';
import { openDevice } from './devices.js';

const ROOT = new URL('../fixtures/onnx-attention/', import.meta.url);
const CASES = readdirSync(ROOT).filter((name) => name.startsWith('test_attention')).sort();
const SDPA = JSON.parse(readFileSync(new URL('../fixtures/sdpa-float64.json', import.meta.url), 'utf8'));
const wasm = await init();

function assertClose(what, got, want, tolerance = 2e-5) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.data.length, want.data.length, `${what}: length`);
  for (let i = 0; i < want.data.length; i++) {
    if (got.data[i] === want.data[i]) continue;  // (-Infinity in the logits)
    assert.ok(Math.abs(got.data[i] - want.data[i]) <= tolerance * (1 + Math.abs(want.data[i])), `${what}[${i}]: got ${got.data[i]}, want ${want.data[i]}`);
  }
}

const t = (shape, seed) => ({ data: seededFloats(shape.reduce((n, d) => n * d, 1), seed), shape });

for (const optional of [true, false]) {
  describe(`scaledDotProductAttentionAsync on WebGPU (${optional ? 'every optional feature' : 'no optional feature'})`, async () => {
    const mha = await init({ backend: 'webgpu', device: await openDevice(optional) });

    test(`ONNX's ${CASES.length} stored cases: Y, the presents and qk_matmul_output (capture)`, async () => {
      let captured = 0;
      for (const name of CASES) {
        const c = readNodeTest(new URL(`${name}/`, ROOT));
        const half = c.inputs[0].dtype === 'float16';
        const { query, key, value, options, step } = onnxAttentionCall(c);
        const [Y, presentKey, presentValue, qk] = c.outputs;
        const r = await mha.scaledDotProductAttentionAsync(query, key, value, { ...options, capture: Boolean(qk) });
        assertClose(`${name}: Y`, r.output, Y, half ? 2e-3 : 2e-5);
        if (presentKey) {
          assertClose(`${name}: present_key`, r.presentKey, presentKey, half ? 2e-3 : 0);
          assertClose(`${name}: present_value`, r.presentValue, presentValue, half ? 2e-3 : 0);
        }
        if (qk) {
          assertClose(`${name}: qk_matmul_output (${step})`, r.steps[step], qk, half ? 2e-3 : 2e-5);
          captured++;
        }
      }
      assert.ok(captured >= 8, `${captured} cases with qk_matmul_output`);
    });

    test('PyTorch SDPA semantics: the float64 formula fixtures (output and weights)', async () => {
      const f32 = ({ data, shape }) => ({ data: Float32Array.from(data), shape });
      for (const c of SDPA.cases) {
        const options = { ...c.options, needWeights: true };
        if (c.attnMask) options.attnMask = { data: (c.attnMask.bool ? Uint8Array : Float32Array).from(c.attnMask.data), shape: c.attnMask.shape };
        const r = await mha.scaledDotProductAttentionAsync(f32(c.query), f32(c.key), f32(c.value), options);
        assertClose(`${c.name}: output`, r.output, c.output);
        assertClose(`${c.name}: weights`, r.weights, c.weights);
      }
    });

    test('equals the wasm function on weights, dropout with a seed, GQA in the 3-D form, window, ALiBi, sinks, negative and per-batch offsets (with window and ALiBi)', async () => {
      const [B, Hq, Hkv, L, S, E] = [2, 4, 2, 7, 9, 8];
      const cases = [
        [t([B, Hq, L, E], 1), t([B, Hkv, S, E], 2), t([B, Hkv, S, 6], 3), { needWeights: true, causal: 'bottom-right', dropout: 0.3, seed: 99 }],
        [t([B, L, Hq * E], 4), t([B, S, Hkv * E], 5), t([B, S, Hkv * E], 6), { numHeads: Hq, kvNumHeads: Hkv, needWeights: true, slidingWindow: 3, causal: true }],
        [t([Hq, L, E], 7), t([Hkv, S, E], 8), t([Hkv, S, E], 9), { alibiSlopes: [0.5, 0.25, 0.125, 0.0625], sinks: Float32Array.of(0.1, -1, 2, 0), softcap: 2 }],
        [t([B, Hq, L, E], 10), t([B, Hkv, S, E], 11), t([B, Hkv, S, E], 12),
          { causalOffset: Int32Array.of(-2, 3), kvSeqLens: Int32Array.of(9, 4), attnMask: { data: Uint8Array.from({ length: S - 1 }, (_, j) => j % 3), shape: [S - 1] }, needWeights: true }],
        [t([B, Hq, L, E], 13), t([B, Hkv, S, E], 14), t([B, Hkv, S, E], 15),
          { causalOffset: Int32Array.of(-2, 3), slidingWindow: 3, alibiSlopes: [0.5, 0.25, 0.125, 0.0625], needWeights: true, capture: true }],
        [t([B, Hq, L, E], 16), t([B, Hkv, S, E], 17), t([B, Hkv, S, E], 18),
          { causalOffset: -1, slidingWindow: 2, softcap: 3, attnMask: { data: Float32Array.from({ length: L * S }, (_, i) => (i % 5) * 0.25 - 0.5), shape: [L, S] } }],
        [t([B, Hq, L, E], 19), t([B, Hkv, S, E], 20), t([B, Hkv, S, E], 21), { causalOffset: -2, dropout: 0.3, seed: 5, alibiSlopes: [0.5, 0.25, 0.125, 0.0625] }],
      ];
      for (const [q, k, v, options] of cases) {
        const want = wasm.scaledDotProductAttention(q, k, v, options);
        const got = await mha.scaledDotProductAttentionAsync(q, k, v, options);
        assertClose(`${JSON.stringify(Object.keys(options))}: output`, got.output, want.output);
        if (want.weights) assertClose(`${JSON.stringify(Object.keys(options))}: weights`, got.weights, want.weights);
        for (const step of Object.keys(want.steps ?? {})) assertClose(`steps.${step}`, got.steps[step], want.steps[step]);
      }
    });

    test('capture: scores, capped, logits and pattern equal the wasm function\'s (softcap, ALiBi, sinks, masks, a past)', async () => {
      const [B, Hq, Hkv, L, S, P, E] = [2, 4, 2, 5, 6, 3, 8];
      const cases = [
        [t([B, Hq, L, E], 21), t([B, Hkv, S, E], 22), t([B, Hkv, S, E], 23),
          { softcap: 1.5, alibiSlopes: [0.5, 0.25, 0.125, 0.0625], sinks: Float32Array.of(0.1, -1, 2, 0), causal: 'bottom-right', kvSeqLens: Int32Array.of(6, 4) }],
        [t([B, L, Hq * E], 24), t([B, S, Hkv * E], 25), t([B, S, Hkv * E], 26),
          { numHeads: Hq, kvNumHeads: Hkv, pastKey: t([B, Hkv, P, E], 27), pastValue: t([B, Hkv, P, E], 28), causalOffset: Int32Array.of(-1, 4),
            attnMask: { data: Float32Array.from({ length: L * (P + S) }, (_, i) => (i % 4) - 1.5), shape: [L, P + S] } }],
      ];
      for (const [q, k, v, options] of cases) {
        const want = wasm.scaledDotProductAttention(q, k, v, { ...options, capture: true });
        const got = await mha.scaledDotProductAttentionAsync(q, k, v, { ...options, capture: true });
        assert.deepEqual(Object.keys(got.steps), Object.keys(want.steps));
        for (const step of Object.keys(want.steps)) assertClose(`steps.${step}`, got.steps[step], want.steps[step]);
        assertClose('output', got.output, want.output);
      }
    });

    test('grad: backwardAsync gives the wasm function\'s dq, dk, dv, dPastKey, dPastValue (GQA, masks, offsets, softcap, 3-D form, dropout, sinks, window and ALiBi with per-batch offsets)', async () => {
      const [B, Hq, Hkv, L, S, P, E, Ev] = [2, 4, 2, 3, 4, 2, 5, 3];
      const T = P + S;
      const mask = { data: Uint8Array.from({ length: Hq * (T - 1) }, (_, i) => ((i * 7 + 3) % 5 !== 0 ? 1 : 0)), shape: [Hq, 1, T - 1] };
      const cases = [
        [t([B, Hq, L, E], 31), t([B, Hkv, S, E], 32), t([B, Hkv, S, Ev], 33), t([B, Hq, L, Ev], 34),
          { pastKey: t([B, Hkv, P, E], 35), pastValue: t([B, Hkv, P, Ev], 36), attnMask: mask, causalOffset: Int32Array.of(-1, P), softcap: 1.5, scale: 0.4 }],
        [t([B, L, Hq * E], 41), t([B, S, Hkv * E], 42), t([B, S, Hkv * Ev], 43), t([B, L, Hq * Ev], 44),
          { numHeads: Hq, kvNumHeads: Hkv, pastKey: t([B, Hkv, P, E], 45), pastValue: t([B, Hkv, P, Ev], 46), causal: 'bottom-right', kvSeqLens: Int32Array.of(6, 3) }],
        [t([Hq, 9, 8], 51), t([Hkv, 9, 8], 52), t([Hkv, 9, 8], 53), t([Hq, 9, 8], 54),
          { dropout: 0.2, seed: 7, sinks: Float32Array.of(0.5, -1, 0, 1), alibiSlopes: [0.5, 0.25, 0.125, 0.0625], slidingWindow: 4, causal: true }],
        [t([B, Hq, L, E], 81), t([B, Hkv, S, E], 82), t([B, Hkv, S, Ev], 83), t([B, Hq, L, Ev], 84),
          { pastKey: t([B, Hkv, P, E], 85), pastValue: t([B, Hkv, P, Ev], 86), causalOffset: Int32Array.of(-1, 4), slidingWindow: 3, alibiSlopes: [0.5, 0.25, 0.125, 0.0625] }],
      ];
      for (const [q, k, v, dOut, options] of cases) {
        const want = wasm.scaledDotProductAttention(q, k, v, { ...options, grad: true });
        const wantGrads = want.backward(dOut);
        const got = await mha.scaledDotProductAttentionAsync(q, k, v, { ...options, grad: true });
        assertClose('output', got.output, want.output);
        const grads = await got.backwardAsync(dOut);
        assert.deepEqual(Object.keys(grads).sort(), Object.keys(wantGrads).sort());
        for (const name of Object.keys(wantGrads)) assertClose(`d${name}`, grads[name], wantGrads[name], 1e-4);
        assert.equal(got.released, true);
        await assert.rejects(got.backwardAsync(dOut), { message: /^backwardAsync: already called for this forward pass/ });
      }
      const r = await mha.scaledDotProductAttentionAsync(cases[0][0], cases[0][1], cases[0][2], { grad: true });
      r.release();
      await assert.rejects(r.backwardAsync(cases[0][3]), { message: /^backwardAsync: this forward pass was released/ });
      await assert.rejects((await mha.scaledDotProductAttentionAsync(cases[0][0], cases[0][1], cases[0][2], { grad: true })).backwardAsync(t([1, 2], 1)),
        { name: 'RangeError', message: /^backwardAsync: dOut/ });
    });

    test('GPU tensors in ({ buffer, shape }) and out (outputLocation: \'gpu\'): the same values as CPU arrays', async () => {
      const { device } = mha;
      const onGpu = ({ data, shape }) => {
        const buffer = device.createBuffer({ size: Math.max(16, data.byteLength), usage: 0x80 | 0x08 | 0x04 });
        device.queue.writeBuffer(buffer, 0, data);
        return { buffer, shape };
      };
      const [B, Hq, Hkv, L, S, P, E] = [2, 4, 2, 3, 5, 2, 8];
      const [q, k, v, pk, pv, dOut] = [t([B, Hq, L, E], 61), t([B, Hkv, S, E], 62), t([B, Hkv, S, E], 63), t([B, Hkv, P, E], 64), t([B, Hkv, P, E], 65), t([B, Hq, L, E], 66)];
      const options = { causal: 'bottom-right', softcap: 2, needWeights: true, capture: true };
      const want = wasm.scaledDotProductAttention(q, k, v, { ...options, pastKey: pk, pastValue: pv, grad: true });
      const wantGrads = want.backward(dOut);
      const got = await mha.scaledDotProductAttentionAsync(onGpu(q), onGpu(k), onGpu(v),
        { ...options, pastKey: onGpu(pk), pastValue: pv, grad: true, outputLocation: 'gpu' });
      for (const name of ['output', 'presentKey', 'presentValue', 'weights']) {
        assert.ok(got[name].buffer, `${name} on the GPU`);
        assertClose(name, { data: await got[name].read(), shape: got[name].shape }, want[name]);
      }
      for (const step of Object.keys(want.steps)) {
        assertClose(`steps.${step}`, { data: await got.steps[step].read(), shape: got.steps[step].shape }, want.steps[step]);
      }
      got.output.dispose();  // (the backward reads its own copy)
      const grads = await got.backwardAsync(onGpu(dOut));
      for (const name of Object.keys(wantGrads)) {
        assert.ok(grads[name].buffer, `d${name} on the GPU`);
        assertClose(`d${name}`, { data: await grads[name].read(), shape: grads[name].shape }, wantGrads[name], 1e-4);
      }
      // The 3-D form with GPU inputs, CPU results; the backward reads its own copies of them.
      const packed = [t([B, L, Hq * E], 71), t([B, S, Hkv * E], 72), t([B, S, Hkv * E], 73)];
      const packedOptions = { numHeads: Hq, kvNumHeads: Hkv, causal: true, grad: true };
      const plain = wasm.scaledDotProductAttention(...packed, packedOptions);
      const packedOnGpu = packed.map(onGpu);
      const fromGpu = await mha.scaledDotProductAttentionAsync(...packedOnGpu, packedOptions);
      assertClose('3-D form from GPU tensors', fromGpu.output, plain.output);
      for (const { buffer } of packedOnGpu) device.queue.writeBuffer(buffer, 0, new Float32Array(buffer.size / 4));
      const packedDOut = t([B, L, Hq * E], 74);
      const packedGrads = plain.backward(packedDOut);
      const gotPacked = await fromGpu.backwardAsync(packedDOut);
      for (const name of ['query', 'key', 'value']) assertClose(`3-D form: d${name}`, gotPacked[name], packedGrads[name], 1e-4);
      await assert.rejects(mha.scaledDotProductAttentionAsync(onGpu(q), k, v, { outputLocation: 'disk' }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: outputLocation must be 'cpu' or 'gpu', got string disk$/ });
      const unreadable = device.createBuffer({ size: 4 * q.data.length, usage: 0x08 | 0x01 });
      await assert.rejects(mha.scaledDotProductAttentionAsync({ buffer: unreadable, shape: q.shape }, k, v),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: query.buffer: a GPUBuffer without GPUBufferUsage.STORAGE/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync({ buffer: onGpu(q).buffer, shape: [B, Hq, L, 7] }, k, v),
        { name: 'RangeError', message: /^scaledDotProductAttentionAsync: key: expected shape \[B, Hkv, S, E\] with E = 7/ });
    });

    test('errors and refusals name the option (and the core\'s shape checks are the wasm function\'s)', async () => {
      const [q, k] = [t([1, 2, 3, 8], 1), t([1, 2, 5, 8], 2)];
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, k, k, { outputLocations: 'gpu' }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: options: unknown option 'outputLocations'; known options: attnMask, .*, grad, outputLocation$/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync(t([2, 2, 3, 8], 1), t([2, 2, 5, 8], 2), t([2, 2, 5, 8], 3), { causalOffset: Int32Array.of(0, 2), dropout: 0.1 }),
        { name: 'TypeError', message: /^scaledDotProductAttentionAsync: dropout: with a per-batch causalOffset is not supported on WebGPU yet/ });
      await assert.rejects(mha.scaledDotProductAttentionAsync(q, t([1, 2, 5, 7], 3), k),
        { name: 'RangeError', message: /^scaledDotProductAttentionAsync: key: expected shape \[B, Hkv, S, E\] with E = 8/ });
    });
  });
}
