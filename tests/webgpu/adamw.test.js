// AdamW on the GPU (mha.AdamW: adamw.wgsl, sum_squares.wgsl) against its reference twin, the
// demo's CPU AdamW (web/training/adamw.js, PyTorch's formula); a training step kept on the GPU
// (forwardAsync with grad, backwardAsync's GPU gradients, AdamW.step, loadStateDict from the GPU
// parameters) against the wasm layer with the CPU AdamW; the errors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { AdamW as CpuAdamW } from '../../web/training/adamw.js';
import { openDevice } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const mha = await init({ backend: 'webgpu', device: await openDevice(true) });
const { device } = mha;
const STORAGE = 0x80, COPY_DST = 0x08, COPY_SRC = 0x04;

const toGpu = (data, shape) => {
  const buffer = device.createBuffer({ size: Math.max(16, data.byteLength), usage: STORAGE | COPY_DST | COPY_SRC });
  device.queue.writeBuffer(buffer, 0, data);
  return { buffer, shape };
};
const read = async (t) => {
  const staging = device.createBuffer({ size: t.shape.reduce((n, d) => n * d, 1) * 4, usage: 0x01 | COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(t.buffer, 0, staging, 0, staging.size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(0x01);
  const values = new Float32Array(staging.getMappedRange().slice(0));
  staging.destroy();
  return values;
};

/** Asserts every element of got is within 2e-6 + 1e-5 |want| of want. */
function expectClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 2e-6 + 1e-5 * Math.abs(want[i]))) assert.fail(`${what}[${i}]: got ${got[i]}, want ${want[i]}`);
  }
}

describe('AdamW on the GPU against web/training/adamw.js', () => {
  test('5 steps of 3 tensors (5 floats, 1000, 70000: more than one row of workgroups... of 256), a schedule, a clip scale', async () => {
    const rand = random(17);
    const shapes = { small: [5], weight: [40, 25], large: [70000] };
    const cpuParams = Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, tensor(rand, s).data]));
    const gpuParams = Object.fromEntries(Object.entries(cpuParams).map(([k, v]) => [k, toGpu(v, shapes[k])]));
    const cpu = new CpuAdamW(cpuParams, { weightDecay: 0.05 });
    const gpu = new mha.AdamW({ weightDecay: 0.05 });
    const schedule = [[1e-2, 0.9, 1], [3e-3, 0.85, 0.5], [1e-2, 0.95, 1], [5e-2, 0.9, 0.25], [1e-3, 0.9, 1]];
    for (const [lr, beta1, gradScale] of schedule) {
      const grads = Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, tensor(rand, s).data]));
      // The CPU trainer's clip: the gradients scaled in float32, then the update.
      const scaled = Object.fromEntries(Object.entries(grads).map(([k, g]) => [k, g.map((x) => x * gradScale)]));
      cpu.step(scaled, lr, beta1);
      const onGpu = Object.fromEntries(Object.entries(grads).map(([k, g]) => [k, toGpu(g, shapes[k])]));
      await gpu.step(gpuParams, onGpu, { lr, beta1, gradScale });
      for (const t of Object.values(onGpu)) t.buffer.destroy();
    }
    assert.equal(gpu.steps, 5);
    const state = await gpu.state();
    for (const k of Object.keys(shapes)) {
      expectClose(await read(gpuParams[k]), cpuParams[k], `param ${k}`);
      expectClose(state.firstMoment[k], cpu.firstMoment[k], `first moment ${k}`);
      expectClose(state.secondMoment[k], cpu.secondMoment[k], `second moment ${k}`);
    }
    // The state moves to a CPU optimizer and back: the next step is the same on either.
    const back = new mha.AdamW({ weightDecay: 0.05 }).loadState(state);
    assert.equal(back.steps, 5);
    const g = Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, tensor(rand, s).data]));
    const copy = Object.fromEntries(await Promise.all(Object.entries(gpuParams).map(async ([k, t]) => [k, toGpu(await read(t), t.shape)])));
    await back.step(copy, Object.fromEntries(Object.entries(g).map(([k, v]) => [k, toGpu(v, shapes[k])])), { lr: 1e-2 });
    cpu.step(g, 1e-2);
    for (const k of Object.keys(shapes)) expectClose(await read(copy[k]), cpuParams[k], `after loadState: ${k}`);
    gpu.dispose();
    back.dispose();
  });

  test('squaredNorm: the sum of squares of every tensor, as the CPU trainer\'s clip computes it', async () => {
    const rand = random(3);
    const tensors = { a: tensor(rand, [3]), b: tensor(rand, [513, 7]), c: tensor(rand, [0]) };
    let want = 0;
    for (const t of Object.values(tensors)) for (const x of t.data) want += x * x;
    const opt = new mha.AdamW();
    const got = await opt.squaredNorm(Object.fromEntries(Object.entries(tensors).map(([k, t]) => [k, toGpu(t.data, t.shape)])));
    assert.ok(Math.abs(got - want) <= 1e-5 * want, `${got} vs ${want}`);
    assert.equal(await opt.squaredNorm({}), 0);
    opt.dispose();
  });
});

