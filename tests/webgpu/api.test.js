// The WebGPU backend's API: init's errors, the async-only forward, the same input errors as the
// wasm layer, the GPU's own errors (another device's buffer, a destroyed buffer, a lost device,
// a limit), GPU-resident inputs and outputs, weights re-uploaded when they change, and random
// configurations against the float64 oracle.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { PLANNER } from '../../bindings/js/core/planner.js';
import { init } from '../../bindings/js/index.js';
import { attendRow, projectRow } from '../js/float64-attention.js';
import { gpu, modules, openDevice } from './devices.js';
import { random } from './random-data.js';

const wasm = await init();
const STORAGE = 0x80, COPY_DST = 0x08, COPY_SRC = 0x04;

const filled = (n, rand) => Float32Array.from({ length: n }, rand);

describe('init({ backend: webgpu })', () => {
  test('without a GPU object in a runtime without navigator.gpu: an Error saying so', async () => {
    await assert.rejects(init({ backend: 'webgpu' }), /no navigator\.gpu/);
  });
  test('an adapter-less GPU: an Error saying so', async () => {
    await assert.rejects(init({ backend: 'webgpu', gpu: { requestAdapter: async () => null } }), /no WebGPU adapter/);
  });
  test('a device below a limit the kernels need: the limit named', async () => {
    const device = await openDevice(false);
    const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256, maxComputeWorkgroupSizeX: 256,
      maxStorageBuffersPerShaderStage: 4 };
    const weak = Object.create(device, { limits: { value: limits } });
    await assert.rejects(init({ backend: 'webgpu', device: weak }), /maxStorageBuffersPerShaderStage is 4; the kernels need at least 8/);
    device.destroy();
  });
  test('gpu/device without backend webgpu, and an unknown backend: TypeErrors', async () => {
    await assert.rejects(init({ gpu }), { name: 'TypeError', message: /gpu is an option of backend: 'webgpu'/ });
    await assert.rejects(init({ backend: 'cuda' }), { name: 'TypeError', message: /backend must be one of 'wasm', 'webgpu'/ });
  });
  test('init() without backend is still the wasm module', async () => {
    assert.equal((await init()).MultiHeadAttention, wasm.MultiHeadAttention);
  });
});

const both = await modules();  // [label, module]: with subgroups requested, and without
const [[, mha], [, other]] = both;

