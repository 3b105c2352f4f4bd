// capture and patch on WebGPU (docs/steps.md): every captured step against the wasm backend's
// capture of the same layer and input, over configurations that reach every mask and variant;
// patches of each patchable step (round trips with the step's own values, changed values against
// the wasm backend's patched call); captured steps with outputLocation 'gpu'; with a KV cache
// (float32 and float16); the errors. On both devices (subgroups requested and not).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const devices = await modules();

/** got vs want, element by element: the same non-finite values (-inf logits), else within ~1e-5 relative. */
function close(got, want, what) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.data.length, want.data.length, `${what}: length`);
  const scale = want.data.reduce((m, x) => (Number.isFinite(x) ? Math.max(m, Math.abs(x)) : m), 0);
  want.data.forEach((x, i) => {
    const y = got.data[i];
    if (!Number.isFinite(x)) {
      assert.ok(Object.is(x, y), `${what}[${i}]: ${y} vs ${x}`);
      return;
    }
    assert.ok(Math.abs(y - x) <= 1e-5 * Math.max(Math.abs(x), 0.1 * scale, 1e-3), `${what}[${i}]: ${y} vs ${x} (scale ${scale})`);
  });
}

function closeSteps(got, want, what) {
  assert.deepEqual(Object.keys(got), Object.keys(want), `${what}: the captured steps`);
  for (const name of Object.keys(want)) close(got[name], want[name], `${what} ${name}`);
}

/** A wasm layer and a WebGPU layer of `config` with the same (seeded, random) weights, sinks included. */
function pair(mha, config, seed) {
  const cpu = new wasm.MultiHeadAttention(config).initialize({ seed });
  if (config.sinks) {
    const rand = random(seed + 1);
    const state = cpu.stateDict();
    state.sinks = Float32Array.from(state.sinks, () => 2 * rand());
    cpu.loadStateDict(state);
  }
  const gpu = new mha.MultiHeadAttention(config).loadStateDict(cpu.stateDict());
  return { cpu, gpu };
}

const bool = (shape, blocked) => {
  const data = new Uint8Array(shape.reduce((n, d) => n * d, 1));
  for (const i of blocked) data[i] = 1;
  return { data, shape };
};

// Each reaches some of the variants; together all (masks bool and float, 2-D and per head, GQA,
// rotary with positions, ALiBi, softcap, sinks, sliding window, cross attention with kdim/vdim and
// free head sizes, no bias, dropout, weights per head and averaged).
const CASES = [
  {
    name: 'self, causal, batched, key padding (bool, a fully blocked row), weights per head',
    config: { embedDim: 16, numHeads: 2 },
    inputs: (rand) => [tensor(rand, [2, 5, 16])],
    options: { causal: true, keyPaddingMask: bool([2, 5], [0, 5, 6]), needWeights: true, averageWeights: false },
  },
  {
    name: 'GQA, rotary with positions, ALiBi, float key padding, unbatched',
    config: { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: true, alibi: true },
    inputs: (rand) => [tensor(rand, [6, 16])],
    options: { keyPaddingMask: { data: Float32Array.of(0, -1.5, 0, 0.5, -Infinity, 0), shape: [6] },
      positions: { data: Int32Array.of(3, 4, 5, 9, 10, 11), shape: [6] } },
  },
  {
    name: 'softcap, sinks, sliding window, a float attention mask per head, averaged weights',
    config: { embedDim: 12, numHeads: 3, softcap: 1.5, sinks: true, slidingWindow: 3 },
    inputs: (rand) => [tensor(rand, [2, 4, 12])],
    options: { causal: true, needWeights: true, attnMask: (rand) => tensor(rand, [2 * 3, 4, 4]) },
  },
  {
    name: 'cross attention: kdim, vdim, headDim, valueHeadDim, outputDim, no bias, a bool attention mask',
    config: { embedDim: 16, numHeads: 2, kdim: 8, vdim: 12, headDim: 6, valueHeadDim: 5, outputDim: 7, bias: false },
    inputs: (rand) => [tensor(rand, [2, 3, 16]), tensor(rand, [2, 5, 8]), tensor(rand, [2, 5, 12])],
    options: { attnMask: bool([3, 5], [1, 7, 14]) },
  },
  {
    name: 'dropout while training (its seed), weights after dropout',
    config: { embedDim: 16, numHeads: 2, dropout: 0.4 },
    inputs: (rand) => [tensor(rand, [2, 5, 16])],
    options: { training: true, seed: 11, needWeights: true, averageWeights: false },
  },
];

