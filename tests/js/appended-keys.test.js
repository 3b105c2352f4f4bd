// PyTorch's add_bias_kv, add_zero_attn (config addBiasKv, addZeroAttn) and static_k / static_v
// (forward options staticK, staticV) beyond the numbers of PyTorch's own tests
// (tests/js/pytorch-mha.test.js): their state-dict entries and initialization, PyTorch's errors in
// its words, and the paths that refuse them by name.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init, stateDictFromSafetensors, writeSafetensors } from '../../bindings/js/index.js';
import { seededFloats } from './seeded.js';

const mha = await init();

const B = 2, L = 3, S = 4, E = 8, H = 2, Dh = E / H;
const q = { data: seededFloats(B * L * E, 1), shape: [B, L, E] };
const kv = { data: seededFloats(B * S * E, 2), shape: [B, S, E] };
const make = (config) => new mha.MultiHeadAttention({ embedDim: E, numHeads: H, ...config }).initialize({ seed: 2 });

describe('addBiasKv and addZeroAttn', () => {
  test('bias_k and bias_v [1, 1, E] in PyTorch\'s state-dict order, initialized as xavier_normal_', () => {
    const layer = make({ addBiasKv: true, addZeroAttn: true, kdim: 6, vdim: 5 });
    assert.deepEqual(Object.entries(layer.stateDictShapes()), [
      ['q_proj_weight', [E, E]], ['k_proj_weight', [E, 6]], ['v_proj_weight', [E, 5]], ['in_proj_bias', [3 * E]],
      ['bias_k', [1, 1, E]], ['bias_v', [1, 1, E]], ['out_proj.weight', [E, E]], ['out_proj.bias', [E]],
    ]);
    assert.equal(layer.config.addBiasKv, true);
    assert.equal(layer.config.addZeroAttn, true);
    const big = new mha.MultiHeadAttention({ embedDim: 4096, numHeads: 8, addBiasKv: true }).initialize({ seed: 3 });
    const { bias_k: biasK } = big.stateDict();
    const mean = biasK.reduce((s, x) => s + x, 0) / biasK.length;
    const std = Math.sqrt(biasK.reduce((s, x) => s + (x - mean) ** 2, 0) / biasK.length);
    assert.ok(Math.abs(mean) < 0.003 && Math.abs(std - Math.sqrt(1 / 4096)) < 0.002, `mean ${mean}, std ${std}`);
    layer.dispose();
    big.dispose();
  });

  test('bias_k and bias_v travel through a .safetensors file as PyTorch saves them', () => {
    const layer = make({ addBiasKv: true });
    const shapes = layer.stateDictShapes();
    const file = writeSafetensors(Object.fromEntries(Object.entries(layer.stateDict()).map(([k, data]) => [k, { data, shape: shapes[k] }])));
    const copy = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, addBiasKv: true }).loadStateDict(stateDictFromSafetensors(file));
    assert.deepEqual(copy.forward(q, kv, kv).output, layer.forward(q, kv, kv).output);
    layer.dispose();
    copy.dispose();
  });

  test('the weights cover the appended keys: [B, L, S + 2], the zero key\'s share from exp(0)', () => {
    const layer = make({ addBiasKv: true, addZeroAttn: true });
    const { weights } = layer.forward(q, kv, kv, { needWeights: true, keyPaddingMask: { data: new Uint8Array(B * S).fill(1), shape: [B, S] } });
    assert.deepEqual(weights.shape, [B, L, S + 2]);
    // Every given key masked: only bias_k and the zero key remain, each row sums to 1 over them.
    for (let row = 0; row < B * L; row++) {
      const w = weights.data.subarray(row * (S + 2), (row + 1) * (S + 2));
      assert.deepEqual([...w.subarray(0, S)], [0, 0, 0, 0]);
      assert.ok(Math.abs(w[S] + w[S + 1] - 1) < 1e-6);
    }
    layer.dispose();
  });

  test('refused by name where they have no meaning: a cache, causal, capture, rotary, a window, ALiBi', () => {
    const layer = make({ addZeroAttn: true });
    assert.throws(() => layer.createCache({ batch: B, capacity: 8 }),
      { name: 'TypeError', message: 'createCache: addZeroAttn: a layer that appends keys takes no cache (the appended keys follow '
        + 'each call\'s keys; a cache\'s keys grow from call to call)' });
    assert.throws(() => layer.forward(q, null, null, { causal: true }), { name: 'TypeError', message: /^forward: causal: not with addZeroAttn .*pass the causal mask as attnMask/ });
    assert.throws(() => layer.forward(q, null, null, { capture: true }), { name: 'TypeError', message: /^forward: capture: not with addZeroAttn yet/ });
    for (const variant of [{ rotary: true }, { slidingWindow: 2 }, { alibi: true }]) {
      assert.throws(() => make({ addBiasKv: true, ...variant }), { name: 'TypeError', message: /^MultiHeadAttention: addBiasKv: not with rotary, slidingWindow or alibi/ });
    }
    layer.dispose();
  });

  test('the gradients of bias_k and bias_v: the finite differences of the loss', () => {
    const layer = make({ addBiasKv: true });
    const dOut = { data: seededFloats(B * L * E, 5), shape: [B, L, E] };
    const loss = () => layer.forward(q, kv, kv).output.data.reduce((s, x, i) => s + x * dOut.data[i], 0);
    const { params } = layer.forward(q, kv, kv, { grad: true }).backward(dOut);
    const sd = layer.stateDict();
    for (const name of ['bias_k', 'bias_v']) {
      for (const i of [0, 3, 7]) {
        const h = 1e-2, saved = sd[name][i];
        sd[name][i] = saved + h;
        const up = loss(layer.loadStateDict(sd));
        sd[name][i] = saved - h;
        const down = loss(layer.loadStateDict(sd));
        sd[name][i] = saved;
        layer.loadStateDict(sd);
        const numeric = (up - down) / (2 * h);
        assert.ok(Math.abs(params[name][i] - numeric) < 2e-3 * Math.max(1, Math.abs(numeric)), `d${name}[${i}]: ${params[name][i]} vs ${numeric}`);
      }
    }
    layer.dispose();
  });
});

