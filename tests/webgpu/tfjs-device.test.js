// mha-wasm/tfjs on tfjs' webgpu backend in Node (Dawn on SwiftShader, @tensorflow/tfjs-backend-webgpu):
// mhaTfjs(tf, { webgpu: true }) runs the layer's attention on mha-wasm's WebGPU backend on tfjs'
// own device, reading and writing tfjs' GPU tensors; its outputs, gradients and a model.fit equal
// the cpu backend's (tests/js/tfjs-backend-scenario.js), with no buffer mapped during a training step.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gpu } from './devices.js';
import { backendScenario, compareScenarios } from '../js/tfjs-backend-scenario.js';

globalThis.navigator ??= {};
globalThis.navigator.gpu ??= gpu;  // (tfjs-backend-webgpu asks navigator.gpu for its adapter)
const tf = await import('@tensorflow/tfjs');
await import('@tensorflow/tfjs-backend-webgpu');
const { mhaTfjs } = await import('../../bindings/js/tfjs.js');

test('the layer on tfjs-webgpu (its device shared): outputs, gradients and model.fit equal the cpu backend', async () => {
  assert.ok(await tf.setBackend('webgpu'));
  const api = await mhaTfjs(tf, { threads: 1, webgpu: true });
  assert.equal(api.gpu.device, tf.backend().device);
  await tf.setBackend('cpu');  // (the same layer class: on cpu it runs the wasm module)
  const want = await backendScenario(tf, api);
  await tf.setBackend('webgpu');
  const got = await backendScenario(tf, api);
  console.log(`# losses: cpu ${want.losses}, webgpu ${got.losses}`);
  compareScenarios(got, want, assert, { absolute: 1e-5, relative: 1e-4, loss: 5e-3 });
});

test('a forward and backward step of the layer on tfjs-webgpu maps no buffer (no readback), and equals the cpu backend', async () => {
  await tf.setBackend('webgpu');
  const api = await mhaTfjs(tf, { threads: 1, webgpu: true });
  const run = async () => {
    const values = (n, k) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * k));
    const x = tf.variable(tf.mul(tf.tensor(values(2 * 6 * 8, 0.31), [2, 6, 8]), 1));
    const G = tf.mul(tf.tensor(values(2 * 6 * 8, 0.17), [2, 6, 8]), 1);
    const layer = api.multiHeadAttention({ numHeads: 2, keyDim: 4, dropout: 0 });
    layer.apply(x, { value: x });
    layer.setWeights(layer.getWeights().map((w, i) => tf.mul(tf.tensor(values(w.size, 0.05 * (i + 1)), w.shape), 0.3)));
    await Promise.all(layer.getWeights().map((w) => w.data()));  // (everything made; the step starts here)
    let maps = 0;
    const mapAsync = GPUBuffer.prototype.mapAsync;
    GPUBuffer.prototype.mapAsync = function counted(...args) { maps += 1; return mapAsync.apply(this, args); };
    let grads;
    try {
      ({ grads } = tf.variableGrads(() => tf.sum(tf.mul(layer.apply(x, { value: x, useCausalMask: true }), G)),
        [x, ...layer.trainableWeights.map((w) => w.read())]));
    } finally {
      GPUBuffer.prototype.mapAsync = mapAsync;
    }
    const read = await Promise.all(Object.values(grads).map(async (g) => Array.from(await g.data())));
    layer.dispose();
    return { maps, read };
  };
  const onGpu = await run();
  await tf.setBackend('cpu');
  const onCpu = await run();
  await tf.setBackend('webgpu');
  assert.equal(onGpu.maps, 0);
  assert.equal(onGpu.read.length, 9);
  onGpu.read.forEach((g, i) => g.forEach((v, j) => assert.ok(Math.abs(v - onCpu.read[i][j]) <= 1e-5 + 1e-5 * Math.abs(onCpu.read[i][j]),
    `gradient ${i}[${j}]: ${v} vs cpu ${onCpu.read[i][j]}`)));
});