describe('a WebGPU layer', () => {
  const config = { embedDim: 8, numHeads: 2 };
  const query = { data: filled(2 * 5 * 8, random(1)), shape: [2, 5, 8] };

  test('forward and backward are TypeErrors naming the async calls', () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    assert.throws(() => layer.forward(query), { name: 'TypeError', message: /forwardAsync/ });
    assert.throws(() => layer.backward(), { name: 'TypeError', message: /backwardAsync/ });
    layer.dispose();
  });

  test('bad input: the same errors as the wasm layer', async () => {
    const rows = [
      [{ data: new Float32Array(10), shape: [2, 5] }, null, null, {}],
      [{ data: new Float32Array(18), shape: [2, 1, 9] }, null, null, {}],
      [query, { data: new Float32Array(16), shape: [2, 1, 8] }, null, {}],
      [query, null, null, { keyPaddingMask: { data: new Uint8Array(4), shape: [2, 2] } }],
      [query, null, null, { attnMask: { data: new Float32Array(30), shape: [3, 5, 2] } }],
      [query, null, null, { bogus: 1 }],
      [query, null, null, { causal: 'yes' }],
      [query, null, null, { positions: { data: new Int32Array(10), shape: [2, 5] } }],
    ];
    const cpu = new wasm.MultiHeadAttention(config).initialize();
    const layer = new mha.MultiHeadAttention(config).initialize();
    for (const [q, k, v, options] of rows) {
      let expected;
      try {
        cpu.forward(q, k, v, options);
      } catch (error) {
        expected = error;
      }
      assert.ok(expected, `the wasm layer took ${JSON.stringify(options)}`);
      await assert.rejects(layer.forwardAsync(q, k, v, options), {
        name: expected.name,
        // (the one difference: WebGPU also knows outputLocation)
        message: expected.message.replace(/^forward: /, 'forwardAsync: ').replace(/known options: (.*)$/, 'known options: $1, outputLocation'),
      });
    }
    const empty = new mha.MultiHeadAttention(config);
    await assert.rejects(empty.forwardAsync(query), /forwardAsync: the layer has no weights yet/);
    cpu.dispose();
    layer.dispose();
    empty.dispose();
  });

  test('a GPUBuffer of another device, and a destroyed one: Errors naming the argument', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const foreign = other.device.createBuffer({ size: 320, usage: STORAGE | COPY_DST });
    await assert.rejects(layer.forwardAsync({ buffer: foreign, shape: [2, 5, 8] }), /query\.buffer cannot be used on this layer's device/);
    const destroyed = mha.device.createBuffer({ size: 320, usage: STORAGE | COPY_DST });
    destroyed.destroy();
    await assert.rejects(layer.forwardAsync({ buffer: destroyed, shape: [2, 5, 8] }), /query\.buffer cannot be used/);
    const small = mha.device.createBuffer({ size: 64, usage: STORAGE });
    await assert.rejects(layer.forwardAsync({ buffer: small, shape: [2, 5, 8] }), /query: shape \[2, 5, 8\] needs 320 bytes, but the buffer has 64/);
    const unusable = mha.device.createBuffer({ size: 320, usage: COPY_DST });
    await assert.rejects(layer.forwardAsync({ buffer: unusable, shape: [2, 5, 8] }), /without GPUBufferUsage\.STORAGE/);
    for (const b of [foreign, small, unusable]) b.destroy();
    layer.dispose();
  });

  test('a GPUBuffer with STORAGE usage only (no COPY_SRC) of this device is accepted', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const storageOnly = mha.device.createBuffer({ size: 320, usage: STORAGE | COPY_DST });
    mha.device.queue.writeBuffer(storageOnly, 0, query.data);
    const fromGpu = await layer.forwardAsync({ buffer: storageOnly, shape: [2, 5, 8] });
    const fromCpu = await layer.forwardAsync(query);
    assert.deepEqual(fromGpu.output.shape, [2, 5, 8]);
    assert.deepEqual(fromGpu.output.data, fromCpu.output.data);
    storageOnly.destroy();
    layer.dispose();
  });

  test('a shape above the device limits: a RangeError naming the limit', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const L = 6000;  // weights: 6000 x 6000 floats = 144 MB, above the default 128 MiB binding size
    const long = { data: new Float32Array(L * 8), shape: [1, L, 8] };
    await assert.rejects(layer.forwardAsync(long, null, null, { needWeights: true }),
      { name: 'RangeError', message: /forwardAsync: the weights needs 144000000 bytes, above the device's maxStorageBufferBindingSize/ });
    layer.dispose();
  });

  test('the wasm heap does not bound a WebGPU call: the planner checks its shapes without the heap budget', () => {
    // Weights [1, 40000, 40000] (6.4 GB): more than any wasm heap, so the wasm layer's check
    // refuses it; planForward (the WebGPU layer's) plans the same shapes and accepts it.
    const planner = wasm[PLANNER](config);
    const request = { query: { shape: [1, 40000, 8] }, key: null, value: null, keyPaddingMask: null, attnMask: null, positions: null,
      cache: null, causal: false, needWeights: true, averageWeights: true, grad: false, training: false, seed: 0, weightsBeforeDropout: false };
    assert.equal(planner.checkForward(request, false), false);
    assert.match(planner.lastError(), /the inputs and buffers need .* of WebAssembly memory/);
    assert.equal(planner.planForward(request, false), true);
    assert.deepEqual(planner.plannedOutputShape(), [1, 40000, 8]);
    assert.deepEqual(planner.plannedWeightsShape(), [1, 40000, 40000]);
    // Bad shapes are still the plan's errors, word for word.
    const bad = { ...request, query: { shape: [1, 40000, 9] } };
    assert.equal(planner.checkForward(bad, false), false);
    const words = planner.lastError();
    assert.equal(planner.planForward(bad, false), false);
    assert.equal(planner.lastError(), words);
    planner.delete();
  });

  test('a call the wasm heap could not hold is refused by the GPU limit, named, not by the heap', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const long = { data: new Float32Array(40000 * 8), shape: [1, 40000, 8] };
    await assert.rejects(layer.forwardAsync(long, null, null, { needWeights: true }),
      { name: 'RangeError', message: /forwardAsync: the weights needs 6400000000 bytes, above the device's maxStorageBufferBindingSize/ });
    layer.dispose();
  });

  test('a lost device: an Error naming it, and the layer says it is unusable', async () => {
    const local = await init({ backend: 'webgpu', device: await openDevice(false) });
    const layer = new local.MultiHeadAttention(config).initialize();
    await layer.forwardAsync(query);
    assert.equal(layer.usable, true);
    local.device.destroy();
    await local.device.lost;
    await assert.rejects(layer.forwardAsync(query), /forwardAsync: the GPU device was lost \(destroyed.*this layer is unusable/);
    assert.equal(layer.usable, false);
    assert.equal(local.lost.reason, 'destroyed');
    layer.dispose();
  });
});

describe('GPU-resident tensors', () => {
  test('inputs as { buffer, shape } and outputs left on the GPU chain layers', async () => {
    const rand = random(7);
    const config = { embedDim: 12, numHeads: 3, kdim: 5, vdim: 7 };
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 3 });
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 3 });
    const q = { data: filled(2 * 4 * 12, rand), shape: [2, 4, 12] };
    const k = { data: filled(2 * 6 * 5, rand), shape: [2, 6, 5] };
    const v = { data: filled(2 * 6 * 7, rand), shape: [2, 6, 7] };
    const onGpu = (t) => {
      const buffer = mha.device.createBuffer({ size: t.data.byteLength, usage: STORAGE | COPY_DST | COPY_SRC });
      mha.device.queue.writeBuffer(buffer, 0, t.data);
      return { buffer, shape: t.shape };
    };
    const want = cpu.forward(q, k, v, { needWeights: true, averageWeights: false });
    const got = await layer.forwardAsync(onGpu(q), onGpu(k), onGpu(v), { needWeights: true, averageWeights: false, outputLocation: 'gpu' });
    assert.deepEqual(got.output.shape, [2, 4, 12]);
    assert.deepEqual(got.weights.shape, [2, 3, 4, 6]);
    const output = await got.output.read();
    const weights = await got.weights.read();
    output.forEach((x, i) => assert.ok(Math.abs(x - want.output.data[i]) <= 1e-5 + 1e-4 * Math.abs(want.output.data[i]), `output[${i}]`));
    weights.forEach((x, i) => assert.ok(Math.abs(x - want.weights.data[i]) <= 1e-6, `weights[${i}]`));
    // The output buffer is the next call's query, without leaving the GPU.
    const twice = await layer.forwardAsync(got.output, onGpu(k), onGpu(v));
    const wantTwice = cpu.forward(want.output, k, v);
    twice.output.data.forEach((x, i) => assert.ok(Math.abs(x - wantTwice.output.data[i]) <= 1e-5 + 1e-4 * Math.abs(wantTwice.output.data[i])));
    got.output.dispose();
    got.weights.dispose();
    cpu.dispose();
    layer.dispose();
  });

  test('calls in flight together each get their own results', async () => {
    const config = { embedDim: 8, numHeads: 2 };
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 4 });
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 4 });
    const inputs = [1, 2, 3, 4].map((seed) => ({ data: filled(3 * 8, random(seed)), shape: [3, 8] }));
    const results = await Promise.all(inputs.map((q, n) => layer.forwardAsync(q, null, null, { causal: n % 2 === 0 })));
    results.forEach(({ output }, n) => {
      const want = cpu.forward(inputs[n], null, null, { causal: n % 2 === 0 }).output.data;
      output.data.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i])));
    });
    cpu.dispose();
    layer.dispose();
  });

  test('new weights are uploaded before the next call', async () => {
    const config = { embedDim: 8, numHeads: 2 };
    const q = { data: filled(40, random(9)), shape: [5, 8] };
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 1 });
    const first = (await layer.forwardAsync(q)).output.data;
    layer.initialize({ seed: 2 });
    const second = (await layer.forwardAsync(q)).output.data;
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 2 });
    const want = cpu.forward(q).output.data;
    assert.notDeepEqual(first, second);
    second.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i])));
    layer.dispose();
    cpu.dispose();
  });
});