describe('a training step kept on the GPU', () => {
  test('3 steps: GPU gradients, AdamW.step, loadStateDict from the GPU parameters = the wasm layer with the CPU AdamW', async () => {
    const config = { embedDim: 16, numHeads: 4 };
    const reference = new wasm.MultiHeadAttention(config).initialize({ seed: 4 });
    const cpuParams = reference.stateDict();
    const shapes = reference.stateDictShapes();
    const gpuParams = Object.fromEntries(Object.entries(cpuParams).map(([k, v]) => [k, toGpu(v, shapes[k])]));
    const layer = new mha.MultiHeadAttention(config).loadStateDict(gpuParams);
    assert.throws(() => layer.stateDict(), /^TypeError: stateDict: this layer's weights were loaded from GPU tensors/);
    const cpu = new CpuAdamW(cpuParams);
    const gpu = new mha.AdamW();
    const rand = random(8);
    for (let step = 0; step < 3; step++) {
      const x = tensor(rand, [2, 6, 16]);
      const dOut = tensor(rand, [2, 6, 16]);
      const want = reference.forward(x, null, null, { causal: true, grad: true });
      const wantGrads = want.backward(dOut);
      const r = await layer.forwardAsync(x, null, null, { causal: true, grad: true });
      expectClose(r.output.data, want.output.data, `step ${step}: output`);
      const g = await r.backwardAsync(dOut, { outputLocation: 'gpu' });
      const norm = await gpu.squaredNorm(g.params);
      const wantNorm = Object.values(wantGrads.params).reduce((s, v) => s + v.reduce((t, y) => t + y * y, 0), 0);
      assert.ok(Math.abs(norm - wantNorm) <= 1e-4 * wantNorm, `step ${step}: squared norm ${norm} vs ${wantNorm}`);
      await gpu.step(gpuParams, g.params, { lr: 1e-2 });
      cpu.step(wantGrads.params, 1e-2);
      for (const t of [g.query, ...Object.values(g.params)]) t.dispose();
      layer.loadStateDict(gpuParams);
      reference.loadStateDict(cpuParams);
    }
    // The key bias' gradient is zero but for rounding (softmax ignores a constant added to every
    // score), and AdamW scales that noise up to +-lr a step: its values differ by backend, and the
    // outputs do not depend on them. Every other parameter is compared.
    const E = config.embedDim;
    for (const k of Object.keys(shapes)) {
      const got = await read(gpuParams[k]);
      if (k === 'in_proj_bias') {
        for (const part of [[0, E], [2 * E, 3 * E]]) expectClose(got.subarray(...part), cpuParams[k].subarray(...part), `${k}[${part}]`);
      } else {
        expectClose(got, cpuParams[k], k);
      }
    }
    const x = tensor(rand, [1, 5, 16]);
    expectClose((await layer.forwardAsync(x)).output.data, reference.forward(x).output.data, 'a forward with the trained weights');
    layer.dispose();
    reference.dispose();
    gpu.dispose();
  });
});

describe('errors', () => {
  test('AdamW: options, params and grads named', async () => {
    assert.throws(() => new mha.AdamW({ beta2: 2 }), { name: 'RangeError', message: 'AdamW: beta2 must be a number in [0, 1], got number 2' });
    assert.throws(() => new mha.AdamW({ lr: 1 }), { name: 'TypeError', message: 'AdamW: options: unknown option \'lr\'; known options: weightDecay, beta2, eps' });
    const opt = new mha.AdamW();
    const p = { w: toGpu(new Float32Array(4), [2, 2]) };
    await assert.rejects(opt.step(p, {}, { lr: 1e-3 }), { name: 'TypeError', message: 'AdamW.step: grads: no gradient for \'w\'' });
    await assert.rejects(opt.step(p, { w: toGpu(new Float32Array(4), [4]) }, { lr: 1e-3 }),
      { name: 'RangeError', message: 'AdamW.step: grads[\'w\']: expected the parameter\'s shape [2, 2], got [4]' });
    await assert.rejects(opt.step(p, { w: { data: new Float32Array(4), shape: [2, 2] } }, { lr: 1e-3 }),
      { name: 'TypeError', message: 'AdamW.step: grads[\'w\'] must be { buffer: GPUBuffer, shape } (a GPU tensor), got buffer undefined' });
    await assert.rejects(opt.step(p, p, {}), { name: 'RangeError', message: 'AdamW.step: lr must be a number in [0, Infinity], got undefined' });
    await assert.rejects(opt.step(p, { w: toGpu(new Float32Array(2), [1, 2]) }, { lr: 1e-3 }), /expected the parameter's shape \[2, 2\], got \[1, 2\]/);
    assert.equal(opt.steps, 0, 'a refused step is no step');
    opt.dispose();
    await assert.rejects(opt.step(p, p, { lr: 1e-3 }), { name: 'TypeError', message: 'AdamW.step: this optimizer was disposed' });
  });

  test('loadStateDict from GPU tensors: names, shapes, usage, a quantized layer, a destroyed buffer', async () => {
    const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 });
    const sd = new wasm.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize().stateDict();
    const shapes = layer.stateDictShapes();
    const gpuSd = () => Object.fromEntries(Object.entries(sd).map(([k, v]) => [k, toGpu(v, shapes[k])]));
    assert.throws(() => layer.loadStateDict({ ...gpuSd(), 'out_proj.bias': sd['out_proj.bias'] }),
      /^TypeError: loadStateDict: 'out_proj.bias' must be \{ buffer: GPUBuffer, shape: \[8\] \} like the other weights/);
    assert.throws(() => layer.loadStateDict({ ...gpuSd(), 'out_proj.weight': toGpu(sd['out_proj.weight'], [64]) }),
      { name: 'RangeError', message: 'loadStateDict: \'out_proj.weight\': expected shape [8, 8], got [64]' });
    assert.throws(() => layer.loadStateDict({ ...gpuSd(), extra: toGpu(new Float32Array(1), [1]) }), /^TypeError: loadStateDict: unknown weight 'extra'/);
    const noCopy = device.createBuffer({ size: 32, usage: STORAGE });
    assert.throws(() => layer.loadStateDict({ ...gpuSd(), 'out_proj.bias': { buffer: noCopy, shape: [8] } }),
      /^TypeError: loadStateDict: 'out_proj.bias'.buffer: a GPUBuffer without GPUBufferUsage.COPY_SRC/);
    await assert.rejects(layer.forwardAsync(tensor(random(1), [2, 8])), /the layer has no weights yet/);
    const destroyed = gpuSd();
    destroyed.in_proj_bias.buffer.destroy();
    layer.loadStateDict(destroyed);
    await assert.rejects(layer.forwardAsync(tensor(random(1), [2, 8])), /^TypeError: forwardAsync: loadStateDict: a weight's buffer cannot be used on this layer's device/);
    layer.loadStateDict(gpuSd());
    assert.deepEqual((await layer.forwardAsync(tensor(random(1), [2, 8]))).output.shape, [2, 8]);
    layer.loadStateDict(sd);  // back on the CPU: stateDict() works again
    assert.deepEqual(layer.stateDict().in_proj_bias, sd.in_proj_bias);
    layer.dispose();
    const int8 = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, weightDtype: 'int8' });
    assert.throws(() => int8.loadStateDict(gpuSd()), /^TypeError: loadStateDict: a layer with weightDtype 'int8' loads its weights from Float32Arrays/);
    int8.dispose();
  });
});
