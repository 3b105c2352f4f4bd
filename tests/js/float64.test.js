// A float64 layer (dtype: 'float64', docs/api.md "float64 layers") through the public API: what
// PyTorch's fixtures (tests/js/pytorch-mha.test.js) and the native oracle test
// (tests/native/float64_test.cpp) leave out. Weights keep their float64 bits; causal equals its
// mask; out buffers, forwardAsync, unbatched calls and .safetensors files take Float64Array; the
// gradients agree with central differences of the float64 forward pass; the float64 layer agrees
// with the float32 one to float32 rounding. Its refusals are rows of the bad-input table.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init, stateDictFromSafetensors, writeSafetensors } from '../../bindings/js/index.js';

const mha = await init();
const E = 8, H = 2;
const wave = (n, phase, Type = Float64Array) => Type.from({ length: n }, (_, i) => Math.sin(0.7 * i + phase) * 0.9);
const tensor = (shape, phase, Type = Float64Array) => ({ data: wave(shape.reduce((a, b) => a * b, 1), phase, Type), shape });

function float64Layer(config = {}) {
  return new mha.MultiHeadAttention({ embedDim: E, numHeads: H, dtype: 'float64', ...config }).initialize({ seed: 3 });
}

test('weights keep their float64 bits; initialize draws float64 weights; config says dtype', () => {
  const layer = float64Layer();
  try {
    assert.equal(layer.config.dtype, 'float64');
    const drawn = layer.stateDict();
    for (const value of Object.values(drawn)) assert.ok(value instanceof Float64Array);
    // The same seeded draws as a float32 layer's, unrounded.
    const f32 = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 3 });
    assert.deepEqual(Array.from(f32.stateDict().in_proj_weight), Array.from(Float32Array.from(drawn.in_proj_weight)));
    f32.dispose();
    const exact = Object.fromEntries(Object.entries(drawn).map(([k, v]) => [k, v.map((x, i) => x + 1e-12 * (i + 1))]));
    layer.loadStateDict(exact);
    assert.deepEqual(layer.stateDict(), exact);
  } finally {
    layer.dispose();
  }
});

test('causal is its mask; forwardAsync, out buffers and unbatched calls take Float64Array', async () => {
  const layer = float64Layer();
  try {
    const x = tensor([2, 4, E], 1);
    const causal = layer.forward(x, null, null, { causal: true, needWeights: true });
    const mask = { data: Uint8Array.from({ length: 16 }, (_, i) => (i % 4 > Math.floor(i / 4) ? 1 : 0)), shape: [4, 4] };
    const masked = layer.forward(x, null, null, { attnMask: mask, needWeights: true });
    assert.deepEqual(causal.output.data, masked.output.data);
    assert.deepEqual(causal.weights.data, masked.weights.data);
    assert.equal(causal.weights.data[1], 0);  // query 0 sees key 0 only

    const asynchronous = await layer.forwardAsync(x, null, null, { causal: true });
    assert.deepEqual(asynchronous.output.data, causal.output.data);

    const out = new Float64Array(2 * 4 * E), weightsOut = new Float64Array(2 * H * 4 * 4);
    const r = layer.forward(x, null, null, { causal: true, needWeights: true, averageWeights: false, out, weightsOut });
    assert.equal(r.output.data, out);
    assert.deepEqual(out, causal.output.data);
    assert.equal(r.weights.data, weightsOut);

    // Unbatched [L, E]: batch row 1 alone.
    const row = { data: x.data.slice(4 * E), shape: [4, E] };
    const alone = layer.forward(row, null, null, { causal: true });
    assert.deepEqual(alone.output.shape, [4, E]);
    assert.deepEqual(alone.output.data, causal.output.data.slice(4 * E));
  } finally {
    layer.dispose();
  }
});

test('checkFinite reads Float64Array inputs and masks', () => {
  const layer = float64Layer();
  try {
    const x = tensor([1, 2, E], 1);
    x.data[9] = NaN;
    assert.throws(() => layer.forward(x, null, null, { checkFinite: true }),
      { name: 'RangeError', message: 'forward: checkFinite: query.data[9] is NaN (index [0, 1, 1] of shape [1, 2, 8])' });
    const attnMask = { data: Float64Array.from([0, -Infinity, Infinity, 0]), shape: [2, 2] };
    assert.throws(() => layer.forward(tensor([1, 2, E], 1), null, null, { checkFinite: true, attnMask }),
      { name: 'RangeError', message: 'forward: checkFinite: attnMask.data[2] is Infinity (index [1, 0] of shape [2, 2])' });
  } finally {
    layer.dispose();
  }
});

