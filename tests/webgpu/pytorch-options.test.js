// PyTorch's nn.MultiheadAttention options on the WebGPU backend (issue 40): sequence-first tensors
// (batchFirst: false), addBiasKv, addZeroAttn and the static keys and values, on the paths the
// fixture port (pytorch-mha.test.js: forwardAsync and backwardAsync against torch) does not take:
// `out`, outputLocation 'gpu', GPU input tensors and gradients, KV caches, capture, weights loaded
// from GPU tensors. Each is checked against the wasm layer on the same weights; a combination
// without a meaning is refused by name, in the wasm layer's words (the C++ plan's).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { worstError } from '../js/fixtures.js';
import { modules } from './devices.js';

const [[, mha]] = await modules();
const wasm = await init();
const { device } = mha;
const STORAGE = 0x80, COPY_SRC = 0x04, COPY_DST = 0x08;

const count = (shape) => shape.reduce((n, d) => n * d, 1);
const input = (shape, phase) => ({ data: Float32Array.from({ length: count(shape) }, (_, i) => Math.sin(0.7 * i + phase)), shape });
const onGpu = ({ data, shape }) => {
  const buffer = device.createBuffer({ size: Math.max(16, data.byteLength), usage: STORAGE | COPY_SRC | COPY_DST });
  device.queue.writeBuffer(buffer, 0, data);
  return { buffer, shape };
};

function close(got, want, what, bound = { absolute: 2e-5, relative: 2e-4 }) {
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstError(got, want, bound);
  assert.ok(e.ratio <= 1, `${what}[${e.index}] = ${got[e.index]}, wasm ${want[e.index]}`);
}

/** A WebGPU layer and a wasm layer of `config` with the same seeded weights. */
function pair(config) {
  const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 5 });
  const gpu = new mha.MultiHeadAttention(config).loadStateDict(cpu.stateDict());
  return { cpu, gpu, dispose: () => { cpu.dispose(); gpu.dispose(); } };
}

/** forwardAsync and backwardAsync against forward and backward: output, weights and every gradient. */
async function sameAsWasm({ cpu, gpu }, q, k, v, options = {}) {
  const want = cpu.forward(q, k, v, { ...options, grad: true });
  const got = await gpu.forwardAsync(q, k, v, { ...options, grad: true });
  assert.deepEqual(got.output.shape, want.output.shape);
  close(got.output.data, want.output.data, 'output');
  if (want.weights) close(got.weights.data, want.weights.data, 'weights');
  const dOut = input(want.output.shape, 9);
  const wantGrads = want.backward(dOut);
  const grads = await got.backwardAsync(dOut);
  for (const name of ['query', 'key', 'value']) {
    if (!wantGrads[name]) continue;
    assert.deepEqual(grads[name].shape, wantGrads[name].shape, `d${name} shape`);
    close(grads[name].data, wantGrads[name].data, `d${name}`);
  }
  assert.deepEqual(Object.keys(grads.params), Object.keys(wantGrads.params));
  for (const [name, g] of Object.entries(wantGrads.params)) close(grads.params[name], g, `d${name}`);
  return grads;
}

const layers = [];
const track = (p) => { layers.push(p); return p; };
after(() => { for (const p of layers) p.dispose(); });