describe('staticK and staticV', () => {
  const staticK = { data: seededFloats(B * H * S * Dh, 7), shape: [B * H, S, Dh] };
  const staticV = { data: seededFloats(B * H * S * Dh, 8), shape: [B * H, S, Dh] };

  test('they replace the projected keys and values: the key and value inputs no longer matter', () => {
    const layer = make({});
    const a = layer.forward(q, kv, kv, { staticK, staticV, needWeights: true });
    const other = { data: seededFloats(B * S * E, 9), shape: [B, S, E] };
    const b = layer.forward(q, other, other, { staticK, staticV, needWeights: true });
    assert.deepEqual(a.output, b.output);
    assert.notDeepEqual(a.output, layer.forward(q, kv, kv).output);
    // Gradients: none through the replaced projections.
    const g = layer.forward(q, kv, kv, { staticK, staticV, grad: true }).backward({ data: seededFloats(B * L * E, 4), shape: [B, L, E] });
    assert.ok(g.key.data.every((x) => x === 0) && g.value.data.every((x) => x === 0));
    assert.ok(g.params.in_proj_weight.subarray(E * E).every((x) => x === 0));
    assert.ok(g.params.in_proj_weight.subarray(0, E * E).some((x) => x !== 0));
    layer.dispose();
  });

  test('PyTorch\'s errors in its words, with the expected shape', () => {
    const layer = make({});
    assert.throws(() => layer.forward(q, kv, kv, { staticK: { data: staticK.data, shape: [B * H * S, 1, Dh] } }),
      { name: 'RangeError', message: `forward: expecting static_k.size(0) of ${B * H}, but got ${B * H * S} (staticK: expected shape [B*numKvHeads, S, headDim] = [${B * H}, ${S}, ${Dh}])` });
    assert.throws(() => layer.forward(q, kv, kv, { staticV: { data: staticV.data, shape: [B * H, S / 2, 2 * Dh] } }),
      { name: 'RangeError', message: `forward: expecting static_v.size(2) of ${Dh}, but got ${2 * Dh} (staticV: expected shape [B*numKvHeads, S, valueHeadDim] = [${B * H}, ${S}, ${Dh}])` });
    assert.throws(() => layer.forward(q, kv, kv, { staticK: { data: staticK.data.subarray(0, B * H * 2 * Dh), shape: [B * H, 2, Dh] } }),
      { name: 'RangeError', message: /^forward: staticK: expected shape \[B\*numKvHeads, S, headDim\] \(S: the keys' length\) = \[4, 4, 4\], got \[4, 2, 4\]/ });
    const withBias = make({ addBiasKv: true });
    assert.throws(() => withBias.forward(q, kv, kv, { staticK }), { name: 'TypeError', message: /^forward: bias cannot be added to static key\./ });
    assert.throws(() => withBias.forward(q, kv, kv, { staticV }), { name: 'TypeError', message: /^forward: bias cannot be added to static value\./ });
    assert.throws(() => layer.forward(q, kv, kv, { staticK, capture: true }), { name: 'TypeError', message: /^forward: capture: not with staticK yet/ });
    assert.throws(() => layer.forward(q, kv, kv, { staticK: { data: staticK.data, shape: staticK.shape, extra: 1 }.data }),
      { name: 'TypeError', message: /^forward: staticK must be \{ data, shape \}/ });
    layer.dispose();
    withBias.dispose();
  });
});
