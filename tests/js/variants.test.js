// The layer options of today's models through the public API, on every build: properties that
// pin each variant's meaning beyond the float64 fixtures (parity.test.js) — the GQA head mapping,
// window and rotary identities, left-padded batches with positions, BLOOM's slopes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });

/** Random weights for every key the layer takes, scaled like PyTorch's init. */
function randomStateDict(layer, seed) {
  const sd = {};
  for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
    const n = shape.reduce((a, b) => a * b, 1);
    sd[key] = seededFloats(n, seed++, shape.length === 2 ? 1 / Math.sqrt(shape[1]) : 0.5);
  }
  return sd;
}

function maxDiff(a, b) {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

for (const build of builds) {
  const { MultiHeadAttention } = build;
  const make = (config, seed = 1) => {
    const layer = new MultiHeadAttention(config);
    return { layer, sd: randomStateDict(layer, seed) };
  };

  describe(`variants on ${build.label}`, () => {
    test('query head h reads kv head floor(h / (H / Hkv)): GQA equals MHA with repeat-interleaved k/v heads', () => {
      build.use();
      const E = 16, H = 4, Hkv = 2, Dh = 4, L = 6;
      const { layer: gqa, sd } = make({ embedDim: E, numHeads: H, numKvHeads: Hkv });
      gqa.loadStateDict(sd);
      // The same weights with each kv head's rows repeated H / Hkv times, in place.
      const repeatRows = (w, cols) => {
        const out = new Float32Array(H * Dh * cols);
        for (let h = 0; h < H; h++) out.set(w.subarray(Math.floor(h / (H / Hkv)) * Dh * cols, (Math.floor(h / (H / Hkv)) + 1) * Dh * cols), h * Dh * cols);
        return out;
      };
      const bias = sd.in_proj_bias;
      const mha = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: H });
      mha.loadStateDict({
        q_proj_weight: sd.q_proj_weight,
        k_proj_weight: repeatRows(sd.k_proj_weight, E),
        v_proj_weight: repeatRows(sd.v_proj_weight, E),
        in_proj_bias: Float32Array.from([...bias.subarray(0, E), ...repeatRows(bias.subarray(E, E + Hkv * Dh), 1),
          ...repeatRows(bias.subarray(E + Hkv * Dh), 1)]),
        'out_proj.weight': sd['out_proj.weight'],
        'out_proj.bias': sd['out_proj.bias'],
      });
      const x = { data: seededFloats(L * E, 9), shape: [1, L, E] };
      const options = { causal: true, needWeights: true, averageWeights: false };
      const a = gqa.forward(x, null, null, options), b = mha.forward(x, null, null, options);
      assert.ok(maxDiff(a.output.data, b.output.data) < 1e-6);
      assert.ok(maxDiff(a.weights.data, b.weights.data) < 1e-6);
      gqa.dispose();
      mha.dispose();
    });

    test('a sliding window as long as the text is plain causal attention; a window of 1 sees only itself', () => {
      build.use();
      const E = 8, H = 2, L = 9;
      const x = { data: seededFloats(L * E, 3), shape: [1, L, E] };
      const { layer: plain, sd } = make({ embedDim: E, numHeads: H });
      const wide = new MultiHeadAttention({ embedDim: E, numHeads: H, slidingWindow: L });
      const one = new MultiHeadAttention({ embedDim: E, numHeads: H, slidingWindow: 1 });
      for (const l of [plain, wide, one]) l.loadStateDict(sd);
      const options = { causal: true, needWeights: true, averageWeights: false };
      const p = plain.forward(x, null, null, options), w = wide.forward(x, null, null, options);
      assert.deepEqual(w.output.shape, [1, L, E]);
      assert.ok(maxDiff(p.output.data, w.output.data) < 1e-6);
      const o = one.forward(x, null, null, options);
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < L; i++) {
          for (let j = 0; j < L; j++) assert.equal(o.weights.data[(h * L + i) * L + j], i === j ? 1 : 0);
        }
      }
      // Non-causal window (Keras): |i - j| < 2 sees three keys in the middle of the text.
      const keras = new MultiHeadAttention({ embedDim: E, numHeads: H, slidingWindow: 2 });
      keras.loadStateDict(sd);
      const k = keras.forward(x, null, null, { needWeights: true });
      const row = [...k.weights.data.subarray(4 * L, 5 * L)];
      assert.deepEqual(row.map((v) => v > 0), [false, false, false, true, true, true, false, false, false]);
      for (const l of [plain, wide, one, keras]) l.dispose();
    });

    test('rotary positions: the default equals positions 0..L-1, and a left-padded batch with shifted positions matches the unpadded one', () => {
      build.use();
      const E = 16, H = 2, L = 5, pad = 3;
      const config = { embedDim: E, numHeads: H, rotary: { dim: 6 } };
      const { layer, sd } = make(config, 7);
      layer.loadStateDict(sd);
      const x = seededFloats(L * E, 5);
      const plain = layer.forward({ data: x, shape: [1, L, E] }, null, null, { causal: true }).output.data;
      const iota = layer.forward({ data: x, shape: [1, L, E] }, null, null,
        { causal: true, positions: { data: Int32Array.from({ length: L }, (_, i) => i), shape: [1, L] } }).output.data;
      assert.deepEqual(iota, plain);
      // The same text after 3 padding tokens: positions start at 0 on the first real token.
      const padded = new Float32Array((pad + L) * E);
      padded.fill(0.25, 0, pad * E);
      padded.set(x, pad * E);
      const keyPaddingMask = { data: Uint8Array.from({ length: pad + L }, (_, i) => (i < pad ? 1 : 0)), shape: [1, pad + L] };
      const positions = { data: Int32Array.from({ length: pad + L }, (_, i) => Math.max(0, i - pad)), shape: [1, pad + L] };
      const out = layer.forward({ data: padded, shape: [1, pad + L, E] }, null, null, { causal: true, keyPaddingMask, positions });
      assert.ok(maxDiff(out.output.data.subarray(pad * E), plain) < 1e-5);
      // Rotary scores depend on i - j only, so positions that stretch the distances change the result.
      const stretched = layer.forward({ data: x, shape: [1, L, E] }, null, null,
        { causal: true, positions: { data: Int32Array.from({ length: L }, (_, i) => 3 * i), shape: [1, L] } });
      assert.ok(maxDiff(stretched.output.data, plain) > 1e-3);
      layer.dispose();
    });

    test('config reports the variants, with BLOOM\'s ALiBi slopes for a non-power-of-two head count', () => {
      build.use();
      const layer = new MultiHeadAttention({
        embedDim: 30, numHeads: 6, headDim: 7, valueHeadDim: 3, outputDim: 11, alibi: true, softcap: 50,
        slidingWindow: 4, sinks: true, rotary: { dim: 4, interleaved: true },
      });
      const { alibiSlopes, scale, ...rest } = layer.config;
      assert.ok(Math.abs(scale - 1 / Math.sqrt(7)) < 1e-7, `scale ${scale}: 1 / sqrt(headDim)`);
      assert.deepEqual(rest, {
        embedDim: 30, numHeads: 6, kdim: 30, vdim: 30, bias: true, numKvHeads: 6, headDim: 7,
        valueHeadDim: 3, outputDim: 11,
        rotary: { dim: 4, base: 10000, interleaved: true }, slidingWindow: 4, softcap: 50, sinks: true,
      });
      // n = 4: 2^(-2h-2) for h < 4, then 2^(-1), 2^(-3) (k = 1, 3 with 2^(-4k/n)).
      assert.deepEqual(alibiSlopes, [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]);
      assert.deepEqual(layer.stateDictShapes(), {
        q_proj_weight: [42, 30], k_proj_weight: [42, 30], v_proj_weight: [18, 30], in_proj_bias: [102],
        'out_proj.weight': [11, 18], 'out_proj.bias': [11], sinks: [6],
      });
      const { sd } = make({ embedDim: 30, numHeads: 6, headDim: 7, valueHeadDim: 3, outputDim: 11, sinks: true });
      layer.loadStateDict(sd);
      const out = layer.forward({ data: seededFloats(2 * 5 * 30, 2), shape: [2, 5, 30] }, null, null,
        { causal: true, needWeights: true });
      assert.deepEqual(out.output.shape, [2, 5, 11]);
      assert.deepEqual(out.weights.shape, [2, 5, 5]);
      // With sinks the probabilities of a row sum to less than 1.
      const rowSum = out.weights.data.subarray(0, 5).reduce((a, b) => a + b, 0);
      assert.ok(rowSum < 1 && rowSum > 0, `row sum ${rowSum}`);
      layer.dispose();
    });

    test('a very negative sink is no sink; softcap and ALiBi change the result', () => {
      build.use();
      const E = 8, H = 2, L = 7;
      const x = { data: seededFloats(L * E, 4, 3), shape: [1, L, E] };
      const { layer: plain, sd } = make({ embedDim: E, numHeads: H });
      plain.loadStateDict(sd);
      const sunk = new MultiHeadAttention({ embedDim: E, numHeads: H, sinks: true });
      sunk.loadStateDict({ ...sd, sinks: new Float32Array([-1e4, -1e4]) });
      const base = plain.forward(x, null, null, { causal: true }).output.data;
      assert.ok(maxDiff(sunk.forward(x, null, null, { causal: true }).output.data, base) < 1e-6);
      for (const option of [{ softcap: 0.5 }, { alibi: true }]) {
        const l = new MultiHeadAttention({ embedDim: E, numHeads: H, ...option });
        l.loadStateDict(sd);
        assert.ok(maxDiff(l.forward(x, null, null, { causal: true }).output.data, base) > 1e-3, JSON.stringify(option));
        l.dispose();
      }
      plain.dispose();
      sunk.dispose();
    });
  });
}