describe('batchFirst: false (PyTorch\'s sequence-first [L, B, E] tensors)', () => {
  const config = { embedDim: 8, numHeads: 2, batchFirst: false };

  test('self- and cross-attention, masks in PyTorch\'s shapes, forward and gradients as the wasm layer\'s', async () => {
    const p = track(pair(config));
    const q = input([3, 2, 8], 1);  // L = 3, B = 2
    await sameAsWasm(p, q, null, null, { needWeights: true, averageWeights: false,
      keyPaddingMask: { data: Uint8Array.from([0, 0, 1, 0, 0, 0]), shape: [2, 3] } });
    const k = input([4, 2, 8], 2), v = input([4, 2, 8], 3);  // S = 4
    await sameAsWasm(p, q, k, v, { attnMask: { data: Uint8Array.from({ length: 12 }, (_, i) => (i % 5 === 4 ? 1 : 0)), shape: [3, 4] } });
  });

  test('out, outputLocation \'gpu\', GPU inputs and gradients left on the GPU', async () => {
    const { cpu, gpu } = track(pair(config));
    const q = input([3, 2, 8], 1);
    const want = cpu.forward(q, null, null, { grad: true });
    const out = new Float32Array(48);
    const r = await gpu.forwardAsync(q, null, null, { out });
    assert.equal(r.output.data, out);
    close(out, want.output.data, 'out');
    const onDevice = await gpu.forwardAsync(onGpu(q), null, null, { outputLocation: 'gpu', grad: true });
    assert.deepEqual(onDevice.output.shape, [3, 2, 8]);
    close(await onDevice.output.read(), want.output.data, 'GPU output');
    const dOut = input([3, 2, 8], 9);
    const grads = await onDevice.backwardAsync(onGpu(dOut));
    assert.deepEqual(grads.query.shape, [3, 2, 8]);
    close(await grads.query.read(), want.backward(dOut).query.data, 'dquery on the GPU');
    onDevice.output.dispose();
    grads.query.dispose();
    for (const t of Object.values(grads.params)) t.dispose();
  });

  test('a KV cache: prefill then one token at a time, sequence-first', async () => {
    const { cpu, gpu } = track(pair(config));
    const cpuCache = cpu.createCache({ batch: 2, capacity: 5 }), gpuCache = gpu.createCache({ batch: 2, capacity: 5 });
    for (const [L, phase] of [[3, 1], [1, 2], [1, 3]]) {
      const q = input([L, 2, 8], phase);
      const got = await gpu.forwardAsync(q, null, null, { cache: gpuCache });
      assert.deepEqual(got.output.shape, [L, 2, 8]);
      close(got.output.data, cpu.forward(q, null, null, { cache: cpuCache }).output.data, `output of ${L} tokens`);
    }
  });

  test('a cross-attention cache: setKeyValue takes [S, B, kdim] keys and values', async () => {
    const { cpu, gpu } = track(pair({ ...config, kdim: 5, vdim: 6 }));
    const cpuCache = cpu.createCache({ batch: 2, capacity: 4 }), gpuCache = gpu.createCache({ batch: 2, capacity: 4 });
    const k = input([4, 2, 5], 2), v = input([4, 2, 6], 3);
    cpuCache.setKeyValue(k, v);
    gpuCache.setKeyValue(k, v);
    const q = input([1, 2, 8], 1);
    close((await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output.data, cpu.forward(q, null, null, { cache: cpuCache }).output.data, 'output');
  });

  test('capture: the steps keep their batch-first layouts, the result as the wasm layer\'s', async () => {
    const { cpu, gpu } = track(pair(config));
    const q = input([3, 2, 8], 1);
    const want = cpu.forward(q, null, null, { capture: ['q', 'pattern', 'z'] });
    const got = await gpu.forwardAsync(q, null, null, { capture: ['q', 'pattern', 'z'] });
    close(got.output.data, want.output.data, 'output');
    for (const name of ['q', 'pattern', 'z']) {
      assert.deepEqual(got.captured[name].shape, want.captured[name].shape, `${name} shape`);
      close(got.captured[name].data, want.captured[name].data, name);
    }
  });

  test('a shape in the batch-first layout is refused as the wasm layer refuses it', async () => {
    const { gpu } = track(pair(config));
    await assert.rejects(gpu.forwardAsync(input([3, 2, 8], 1), input([2, 4, 8], 2), input([4, 2, 8], 3)),
      { message: /^forwardAsync: key: expected shape \[S, B, kdim\]/ });
  });
});

describe('addBiasKv and addZeroAttn (PyTorch\'s appended key and value rows)', () => {
  for (const extra of [{ addBiasKv: true }, { addZeroAttn: true }, { addBiasKv: true, addZeroAttn: true }]) {
    test(`${Object.keys(extra).join(' + ')}: forward, masks padded, gradients (bias_k, bias_v) as the wasm layer's`, async () => {
      const p = track(pair({ embedDim: 8, numHeads: 2, kdim: 5, vdim: 6, ...extra }));
      const q = input([2, 3, 8], 1), k = input([2, 4, 5], 2), v = input([2, 4, 6], 3);
      const grads = await sameAsWasm(p, q, k, v, { needWeights: true,
        keyPaddingMask: { data: Uint8Array.from([0, 1, 0, 0, 1, 1, 1, 1]), shape: [2, 4] },  // (row 2: every given key masked)
        attnMask: { data: Float32Array.from({ length: 12 }, (_, i) => -0.1 * i), shape: [3, 4] } });
      if (extra.addBiasKv) assert.deepEqual([grads.params.bias_k.length, grads.params.bias_v.length], [8, 8]);
    });
  }

  test('with grouped-query heads (numKvHeads 1), unbatched [L, E] calls and ragged batches', async () => {
    const p = track(pair({ embedDim: 8, numHeads: 2, numKvHeads: 1, addBiasKv: true, addZeroAttn: true }));
    await sameAsWasm(p, input([2, 3, 8], 1), input([2, 4, 8], 2), input([2, 4, 8], 3), { needWeights: true, averageWeights: false });
    await sameAsWasm(p, input([3, 8], 1), null, null, { keyPaddingMask: { data: Uint8Array.from([1, 0, 1]), shape: [3] } });
    const ragged = { ...input([5, 8], 4), lengths: [2, 3] };
    const got = await p.gpu.forwardAsync(ragged, null, null, { needWeights: true });
    const want = p.cpu.forward(ragged, null, null, { needWeights: true });
    assert.deepEqual([...got.output.lengths], [2, 3]);
    close(got.output.data, want.output.data, 'ragged output');
    got.weights.forEach((w, i) => close(w.data, want.weights[i].data, `ragged weights ${i}`));
  });

  test('weights loaded from GPU tensors carry bias_k and bias_v', async () => {
    const { cpu, gpu } = track(pair({ embedDim: 8, numHeads: 2, addBiasKv: true }));
    const shapes = cpu.stateDictShapes();
    gpu.loadStateDict(Object.fromEntries(Object.entries(cpu.stateDict()).map(([name, data]) => [name, onGpu({ data, shape: shapes[name] })])));
    const q = input([1, 3, 8], 1);
    close((await gpu.forwardAsync(q)).output.data, cpu.forward(q).output.data, 'output');
  });

  test('refused by name where they have no meaning: a cache, causal, capture', async () => {
    const { gpu } = track(pair({ embedDim: 8, numHeads: 2, addZeroAttn: true }));
    const q = input([1, 3, 8], 1);
    assert.throws(() => gpu.createCache({ capacity: 4 }), { message: /^createCache: addZeroAttn: a layer that appends keys takes no cache/ });
    await assert.rejects(gpu.forwardAsync(q, null, null, { causal: true }), { message: /^forwardAsync: causal: not with addZeroAttn/ });
    await assert.rejects(gpu.forwardAsync(q, null, null, { capture: ['q'] }), { message: /^forwardAsync: capture: not with addZeroAttn yet/ });
  });
});

describe('staticK and staticV (PyTorch\'s static_k / static_v: per-head keys and values)', () => {
  const staticRows = (B, S, D, phase) => input([B * 2, S, D], phase);

  test('each alone and both, with addZeroAttn and batchFirst: false: forward and gradients as the wasm layer\'s', async () => {
    for (const config of [{}, { addZeroAttn: true }, { batchFirst: false }]) {
      const p = track(pair({ embedDim: 8, numHeads: 2, ...config }));
      const seqFirst = config.batchFirst === false;
      const q = input(seqFirst ? [3, 2, 8] : [2, 3, 8], 1), k = input(seqFirst ? [4, 2, 8] : [2, 4, 8], 2);
      for (const which of [['staticK'], ['staticV'], ['staticK', 'staticV']]) {
        const options = Object.fromEntries(which.map((name, i) => [name, staticRows(2, 4, 4, 5 + i)]));
        await sameAsWasm(p, q, k, k, { ...options, needWeights: true });
      }
    }
  });

  test('with grouped-query heads: [B*numKvHeads, S, headDim]', async () => {
    const p = track(pair({ embedDim: 8, numHeads: 2, numKvHeads: 1 }));
    const q = input([2, 3, 8], 1);
    await sameAsWasm(p, q, q, q, { staticK: input([2, 3, 4], 5), staticV: input([2, 3, 4], 6) });
  });

  test('refused in PyTorch\'s words where it refuses them, and with capture', async () => {
    const { gpu } = track(pair({ embedDim: 8, numHeads: 2, addBiasKv: true }));
    const q = input([2, 3, 8], 1);
    await assert.rejects(gpu.forwardAsync(q, q, q, { staticK: staticRows(2, 3, 4, 5) }), { message: /bias cannot be added to static key\./ });
    const plain = track(pair({ embedDim: 8, numHeads: 2 })).gpu;
    await assert.rejects(plain.forwardAsync(q, q, q, { staticV: staticRows(3, 3, 4, 5) }), { message: /expecting static_v\.size\(0\) of 4, but got 6/ });
    await assert.rejects(plain.forwardAsync(q, q, q, { staticK: staticRows(2, 3, 4, 5), capture: ['q'] }), { message: /^forwardAsync: capture: not with staticK yet/ });
  });
});