/** The case's arguments: [query, key, value] and its options (a mask made from `rand` where a function). */
function argumentsOf(c, seed) {
  const rand = random(seed);
  const [q, k = null, v = null] = c.inputs(rand);
  const options = Object.fromEntries(Object.entries(c.options).map(([key, x]) => [key, typeof x === 'function' ? x(rand) : x]));
  return { args: [q, k, v], options };
}

/** A changed copy of a captured step: every value moved, so a patch of any head shows. */
const changed = (t, seed) => {
  const rand = random(seed);
  return { data: Float32Array.from(t.data, (x) => (Number.isFinite(x) ? -0.7 * x + rand() : x)), shape: t.shape };
};

for (const [label, mha] of devices) {
  describe(`capture and patch on WebGPU (${label})`, () => {
    CASES.forEach((c, n) => {
      test(`every step as the wasm backend's: ${c.name}`, async () => {
        const { cpu, gpu } = pair(mha, c.config, 20 + n);
        const { args, options } = argumentsOf(c, 40 + n);
        const want = cpu.forward(...args, { ...options, capture: true });
        const got = await gpu.forwardAsync(...args, { ...options, capture: true });
        closeSteps(got.captured, want.captured, c.name);
        close(got.output, want.output, 'output');
        if (want.weights) close(got.weights, want.weights, 'weights');
        else assert.equal(got.weights, null);
        // A list captures those steps only, in the chain's order (the C++ plan's).
        const some = await gpu.forwardAsync(...args, { ...options, capture: ['result', 'q'] });
        assert.deepEqual(Object.keys(some.captured), ['q', 'result']);
        close(some.captured.result, want.captured.result, 'result alone');
        cpu.dispose();
        gpu.dispose();
      });

      test(`patches: each patchable step round trips, and a changed one matches wasm's: ${c.name}`, async () => {
        const { cpu, gpu } = pair(mha, c.config, 20 + n);
        const { args, options } = argumentsOf(c, 40 + n);
        const clean = await gpu.forwardAsync(...args, { ...options, capture: true });
        const kvHeads = cpu.config.numKvHeads;
        for (const step of ['q', 'k', 'v', 'pattern', 'z']) {
          // Its own values, every head: nothing changes.
          const same = await gpu.forwardAsync(...args, { ...options, patch: { [step]: clean.captured[step] } });
          assert.equal(same.captured, undefined);
          close(same.output, clean.output, `${step} patched with itself`);
          // Changed values for one head (the last; for k and v a key/value head): wasm's result, every step.
          const heads = [(step === 'k' || step === 'v' ? kvHeads : cpu.config.numHeads) - 1];
          const patch = { [step]: changed(clean.captured[step], n), heads };
          const want = cpu.forward(...args, { ...options, patch, capture: true });
          const got = await gpu.forwardAsync(...args, { ...options, patch, capture: true });
          close(got.output, want.output, `${step} patched: output`);
          closeSteps(got.captured, want.captured, `${step} patched`);
          assert.notDeepEqual(Array.from(got.output.data), Array.from(clean.output.data), `${step}: the patch changed the output`);
        }
        cpu.dispose();
        gpu.dispose();
      });
    });

    test('a KV cache (float32 and float16): each call\'s new rows against the whole cache, as wasm\'s', async () => {
      const config = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: true };
      for (const dtype of ['f32', 'f16']) {
        const { cpu, gpu } = pair(mha, config, 5);
        const cpuCache = cpu.createCache({ batch: 2, capacity: 8, dtype });
        const gpuCache = gpu.createCache({ batch: 2, capacity: 8, dtype });
        const rand = random(6);
        for (const [L, patchK] of [[3, false], [2, true], [1, false]]) {
          const x = tensor(rand, [2, L, 16]);
          const want = cpu.forward(x, null, null, { cache: cpuCache, capture: true, needWeights: true });
          const got = await gpu.forwardAsync(x, null, null, { cache: gpuCache, capture: true, needWeights: true });
          assert.deepEqual(got.captured.k.shape, [2, 2, gpuCache.length, 4]);
          closeSteps(got.captured, want.captured, `${dtype} cache, ${L} new`);
          close(got.output, want.output, `${dtype} cache, ${L} new: output`);
          close(got.weights, want.weights, `${dtype} cache, ${L} new: weights`);
          if (patchK) {  // (a k patch changes this call only: the caches keep what was projected)
            const patch = { k: changed(want.captured.k, 3), heads: [0] };
            cpuCache.truncate(cpuCache.length - L);
            gpuCache.truncate(gpuCache.length - L);
            const wantPatched = cpu.forward(x, null, null, { cache: cpuCache, patch });
            const gotPatched = await gpu.forwardAsync(x, null, null, { cache: gpuCache, patch });
            close(gotPatched.output, wantPatched.output, `${dtype} cache, k patched`);
          }
        }
        cpu.dispose();
        gpu.dispose();
      }
    });

    test('a cross-attention cache: the steps against what setKeyValue put there, and a v patch for this call only', async () => {
      const config = { embedDim: 16, numHeads: 2, kdim: 8, vdim: 12 };
      const { cpu, gpu } = pair(mha, config, 12);
      const rand = random(13);
      const key = tensor(rand, [2, 5, 8]), value = tensor(rand, [2, 5, 12]);
      const cpuCache = cpu.createCache({ batch: 2, capacity: 7 }).setKeyValue(key, value);
      const gpuCache = gpu.createCache({ batch: 2, capacity: 7 }).setKeyValue(key, value);
      const q = tensor(rand, [2, 3, 16]);
      const want = cpu.forward(q, null, null, { cache: cpuCache, capture: true });
      const got = await gpu.forwardAsync(q, null, null, { cache: gpuCache, capture: true });
      closeSteps(got.captured, want.captured, 'cross cache');
      const patch = { v: changed(want.captured.v, 4), heads: [1] };
      close((await gpu.forwardAsync(q, null, null, { cache: gpuCache, patch })).output,
        cpu.forward(q, null, null, { cache: cpuCache, patch }).output, 'cross cache, v patched');
      close((await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output, want.output, 'the cache keeps its values');
      cpu.dispose();
      gpu.dispose();
    });

    test('Keras\' callAsync, and a layer of int8 weights (result from out_proj dequantized): the wasm backend\'s steps', async () => {
      const rand = random(8);
      const config = { numHeads: 2, keyDim: 3, valueDim: 4, queryDim: 6 };
      const cpuKeras = new wasm.KerasMultiHeadAttention(config), gpuKeras = new mha.KerasMultiHeadAttention(config);
      const weights = Object.values(cpuKeras.weightShapes()).map((shape) => tensor(rand, shape));
      cpuKeras.setWeights(weights);
      gpuKeras.setWeights(weights);
      const x = tensor(rand, [2, 4, 6]);
      const patch = { z: tensor(rand, [2, 4, 2, 4]), heads: [0] };
      for (const options of [{ capture: true, useCausalMask: true }, { capture: ['pattern', 'result'], patch }]) {
        const want = await cpuKeras.callAsync(x, x, null, options);
        const got = await gpuKeras.callAsync(x, x, null, options);
        close(got.output, want.output, 'Keras output');
        closeSteps(got.captured, want.captured, 'Keras');
      }
      const { cpu, gpu } = pair(mha, { embedDim: 16, numHeads: 2, weightDtype: 'int8' }, 9);
      const q = tensor(rand, [1, 9, 16]);
      const want = cpu.forward(q, null, null, { capture: ['pattern', 'z', 'result'], causal: true });
      const got = await gpu.forwardAsync(q, null, null, { capture: ['pattern', 'z', 'result'], causal: true });
      closeSteps(got.captured, want.captured, 'int8');
      close(got.output, want.output, 'int8 output');
      for (const layer of [cpuKeras, gpuKeras, cpu, gpu]) layer.dispose();
    });

    test('capture with grad: the steps as wasm\'s, and backwardAsync the wasm backward', async () => {
      const c = CASES[1];  // (GQA, rotary, ALiBi, a float key padding mask)
      const { cpu, gpu } = pair(mha, c.config, 21);
      const { args, options } = argumentsOf(c, 41);
      const want = cpu.forward(...args, { ...options, grad: true, capture: ['k', 'pattern', 'z'] });
      const got = await gpu.forwardAsync(...args, { ...options, grad: true, capture: ['k', 'pattern', 'z'] });
      closeSteps(got.captured, want.captured, 'with grad');
      close(got.output, want.output, 'with grad: output');
      const dOut = tensor(random(5), want.output.shape);
      const [wantGrad, gotGrad] = [want.backward(dOut), await got.backwardAsync(dOut)];
      const within = (a, b, what) => b.forEach((x, i) => assert.ok(Math.abs(a[i] - x) <= 1e-4 * (1 + Math.abs(x)), `${what}[${i}]: ${a[i]} vs ${x}`));
      within(gotGrad.query.data, wantGrad.query.data, 'd query');
      for (const [name, g] of Object.entries(wantGrad.params)) within(gotGrad.params[name], g, `d ${name}`);
      cpu.dispose();
      gpu.dispose();
    });

    test('outputLocation \'gpu\': the captured steps are GPU tensors holding the same values', async () => {
      const c = CASES[0];
      const { cpu, gpu } = pair(mha, c.config, 20);
      const { args, options } = argumentsOf(c, 40);
      const want = await gpu.forwardAsync(...args, { ...options, capture: ['k', 'pattern', 'z'] });
      const got = await gpu.forwardAsync(...args, { ...options, capture: ['k', 'pattern', 'z'], outputLocation: 'gpu' });
      assert.deepEqual(Object.keys(got.captured), ['k', 'pattern', 'z']);
      for (const [name, t] of Object.entries(got.captured)) {
        assert.ok(t.buffer instanceof GPUBuffer, name);
        assert.deepEqual(t.shape, want.captured[name].shape);
        assert.deepEqual(await t.read(), want.captured[name].data, name);
        t.dispose();
      }
      got.output.dispose();
      got.weights.dispose();
      // Activation patching on the GPU: z captured there patches another input's call, as its CPU copy does.
      const other = tensor(random(77), args[0].shape);
      const z = (await gpu.forwardAsync(other, null, null, { ...options, capture: ['z'], outputLocation: 'gpu' })).captured.z;
      const onCpu = await gpu.forwardAsync(...args, { ...options, patch: { z: { data: await z.read(), shape: z.shape }, heads: [1] } });
      const onGpu = await gpu.forwardAsync(...args, { ...options, patch: { z: { buffer: z.buffer, shape: z.shape }, heads: [1] } });
      assert.deepEqual(onGpu.output.data, onCpu.output.data);
      close(onGpu.output, cpu.forward(...args, { ...options, patch: { z: { data: await z.read(), shape: z.shape }, heads: [1] } }).output, 'GPU patch vs wasm');
      const [, otherDevice] = devices.find(([, m]) => m !== mha);
      const foreign = otherDevice.device.createBuffer({ size: z.buffer.size, usage: 0x80 | 0x08 });
      const noStorage = mha.device.createBuffer({ size: z.buffer.size, usage: 0x08 | 0x04 });
      for (const [buffer, error] of [
        [foreign, { name: 'TypeError', message: /^forwardAsync: patch\.z\.buffer cannot be used on this layer's device/ }],
        [noStorage, { name: 'TypeError', message: /^forwardAsync: patch\.z\.buffer: a GPUBuffer without GPUBufferUsage\.STORAGE/ }],
      ]) await assert.rejects(gpu.forwardAsync(...args, { ...options, patch: { z: { buffer, shape: z.shape } } }), error);
      await assert.rejects(gpu.forwardAsync(...args, { ...options, patch: { z: { buffer: z.buffer, shape: [2, 5, 16] } } }),
        { name: 'RangeError', message: 'forwardAsync: patch.z: expected the step\'s shape [B, L, H, Dv] = [2, 5, 2, 8], got [2, 5, 16]' });
      for (const buffer of [foreign, noStorage]) buffer.destroy();
      z.dispose();
      cpu.dispose();
      gpu.dispose();
    });

    test('bad capture and patch options: the wasm backend\'s errors; a patch with grad, a TypeError that says so', async () => {
      const config = { embedDim: 16, numHeads: 2 };
      const { cpu, gpu } = pair(mha, config, 3);
      const rand = random(4);
      const x = tensor(rand, [2, 3, 16]);
      const z = tensor(rand, [2, 3, 2, 8]);
      const failure = async (fn) => {
        try {
          await fn();
        } catch (error) {
          return [error.name, error.message.replace(/^forward(Async)?: /, '')];
        }
        return null;
      };
      const rows = [
        { capture: ['z', 'attention'] },
        { capture: 'z' },
        { patch: { heads: [0] } },
        { patch: { z, q: tensor(rand, [2, 2, 3, 8]) } },
        { patch: { scores: tensor(rand, [2, 2, 3, 3]) } },
        { patch: { z: tensor(rand, [2, 3, 16]) } },
        { patch: { z, heads: [2] } },
        { patch: { z, heads: [1, 1] } },
        { patch: { z, heads: 'all' } },
        { patch: { z: { data: [1, 2], shape: [2] } } },
      ];
      for (const options of rows) {
        const want = await failure(() => cpu.forward(x, null, null, options));
        assert.ok(want, JSON.stringify(options));
        assert.deepEqual(await failure(() => gpu.forwardAsync(x, null, null, options)), want);
      }
      assert.deepEqual(await failure(() => gpu.forwardAsync(x, null, null, { patch: { z }, grad: true })), ['TypeError',
        'patch: not with grad: true on the WebGPU backend yet (its backward pass does not hold the patched heads '
        + 'constant); use the wasm backend for gradients through a patch']);
      // Refused calls leave the layer working.
      close((await gpu.forwardAsync(x, null, null, { patch: { z } })).output, cpu.forward(x, null, null, { patch: { z } }).output, 'after errors');
      cpu.dispose();
      gpu.dispose();
    });
  });
}
