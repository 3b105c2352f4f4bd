// The backward pass on WebGPU (forwardAsync with grad: true, then backwardAsync): every PyTorch
// gradient fixture (self/cross, kdim/vdim, bias off, causal, masks bool/float 2-D/3-D, fully
// masked rows, NaN at padded keys, GQA/MQA, free head sizes, rotary, window, ALiBi, softcap,
// sinks) against PyTorch's autograd with the wasm path's bound and against the wasm layer's
// backward, on a device with subgroups and one without; dropout with the forward's mask against
// the wasm layer; GPU-resident inputs and dOut; a finite-difference check in float64; lifetimes.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { attendRow, projectRow } from '../js/float64-attention.js';
import { caseOptions, layerConfig, loadFixtures, worstError, worstGradientError } from '../js/fixtures.js';
import { modules } from './devices.js';
import { random } from './random-data.js';

const wasm = await init();
const { tolerance, gradientTolerance, gradientCases } = loadFixtures();
const STORAGE = 0x80, COPY_DST = 0x08, COPY_SRC = 0x04;
const product = (shape) => shape.reduce((n, d) => n * d, 1);
let worstRatio = 0, worstAt = '';

const filled = (n, rand) => Float32Array.from({ length: n }, rand);

/** Asserts got is within the gradient bound of want (index.json's gradientTolerance). */
function expectGradient(got, want, reductionLength, what) {
  assert.ok(got instanceof Float32Array, `${what}: a Float32Array, got ${got?.constructor?.name}`);
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstGradientError(got, want, gradientTolerance, reductionLength);
  if (e.ratio > worstRatio) { worstRatio = e.ratio; worstAt = what; }
  assert.ok(e.ratio <= 1, `${what}[${e.index}]: got ${got[e.index]}, want ${want[e.index]} `
    + `(off by ${e.absolute.toExponential(3)}, ${e.ratio.toFixed(1)}x the bound)`);
}

/** Every gradient of `got` against `want` (both { query, key, value, params }). */
function expectGradients(got, want, reductionLength, label) {
  for (const input of ['query', 'key', 'value']) {
    if (!want[input]) {
      assert.equal(got[input], null, `${label}: d${input} is null`);
      continue;
    }
    assert.deepEqual(got[input].shape, want[input].shape, `${label}: d${input}'s shape`);
    expectGradient(got[input].data, want[input].data, reductionLength, `${label} d${input}`);
  }
  assert.deepEqual(Object.keys(got.params), Object.keys(want.params), `${label}: the parameters' names`);
  for (const key of Object.keys(want.params)) expectGradient(got.params[key], want.params[key], reductionLength, `${label} d${key}`);
}

const devices = await modules();
for (const [label, mha] of devices) {
  describe(`gradients on WebGPU against PyTorch and the wasm layer (${label})`, () => {
    for (const c of gradientCases) {
      test(c.name, async () => {
        const t = c.tensors;
        const layer = new mha.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
        const reference = new wasm.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
        try {
          const r = await layer.forwardAsync(t.query, t.key ?? null, t.value ?? null, caseOptions(c, { grad: true }));
          assert.equal(r.released, false);
          const out = worstError(r.output.data, t.output.data, tolerance);
          assert.ok(out.ratio <= 1, `output[${out.index}] off by ${out.absolute}`);
          if (c.options.needWeights) {
            const w = worstError(r.weights.data, t.weights.data, tolerance);
            assert.ok(w.ratio <= 1, `weights[${w.index}] off by ${w.absolute}`);
          } else {
            assert.equal(r.weights, null);
          }
          const dOut = { data: t.gradOutput.data, shape: r.output.shape };
          const g = await r.backwardAsync(dOut);
          assert.equal(r.released, true);
          const torch = {
            query: c.gradients.query, key: c.gradients.key ?? null, value: c.gradients.value ?? null, params: c.paramGradients,
          };
          expectGradients(g, torch, c.reductionLength, 'vs torch');
          const w = reference.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c, { grad: true })).backward(dOut);
          expectGradients(g, w, c.reductionLength, 'vs wasm');
          for (const values of [g.query.data, g.key?.data ?? [], g.value?.data ?? [], ...Object.values(g.params)]) {
            assert.ok(values.every(Number.isFinite), 'every gradient finite');
          }
        } finally {
          layer.dispose();
          reference.dispose();
        }
      });
    }
  });
}

const [, mha] = devices[0];