describe('large and odd head sizes', () => {
  test('headDim 256 (7 keys per tile) and 130 / valueHeadDim 3 match the wasm layer', async () => {
    for (const config of [{ embedDim: 512, numHeads: 2 }, { embedDim: 16, numHeads: 2, headDim: 130, valueHeadDim: 3, outputDim: 5 }]) {
      const rand = random(config.embedDim);
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 6 });
      const layer = new mha.MultiHeadAttention(config).initialize({ seed: 6 });
      const q = { data: filled(2 * 19 * config.embedDim, rand), shape: [2, 19, config.embedDim] };
      const options = { causal: true, needWeights: true, averageWeights: false };
      const want = cpu.forward(q, null, null, options);
      const got = await layer.forwardAsync(q, null, null, options);
      for (const part of ['output', 'weights']) {
        const w = want[part].data;
        got[part].data.forEach((x, i) => assert.ok(Math.abs(x - w[i]) <= 1e-5 + 1e-4 * Math.abs(w[i]), `${part}[${i}]: ${x} vs ${w[i]}`));
      }
      cpu.dispose();
      layer.dispose();
    }
  });
});

describe('dropout', () => {
  test('the same mask as the wasm layer for the same seed (Philox4x32-10 in WGSL), weights after and before it', async () => {
    const rand = random(11);
    const config = { embedDim: 16, numHeads: 4, numKvHeads: 2, dropout: 0.3 };
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 5 });
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 5 });
    const q = { data: filled(2 * 37 * 16, rand), shape: [2, 37, 16] };
    for (const options of [{ seed: 2 ** 40 + 7, averageWeights: false }, { seed: 3, weightsBeforeDropout: true }, { seed: 3 }]) {
      const all = { training: true, needWeights: true, causal: true, ...options };
      const want = cpu.forward(q, null, null, all);
      const got = await layer.forwardAsync(q, null, null, all);
      assert.notDeepEqual(got.output.data, cpu.forward(q, null, null, { causal: true }).output.data, 'dropout changed nothing');
      for (const part of ['output', 'weights']) {
        const w = want[part].data;
        got[part].data.forEach((x, i) => assert.ok(Math.abs(x - w[i]) <= 1e-5 + 1e-4 * Math.abs(w[i]), `${part}[${i}]: ${x} vs ${w[i]}`));
      }
    }
    // Without training, no dropout: the plain forward.
    const plain = (await layer.forwardAsync(q)).output.data;
    cpu.forward(q).output.data.forEach((x, i) => assert.ok(Math.abs(x - plain[i]) <= 1e-5 + 1e-4 * Math.abs(x)));
    cpu.dispose();
    layer.dispose();
  });
});

