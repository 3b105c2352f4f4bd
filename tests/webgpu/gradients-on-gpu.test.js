// Gradients left on the GPU: backwardAsync(dOut, { outputLocation: 'gpu' }) resolves to the wasm
// backward's names and shapes as GPU tensors ({ buffer, shape, read(), dispose() }), nothing read
// back; their values are the wasm layer's backward within the gradient bound of backward.test.js.
// On a device with subgroups and one without. Small shapes: the software adapter is slow.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { loadFixtures, worstGradientError } from '../js/fixtures.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const { gradientTolerance } = loadFixtures();
const STORAGE = 0x80, COPY_DST = 0x08, COPY_SRC = 0x04;

/** Asserts got (a GPU tensor) has want's shape and, read back, want's values within the gradient bound. */
async function expectGpuGradient(got, want, shape, reductionLength, what) {
  assert.ok(got && typeof got.buffer?.mapAsync === 'function', `${what}: a GPUBuffer`);
  assert.deepEqual(got.shape, shape, `${what}: shape`);
  const values = await got.read();
  assert.ok(values instanceof Float32Array && values.length === want.length, `${what}: ${want.length} floats read back`);
  const e = worstGradientError(values, want, gradientTolerance, reductionLength);
  assert.ok(e.ratio <= 1, `${what}[${e.index}]: got ${values[e.index]}, want ${want[e.index]} (${e.ratio.toFixed(1)}x the bound)`);
}

const CASES = [
  ['self-attention, causal, with bias', { embedDim: 8, numHeads: 2 }, { B: 2, L: 5 }, { causal: true }],
  ['cross-attention, kdim/vdim, no bias', { embedDim: 8, numHeads: 2, kdim: 6, vdim: 4, bias: false }, { B: 2, L: 3, S: 5 }, {}],
  ['GQA, sinks, free head sizes, outputDim', { embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 5, valueHeadDim: 3, outputDim: 7, sinks: true },
    { B: 1, L: 6 }, { causal: true }],
];

for (const [label, mha] of await modules()) {
  describe(`backwardAsync(dOut, { outputLocation: 'gpu' }) against the wasm backward (${label})`, () => {
    for (const [name, config, { B, L, S }, options] of CASES) {
      test(name, async () => {
        const rand = random(L * 31 + (S ?? 0));
        const reference = new wasm.MultiHeadAttention(config).initialize({ seed: 3 });
        const layer = new mha.MultiHeadAttention(config).loadStateDict(reference.stateDict());
        const c = reference.config;
        const q = tensor(rand, [B, L, c.embedDim]);
        const k = S ? tensor(rand, [B, S, c.kdim]) : null;
        const v = S ? tensor(rand, [B, S, c.vdim]) : null;
        const want = reference.forward(q, k, v, { ...options, grad: true });
        const dOut = tensor(rand, want.output.shape);
        const wantGrads = want.backward(dOut);
        const r = await layer.forwardAsync(q, k, v, { ...options, grad: true });
        const g = await r.backwardAsync(dOut, { outputLocation: 'gpu' });
        assert.equal(r.released, true);
        const reduction = Math.max(L, S ?? 0, c.embedDim, c.headDim);
        for (const input of ['query', 'key', 'value']) {
          if (!wantGrads[input]) assert.equal(g[input], null, `d${input} is null`);
          else await expectGpuGradient(g[input], wantGrads[input].data, wantGrads[input].shape, reduction, `d${input}`);
        }
        const shapes = layer.stateDictShapes();
        assert.deepEqual(Object.keys(g.params), Object.keys(shapes), 'the parameters, named as stateDictShapes()');
        for (const [key, shape] of Object.entries(shapes)) {
          await expectGpuGradient(g.params[key], wantGrads.params[key], shape, reduction, `d${key}`);
        }
        // Each buffer is the caller's (dispose() destroys it), one buffer per gradient.
        const all = [g.query, g.key, g.value, ...Object.values(g.params)].filter(Boolean);
        assert.equal(new Set(all.map((t) => t.buffer)).size, all.length, 'a buffer per gradient');
        for (const t of all) t.dispose();
        layer.dispose();
        reference.dispose();
      });
    }

    test('a GPU dOut and GPU inputs: the gradients of the same call from arrays; the layer\'s buffers are not the results\'', async () => {
      const { device } = mha;
      const rand = random(5);
      const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize({ seed: 9 });
      const x = tensor(rand, [2, 4, 8]);
      const dOut = tensor(rand, [2, 4, 8]);
      const toGpu = (t) => {
        const buffer = device.createBuffer({ size: t.data.byteLength, usage: STORAGE | COPY_DST | COPY_SRC });
        device.queue.writeBuffer(buffer, 0, t.data);
        return { buffer, shape: t.shape };
      };
      const want = await (await layer.forwardAsync(x, null, null, { grad: true, causal: true })).backwardAsync(dOut);
      const r = await layer.forwardAsync(toGpu(x), null, null, { grad: true, causal: true, outputLocation: 'gpu' });
      const g = await r.backwardAsync(toGpu(dOut), { outputLocation: 'gpu' });
      assert.deepEqual(await g.query.read(), want.query.data);
      for (const [key, values] of Object.entries(want.params)) assert.deepEqual(await g.params[key].read(), values, key);
      // The layer runs on after the caller disposed every gradient.
      for (const t of [g.query, ...Object.values(g.params), r.output]) t.dispose();
      assert.deepEqual((await layer.forwardAsync(x, null, null, { causal: true })).output.shape, [2, 4, 8]);
      layer.dispose();
    });

    test('bad options: named, and the result is still usable', async () => {
      const layer = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize();
      const x = tensor(random(2), [2, 8]);
      const r = await layer.forwardAsync(x, null, null, { grad: true });
      await assert.rejects(r.backwardAsync(x, { outputLocation: 'GPU' }),
        { name: 'TypeError', message: "backwardAsync: outputLocation must be 'cpu' or 'gpu', got string GPU" });
      await assert.rejects(r.backwardAsync(x, { location: 'gpu' }),
        { name: 'TypeError', message: 'backwardAsync: options: unknown option \'location\'; known options: outputLocation' });
      await assert.rejects(r.backwardAsync(x, 'gpu'), { name: 'TypeError', message: 'backwardAsync: options must be an object, got string gpu' });
      await assert.rejects(r.backwardAsync({ data: new Float32Array(15) }, { outputLocation: 'gpu' }),
        { name: 'RangeError', message: 'backwardAsync: dOut: shape [2, 8] needs 16 elements, but data has 15' });
      assert.equal(r.released, false);
      const g = await r.backwardAsync(x, { outputLocation: 'cpu' });
      assert.ok(g.query.data instanceof Float32Array, "outputLocation 'cpu': Float32Arrays");
      layer.dispose();
    });
  });
}