describe('dropout: the backward uses the forward\'s mask (as the wasm layer)', () => {
  for (const [name, config, cross] of [
    ['self, GQA, causal', { embedDim: 16, numHeads: 4, numKvHeads: 2, dropout: 0.3 }, false],
    ['cross, free head sizes', { embedDim: 12, numHeads: 3, kdim: 5, vdim: 7, headDim: 5, valueHeadDim: 3, dropout: 0.5 }, true],
  ]) {
    test(name, async () => {
      const rand = random(7);
      const reference = new wasm.MultiHeadAttention(config).initialize({ seed: 1 });
      const layer = new mha.MultiHeadAttention(config).loadStateDict(reference.stateDict());
      const c = reference.config;
      const B = 2, L = 6, S = cross ? 9 : 6;
      const q = { data: filled(B * L * c.embedDim, rand), shape: [B, L, c.embedDim] };
      const k = cross ? { data: filled(B * S * c.kdim, rand), shape: [B, S, c.kdim] } : null;
      const v = cross ? { data: filled(B * S * c.vdim, rand), shape: [B, S, c.vdim] } : null;
      const options = { grad: true, training: true, seed: 12345, causal: !cross };
      const r = await layer.forwardAsync(q, k, v, options);
      const want = reference.forward(q, k, v, options);
      assert.ok(worstError(r.output.data, want.output.data, tolerance).ratio <= 1, 'the same output (the same mask)');
      const dOut = { data: filled(want.output.data.length, rand), shape: want.output.shape };
      const g = await r.backwardAsync(dOut);
      expectGradients(g, want.backward(dOut), Math.max(L, S, c.embedDim), 'dropout vs wasm');
      layer.dispose();
      reference.dispose();
    });
  }
});

describe('head sizes at the workgroup storage\'s limits, and more rows and keys than one workgroup, against the wasm backward', () => {
  for (const [name, config, B, L, S, options] of [
    ['head size 256 (7 keys, 7 packed rows per tile)', { embedDim: 512, numHeads: 2 }, 1, 9, 9, { causal: true }],
    ['headDim 130, valueHeadDim 3, outputDim 5, cross', { embedDim: 8, numHeads: 2, headDim: 130, valueHeadDim: 3, outputDim: 5, kdim: 3, vdim: 6 }, 2, 4, 11, {}],
    ['B 1, L 80, S 130, GQA, key padding', { embedDim: 16, numHeads: 4, numKvHeads: 2, kdim: 12, vdim: 8 }, 1, 80, 130, { padding: true }],
  ]) {
    test(name, async () => {
      const rand = random(L * S);
      const reference = new wasm.MultiHeadAttention(config).initialize({ seed: 2 });
      const layer = new mha.MultiHeadAttention(config).loadStateDict(reference.stateDict());
      const c = reference.config;
      const self = S === L && !config.kdim;
      const q = { data: filled(B * L * c.embedDim, rand), shape: [B, L, c.embedDim] };
      const k = self ? null : { data: filled(B * S * c.kdim, rand), shape: [B, S, c.kdim] };
      const v = self ? null : { data: filled(B * S * c.vdim, rand), shape: [B, S, c.vdim] };
      const keyPaddingMask = options.padding ? { data: Uint8Array.from({ length: B * S }, (_, j) => j % 7 === 3), shape: [B, S] } : undefined;
      const call = { grad: true, causal: options.causal ?? false, keyPaddingMask };
      const r = await layer.forwardAsync(q, k, v, call);
      const want = reference.forward(q, k, v, call);
      const dOut = { data: filled(want.output.data.length, rand), shape: want.output.shape };
      expectGradients(await r.backwardAsync(dOut), want.backward(dOut), Math.max(L, S, c.embedDim, c.headDim), name);
      layer.dispose();
      reference.dispose();
    });
  }
});