// Per device: 200 in a run with both (the software adapter takes a few seconds for them).
const RANDOM_CONFIGS = 100;
for (const [label, gpuModule] of both) {
  describe(`random configurations against the float64 oracle (${label})`, () => {
    const rand = random(2026);
    const pick = (values) => values[Math.floor((rand() + 0.5) * values.length)];
    for (let n = 0; n < RANDOM_CONFIGS; n++) {
      const H = pick([1, 2, 3, 4]), Dh = pick([1, 3, 4, 8, 16]), E = H * Dh;
      const B = pick([1, 2, 3]), L = pick([1, 2, 7, 33, 70]), S = pick([1, 5, 40, 65]);
      test(`B ${B}, L ${L}, S ${S}, E ${E}, H ${H} (cross)`, async () => {
        const layer = new gpuModule.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: n });
        const sd = layer.stateDict();
        const q = filled(B * L * E, rand), kv = filled(B * S * E, rand);
        const { output } = await layer.forwardAsync({ data: q, shape: [B, L, E] }, { data: kv, shape: [B, S, E] },
          { data: kv, shape: [B, S, E] });
        const w = sd.in_proj_weight, bias = sd.in_proj_bias;
        for (let b = 0; b < B; b++) {
          const keys = [], values = [];
          for (let j = 0; j < S; j++) {
            keys.push(projectRow(kv, b * S + j, w, bias, E, E));
            values.push(projectRow(kv, b * S + j, w, bias, 2 * E, E));
          }
          for (const i of [0, L - 1, Math.floor(L / 2)]) {
            const qRow = projectRow(q, b * L + i, w, bias, 0, E);
            const want = attendRow(qRow, keys, values, H, sd['out_proj.weight'], sd['out_proj.bias']);
            for (let e = 0; e < E; e++) {
              const got = output.data[(b * L + i) * E + e];
              assert.ok(Math.abs(got - want[e]) <= 1e-5 + 1e-4 * Math.abs(want[e]), `[${b}, ${i}, ${e}]: ${got} vs ${want[e]}`);
            }
          }
        }
        layer.dispose();
      });
    }
  });
}