test('float64 and float32 layers agree to float32 rounding (kdim/vdim, float masks, per-head weights)', () => {
  const config = { kdim: 5, vdim: 3 };
  const layer = float64Layer(config);
  const f32 = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, ...config });
  try {
    f32.loadStateDict(Object.fromEntries(Object.entries(layer.stateDict()).map(([k, v]) => [k, Float32Array.from(v)])));
    const widened = (t) => ({ data: Float64Array.from(t.data), shape: t.shape });
    const q = tensor([2, 3, E], 1, Float32Array), k = tensor([2, 4, 5], 2, Float32Array), v = tensor([2, 4, 3], 3, Float32Array);
    const attnMask = { data: Float32Array.from({ length: 12 }, (_, i) => (i === 5 ? -Infinity : 0.25 * (i % 3))), shape: [3, 4] };
    const options = { attnMask, needWeights: true, averageWeights: false };
    const a = layer.forward(widened(q), widened(k), widened(v), options);  // (the Float32Array mask is widened)
    const b = f32.forward(q, k, v, options);
    assert.ok(a.output.data instanceof Float64Array && a.weights.data instanceof Float64Array);
    for (const [got, want] of [[a.output.data, b.output.data], [a.weights.data, b.weights.data]]) {
      got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 * (1 + Math.abs(x)), `${x} vs ${want[i]} at ${i}`));
    }
  } finally {
    layer.dispose();
    f32.dispose();
  }
});

test('gradients agree with central differences of the float64 forward pass', () => {
  const layer = float64Layer({ kdim: 5, vdim: 3, batchFirst: false, addBiasKv: true });
  try {
    const q = tensor([3, 2, E], 1), k = tensor([4, 2, 5], 2), v = tensor([4, 2, 3], 3);
    const keyPaddingMask = { data: Uint8Array.from([0, 0, 1, 0, 0, 1, 0, 0]), shape: [2, 4] };
    const dOut = tensor([3, 2, E], 4);
    const loss = () => layer.forward(q, k, v, { keyPaddingMask }).output.data.reduce((s, x, i) => s + x * dOut.data[i], 0);
    const g = layer.forward(q, k, v, { keyPaddingMask, grad: true }).backward(dOut);
    const h = 1e-5;
    const central = (array, i) => {
      const x = array[i];
      array[i] = x + h;
      const up = loss();
      array[i] = x - h;
      const down = loss();
      array[i] = x;
      return (up - down) / (2 * h);
    };
    for (const [name, input, grad] of [['query', q.data, g.query.data], ['key', k.data, g.key.data], ['value', v.data, g.value.data]]) {
      for (const i of [0, 5, 17, input.length - 1]) {
        const want = central(input, i);
        assert.ok(Math.abs(grad[i] - want) <= 1e-8 * (1 + Math.abs(want)), `d${name}[${i}] = ${grad[i]}, central difference ${want}`);
      }
    }
    // bias_k: a parameter, through the state dict.
    const state = layer.stateDict();
    const biasK = state.bias_k;
    for (const i of [0, 3, 7]) {
      const x = biasK[i];
      const at = (value) => {
        biasK[i] = value;
        layer.loadStateDict(state);
        return loss();
      };
      const want = (at(x + h) - at(x - h)) / (2 * h);
      at(x);
      assert.ok(Math.abs(g.params.bias_k[i] - want) <= 1e-8 * (1 + Math.abs(want)), `dbias_k[${i}] = ${g.params.bias_k[i]}, ${want}`);
    }
  } finally {
    layer.dispose();
  }
});

test('stateDictFromSafetensors with dtype float64: F64 tensors as stored, for a float64 layer', () => {
  const layer = float64Layer();
  try {
    const state = layer.stateDict();
    const file = writeSafetensors(Object.fromEntries(Object.entries(state).map(([k, v]) => [k, { data: v, shape: [v.length], dtype: 'F64' }])));
    const read = stateDictFromSafetensors(file, { dtype: 'float64' });
    assert.deepEqual(read, state);
    assert.ok(stateDictFromSafetensors(file).in_proj_weight instanceof Float32Array);  // (the default: a float32 layer's)
    layer.loadStateDict(read);
  } finally {
    layer.dispose();
  }
});