describe('GPU-resident inputs and dOut', () => {
  test('{ buffer, shape } inputs, outputLocation gpu, dOut as a buffer: the gradients of the same call from arrays', async () => {
    const { device } = mha;
    const rand = random(11);
    const config = { embedDim: 8, numHeads: 2, kdim: 6, vdim: 4 };
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 5 });
    const B = 2, L = 3, S = 5;
    const q = { data: filled(B * L * 8, rand), shape: [B, L, 8] };
    const k = { data: filled(B * S * 6, rand), shape: [B, S, 6] };
    const v = { data: filled(B * S * 4, rand), shape: [B, S, 4] };
    const dOut = { data: filled(B * L * 8, rand), shape: [B, L, 8] };
    const toGpu = (t) => {
      const buffer = device.createBuffer({ size: t.data.byteLength, usage: STORAGE | COPY_DST | COPY_SRC });
      device.queue.writeBuffer(buffer, 0, t.data);
      return { buffer, shape: t.shape };
    };
    const want = await (await layer.forwardAsync(q, k, v, { grad: true })).backwardAsync(dOut);
    const [gq, gk, gv] = [q, k, v].map(toGpu);
    const r = await layer.forwardAsync(gq, gk, gv, { grad: true, outputLocation: 'gpu' });
    // The caller may overwrite its buffers after the call: the backward reads copies.
    device.queue.writeBuffer(gk.buffer, 0, new Float32Array(B * S * 6).fill(7));
    assert.ok(r.output.buffer);
    assert.deepEqual(r.output.shape, [B, L, 8]);
    // No outputLocation: the gradients stay where the forward put its output (on the GPU).
    const got = await r.backwardAsync(toGpu(dOut));
    assert.ok(got.query.buffer && got.params['out_proj.weight'].buffer, 'GPU tensors');
    const read = async (g) => g && { data: await g.read(), shape: g.shape };
    assert.deepEqual({
      query: await read(got.query), key: await read(got.key), value: await read(got.value),
      params: Object.fromEntries(await Promise.all(Object.entries(got.params).map(async ([n, g]) => [n, (await g.read())]))),
    }, want);
    for (const g of [got.query, got.key, got.value, ...Object.values(got.params)]) g.dispose();
    r.output.dispose();
    for (const t of [gq, gk, gv]) t.buffer.destroy();
    layer.dispose();
  });
});

describe('a finite-difference check in float64', () => {
  test('dLoss/d(a few entries of query, key, in_proj_weight, in_proj_bias, out_proj.weight), loss = sum(dOut * output)', async () => {
    const rand = random(3);
    const E = 4, H = 2, L = 3, S = 4;
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 8 });
    const sd = layer.stateDict();
    const q = filled(L * E, rand), kv = filled(S * E, rand), dOut = filled(L * E, rand);
    const r = await layer.forwardAsync({ data: q, shape: [L, E] }, { data: kv, shape: [S, E] }, { data: kv, shape: [S, E] }, { grad: true });
    const g = await r.backwardAsync({ data: dOut, shape: [L, E] });
    // The loss in float64 (the oracle of api.test.js) from float64 copies of everything.
    const loss = (x) => {
      const w = x.in_proj_weight, bias = x.in_proj_bias;
      const keys = [], values = [];
      for (let j = 0; j < S; j++) {
        keys.push(projectRow(x.kv, j, w, bias, E, E));
        values.push(projectRow(x.kv, j, w, bias, 2 * E, E));
      }
      let total = 0;
      for (let i = 0; i < L; i++) {
        const out = attendRow(projectRow(x.q, i, w, bias, 0, E), keys, values, H, x['out_proj.weight'], x['out_proj.bias']);
        for (let e = 0; e < E; e++) total += dOut[i * E + e] * out[e];
      }
      return total;
    };
    const base = { q: Float64Array.from(q), kv: Float64Array.from(kv) };
    for (const [name, value] of Object.entries(sd)) base[name] = Float64Array.from(value);
    const h = 1e-6;
    const checks = [['q', 5, g.query.data[5]], ['in_proj_weight', 3, g.params.in_proj_weight[3]],
      ['in_proj_weight', E * E + 6, g.params.in_proj_weight[E * E + 6]], ['in_proj_weight', 2 * E * E + 9, g.params.in_proj_weight[2 * E * E + 9]],
      ['in_proj_bias', 2 * E + 1, g.params.in_proj_bias[2 * E + 1]], ['out_proj.weight', 7, g.params['out_proj.weight'][7]],
      ['kv', 6, g.key.data[6] + g.value.data[6]]];
    for (const [name, at, got] of checks) {
      const plus = { ...base, [name]: base[name].slice() }, minus = { ...base, [name]: base[name].slice() };
      plus[name][at] += h;
      minus[name][at] -= h;
      const want = (loss(plus) - loss(minus)) / (2 * h);
      assert.ok(Math.abs(got - want) <= 1e-5 + 1e-4 * Math.abs(want), `d${name}[${at}]: ${got} vs ${want}`);
    }
    layer.dispose();
  });
});

describe('lifetimes and errors (the wasm layer\'s words)', () => {
  const config = { embedDim: 8, numHeads: 2 };
  const q = { data: filled(16, random(1)), shape: [2, 8] };
  const dOut = { data: filled(16, random(2)), shape: [2, 8] };

  test('backwardAsync twice: the second rejects', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const r = await layer.forwardAsync(q, null, null, { grad: true });
    const [first, second] = await Promise.allSettled([r.backwardAsync(dOut), r.backwardAsync(dOut)]);
    assert.equal(first.status, 'fulfilled');
    assert.match(second.reason.message, /^backwardAsync: already called for this forward pass \(call forward again\)$/);
    await assert.rejects(r.backwardAsync(dOut), /^Error: backwardAsync: already called for this forward pass/);
    layer.dispose();
  });

  test('after release(), after dispose(), after the weights changed', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const r = await layer.forwardAsync(q, null, null, { grad: true });
    r.release();
    r.release();
    assert.equal(r.released, true);
    await assert.rejects(r.backwardAsync(dOut), { message: 'backwardAsync: this forward pass was released (release() frees what backward needs)' });
    const changed = await layer.forwardAsync(q, null, null, { grad: true });
    layer.initialize({ seed: 4 });
    await assert.rejects(changed.backwardAsync(dOut), {
      name: 'TypeError',
      message: 'backwardAsync: the layer\'s weights changed since this forward pass (loadStateDict); run forward again with the new weights',
    });
    assert.equal(changed.released, false, 'a failed backward leaves the result as it was');
    const held = await layer.forwardAsync(q, null, null, { grad: true });
    layer.dispose();
    assert.equal(held.released, true);
    assert.equal(changed.released, true);
    await assert.rejects(held.backwardAsync(dOut), { message: 'backwardAsync: the layer that made this forward pass was disposed' });
  });

  test('a wrong dOut: the wasm layer\'s errors, and the result is still usable', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    const r = await layer.forwardAsync(q, null, null, { grad: true });
    await assert.rejects(r.backwardAsync({ data: new Float32Array(16), shape: [16] }),
      { name: 'RangeError', message: 'backwardAsync: dOut: expected the output\'s shape [2, 8], got [16]' });
    await assert.rejects(r.backwardAsync({ data: new Float32Array(15) }),
      { name: 'RangeError', message: 'backwardAsync: dOut: shape [2, 8] needs 16 elements, but data has 15' });
    await assert.rejects(r.backwardAsync(null), /^TypeError: backwardAsync: dOut must be \{ data: Float32Array, shape: \[2, 8\] \}/);
    assert.equal(r.released, false);
    const g = await r.backwardAsync(dOut);
    assert.deepEqual(g.query.shape, [2, 8]);
    layer.dispose();
  });

  test('calls in flight at once (two backward passes and a forward): what each gives alone', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 6 });
    const other = { data: filled(16, random(9)), shape: [2, 8] };
    const alone = [await (await layer.forwardAsync(q, null, null, { grad: true })).backwardAsync(dOut),
      await (await layer.forwardAsync(other, null, null, { grad: true })).backwardAsync(dOut),
      await layer.forwardAsync(other)];
    const [r1, r2] = await Promise.all([layer.forwardAsync(q, null, null, { grad: true }), layer.forwardAsync(other, null, null, { grad: true })]);
    const together = await Promise.all([r1.backwardAsync(dOut), r2.backwardAsync(dOut), layer.forwardAsync(other)]);
    assert.deepEqual(together, alone);
    layer.dispose();
  });

  test('a head too large for the backward kernel\'s workgroup storage (but not the forward\'s): a RangeError', async () => {
    const layer = new mha.MultiHeadAttention({ embedDim: 4, numHeads: 1, headDim: 2000, valueHeadDim: 2000 }).initialize();
    const x = { data: new Float32Array(8), shape: [2, 4] };
    assert.deepEqual((await layer.forwardAsync(x)).output.shape, [2, 4]);
    await assert.rejects(layer.forwardAsync(x, null, null, { grad: true }), {
      name: 'RangeError',
      message: 'forwardAsync: headDim + valueHeadDim = 4000 floats per query row do not fit the backward kernel\'s workgroup '
        + 'storage (maxComputeWorkgroupStorageSize 16384 bytes)',
    });
    layer.dispose();
  });

  test('grad with a cache, a non-boolean grad, and the synchronous backward', async () => {
    const layer = new mha.MultiHeadAttention(config).initialize();
    await assert.rejects(layer.forwardAsync(q, null, null, { grad: true, cache: {} }),
      /^TypeError: forwardAsync: grad: a forward pass with a cache cannot be differentiated/);
    await assert.rejects(layer.forwardAsync(q, null, null, { grad: 1 }), /^TypeError: forwardAsync: grad must be/);
    assert.throws(() => layer.backward(), /^TypeError: backward: a WebGPU layer has no synchronous backward; use await/);
    layer.dispose();
  });
});

after(() => console.log(`# WebGPU backward: largest gradient error over the cases: ${worstRatio.toFixed(3)} of the bound (${worstAt})`));
