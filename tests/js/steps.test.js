// forward's capture and patch options (docs/steps.md) on every build: each captured step of every
// fixture configuration against the float64 reference (tests/js/float64-steps.js, itself checked
// against PyTorch's output and weights in the fixtures), patches against the reference that
// patches, a KV cache's steps against the whole sequence's, and the bad-input rows.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { attentionSteps } from './float64-steps.js';
import { caseOptions, layerConfig, loadFixtures, worstError } from './fixtures.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const fixtures = loadFixtures();
const STEPS = ['q', 'k', 'v', 'scores', 'logits', 'pattern', 'z', 'result'];
const TOLERANCE = { absolute: 2e-5, relative: 2e-4 };  // float32 against float64, sums of up to 256 terms

/** The reference's inputs for a fixture case. */
function referenceInputs(c) {
  const t = c.tensors;
  return { query: t.query, key: t.key, value: t.value, causal: c.options.causal, keyPaddingMask: t.keyPaddingMask, attnMask: t.attnMask, positions: t.positions };
}

/** The reference's steps of each fixture case (computed once, shared by the builds). */
const referenceSteps = new Map();
function referenceOf(c, config) {
  if (!referenceSteps.has(c.name)) referenceSteps.set(c.name, attentionSteps(config, c.stateDict, referenceInputs(c)));
  return referenceSteps.get(c.name);
}

/** Asserts `got` (float32) equals `want` (float64) within TOLERANCE; -Infinity only where want has it. */
function assertClose(got, want, what) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const blocked = (x) => x === -Infinity;
  for (let i = 0; i < want.data.length; i++) {
    if (blocked(want.data[i]) || blocked(got.data[i])) assert.equal(got.data[i], want.data[i], `${what}[${i}]: blocked`);
  }
  const finite = (a) => Float64Array.from(a, (x) => (blocked(x) ? 0 : x));
  const e = worstError(finite(got.data), finite(want.data), TOLERANCE);
  assert.ok(e.ratio <= 1, `${what}: worst |error| ${e.absolute} at ${e.index} (${got.data[e.index]} vs ${want.data[e.index]})`);
}

/** Random weights for every key of a layer. */
function randomStateDict(layer, seed) {
  return Object.fromEntries(Object.entries(layer.stateDictShapes()).map(([key, shape], i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [key, seededFloats(n, seed + i, shape.length === 2 ? 1 / Math.sqrt(shape[1]) : 0.5)];
  }));
}

describe('the float64 steps reference', () => {
  test('reproduces PyTorch\'s output and per-head weights on every fixture case', () => {
    for (const c of fixtures.cases) {
      // layer.config's resolved form, from the fixture's config.
      const E = c.config.embedDim, H = c.config.numHeads, headDim = c.config.headDim ?? E / H;
      const config = {
        numKvHeads: H, headDim, valueHeadDim: headDim, outputDim: E, scale: 1 / Math.sqrt(headDim), ...c.config,
        ...(c.config.rotary ? { rotary: { base: 10000, interleaved: false, ...c.config.rotary } } : {}),
      };
      if (c.config.alibi && !c.config.alibiSlopes) continue;  // BLOOM's slopes: the layer's config gives them (below)
      const ref = attentionSteps(config, c.stateDict, referenceInputs(c));
      assertClose({ data: c.tensors.output.data, shape: ref.output.shape }, ref.output, `${c.name}: output`);
      if (c.tensors.weights && !c.options.averageWeights) {
        assertClose({ data: c.tensors.weights.data, shape: ref.pattern.shape }, ref.pattern, `${c.name}: weights`);
      }
    }
  });
});

for (const build of builds) {
  const { MultiHeadAttention } = build;

  describe(`steps on ${build.label}`, () => {
    test('capture: true gives every step of every fixture case, equal to the float64 reference', () => {
      build.use();
      for (const c of fixtures.cases) {
        const layer = new MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
        const t = c.tensors;
        const plain = layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c));
        const r = layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c, { capture: true }));
        assert.deepEqual(Object.keys(r.captured), STEPS, c.name);
        const ref = referenceOf(c, layer.config);
        for (const step of STEPS) assertClose(r.captured[step], ref[step], `${c.name}: ${step}`);
        // The output and weights are forward's own.
        assertClose(r.output, { data: Float64Array.from(plain.output.data), shape: plain.output.shape }, `${c.name}: output`);
        if (plain.weights) assertClose(r.weights, { data: Float64Array.from(plain.weights.data), shape: plain.weights.shape }, `${c.name}: weights`);
        layer.dispose();
      }
    });

    test('the sum of result over heads plus the output bias is the output; a subset captures just those', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 12, numHeads: 3, outputDim: 5 });
      const sd = randomStateDict(layer, 3);
      layer.loadStateDict(sd);
      const x = { data: seededFloats(2 * 4 * 12, 5), shape: [2, 4, 12] };
      const { output, captured } = layer.forward(x, null, null, { capture: ['result', 'pattern'] });
      assert.deepEqual(Object.keys(captured), ['pattern', 'result']);
      assert.deepEqual(captured.result.shape, [2, 4, 3, 5]);
      const sum = new Float64Array(output.data.length);
      for (let row = 0; row < 8; row++) {
        for (let o = 0; o < 5; o++) {
          sum[row * 5 + o] = sd['out_proj.bias'][o];
          for (let h = 0; h < 3; h++) sum[row * 5 + o] += captured.result.data[(row * 3 + h) * 5 + o];
        }
      }
      assertClose(output, { data: sum, shape: [2, 4, 5] }, 'output');
      assert.equal(layer.forward(x, null, null, { patch: { z: { data: new Float32Array(2 * 4 * 3 * 4), shape: [2, 4, 3, 4] } } }).captured, undefined);
      layer.dispose();
    });

    test('patching q, k, v, pattern or z for some heads equals the reference that patches', () => {
      build.use();
      const config = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: { dim: 4 }, slidingWindow: 3, alibi: true, softcap: 4, sinks: true };
      const layer = new MultiHeadAttention(config);
      const sd = randomStateDict(layer, 11);
      layer.loadStateDict(sd);
      const B = 2, L = 5;
      const x = { data: seededFloats(B * L * 16, 12), shape: [B, L, 16] };
      const keyPaddingMask = { data: Uint8Array.from([0, 0, 0, 0, 1, 0, 0, 0, 0, 0]), shape: [B, L] };
      const shapes = { q: [B, 4, L, 4], k: [B, 2, L, 4], v: [B, 2, L, 4], pattern: [B, 4, L, L], z: [B, L, 4, 4] };
      for (const [step, shape] of Object.entries(shapes)) {
        for (const heads of [null, [1]]) {
          const data = seededFloats(shape.reduce((a, b) => a * b, 1), 20 + shape.length, 0.8);
          const r = layer.forward(x, null, null, {
            causal: true, keyPaddingMask, capture: true, patch: { [step]: { data, shape }, ...(heads ? { heads } : {}) },
          });
          const ref = attentionSteps(layer.config, sd, { query: x, causal: true, keyPaddingMask }, { step, data, heads });
          for (const s of STEPS) assertClose(r.captured[s], ref[s], `patch ${step} heads ${heads}: ${s}`);
          assertClose(r.output, ref.output, `patch ${step} heads ${heads}: output`);
        }
      }
      layer.dispose();
    });

    test('activation patching: a clean run\'s z patched into a corrupted run restores it; zeros ablate a head', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2 });
      const sd = randomStateDict(layer, 30);
      layer.loadStateDict(sd);
      const clean = { data: seededFloats(3 * 8, 31), shape: [3, 8] };  // unbatched
      const corrupted = { data: seededFloats(3 * 8, 32), shape: [3, 8] };
      const c = layer.forward(clean, null, null, { capture: ['z'] });
      assert.deepEqual(c.captured.z.shape, [3, 2, 4]);
      const restored = layer.forward(corrupted, null, null, { patch: { z: c.captured.z } });
      assertClose(restored.output, { data: Float64Array.from(c.output.data), shape: [3, 8] }, 'restored output');
      const ablated = layer.forward(clean, null, null, { patch: { z: { data: new Float32Array(24), shape: [3, 2, 4] }, heads: [0] }, capture: ['z'] });
      for (let row = 0; row < 3; row++) {
        assert.deepEqual([...ablated.captured.z.data.subarray(row * 8, row * 8 + 4)], [0, 0, 0, 0]);
        assert.deepEqual([...ablated.captured.z.data.subarray(row * 8 + 4, row * 8 + 8)], [...c.captured.z.data.subarray(row * 8 + 4, row * 8 + 8)]);
      }
      const ref = attentionSteps(layer.config, sd, { query: clean, causal: false }, { step: 'z', data: new Float64Array(24), heads: [0] });
      assertClose(ablated.output, ref.output, 'ablated output');
      layer.dispose();
    });

    test('with a KV cache each call\'s steps are its new rows against the whole cache', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: true });
      layer.loadStateDict(randomStateDict(layer, 40));
      const L = 6, x = { data: seededFloats(L * 16, 41), shape: [1, L, 16] };
      const full = layer.forward(x, null, null, { causal: true, capture: true }).captured;
      const cache = layer.createCache({ capacity: L });
      const rows = (a, b) => ({ data: x.data.slice(a * 16, b * 16), shape: [1, b - a, 16] });
      let done = 0;
      for (const n of [3, 1, 2]) {
        const { captured } = layer.forward(rows(done, done + n), null, null, { cache, capture: true });
        const S = done + n;
        assert.deepEqual(captured.q.shape, [1, 4, n, 4]);
        assert.deepEqual(captured.k.shape, [1, 2, S, 4]);
        assert.deepEqual(captured.pattern.shape, [1, 4, n, S]);
        // Element (h, i, j) of this call is element (h, done + i, j) of the whole sequence's.
        const slice = (t, heads, rowsFrom, rowCount, width, fullRows, fullWidth) => {
          const out = new Float64Array(heads * rowCount * width);
          for (let h = 0; h < heads; h++) for (let i = 0; i < rowCount; i++) for (let j = 0; j < width; j++) out[(h * rowCount + i) * width + j] = t.data[(h * fullRows + rowsFrom + i) * fullWidth + j];
          return out;
        };
        assertClose(captured.q, { data: slice(full.q, 4, done, n, 4, L, 4), shape: captured.q.shape }, `q after ${S}`);
        assertClose(captured.k, { data: slice(full.k, 2, 0, S, 4, L, 4), shape: captured.k.shape }, `k after ${S}`);
        for (const step of ['scores', 'logits', 'pattern']) {
          assertClose(captured[step], { data: slice(full[step], 4, done, n, S, L, L), shape: captured[step].shape }, `${step} after ${S}`);
        }
        assertClose(captured.z, { data: Float64Array.from(full.z.data.subarray(done * 16, S * 16)), shape: captured.z.shape }, `z after ${S}`);
        done = S;
      }
      assert.equal(cache.length, L);
      layer.dispose();
    });

    test('training: the pattern is before dropout, z and the weights after it, as forward\'s', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2, dropout: 0.5 });
      layer.loadStateDict(randomStateDict(layer, 70));
      const x = { data: seededFloats(2 * 5 * 8, 71), shape: [2, 5, 8] };
      const options = { training: true, seed: 9, needWeights: true, averageWeights: false };
      const after = layer.forward(x, null, null, options);
      const before = layer.forward(x, null, null, { ...options, weightsBeforeDropout: true });
      const r = layer.forward(x, null, null, { ...options, capture: ['pattern'] });
      const f64 = (t) => ({ data: Float64Array.from(t.data), shape: t.shape });
      assertClose(r.output, f64(after.output), 'output');
      assertClose(r.weights, f64(after.weights), 'weights after dropout');
      assertClose(r.captured.pattern, f64(before.weights), 'pattern before dropout');
      layer.dispose();
    });

    test('cross-attention caches and float16 caches: the keys and values the call read', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2, kdim: 6, vdim: 5 });
      const sd = randomStateDict(layer, 80);
      layer.loadStateDict(sd);
      const q = { data: seededFloats(2 * 3 * 8, 81), shape: [2, 3, 8] };
      const k = { data: seededFloats(2 * 4 * 6, 82), shape: [2, 4, 6] };
      const v = { data: seededFloats(2 * 4 * 5, 83), shape: [2, 4, 5] };
      const cache = layer.createCache({ batch: 2, capacity: 4 }).setKeyValue(k, v);
      const { captured } = layer.forward(q, null, null, { cache, capture: true });
      const ref = attentionSteps(layer.config, sd, { query: q, key: k, value: v, causal: false });
      for (const step of STEPS) assertClose(captured[step], ref[step], `cross cache: ${step}`);
      const self = new MultiHeadAttention({ embedDim: 8, numHeads: 2 });
      self.loadStateDict(randomStateDict(self, 84));
      const x = { data: seededFloats(5 * 8, 85), shape: [5, 8] };
      const f16 = self.createCache({ capacity: 5, dtype: 'f16' });
      const got = self.forward(x, null, null, { cache: f16, capture: ['k'] }).captured.k;
      const want = self.forward(x, null, null, { causal: true, capture: ['k'] }).captured.k;
      assert.deepEqual(got.shape, [2, 5, 4]);
      for (let i = 0; i < want.data.length; i++) assert.ok(Math.abs(got.data[i] - want.data[i]) <= 1e-3 * Math.abs(want.data[i]) + 1e-6);
      layer.dispose();
      self.dispose();
    });

    test('the Keras layer: capture and patch pass through; its attention scores are the pattern', () => {
      build.use();
      const keras = new build.KerasMultiHeadAttention({ numHeads: 2, keyDim: 3, valueDim: 4, queryDim: 6, valueInputDim: 5 });
      keras.setWeights(Object.values(keras.weightShapes()).map((shape, i) => seededFloats(shape.reduce((a, b) => a * b, 1), 92 + i)));
      const q = { data: seededFloats(2 * 3 * 6, 90), shape: [2, 3, 6] };
      const v = { data: seededFloats(2 * 4 * 5, 91), shape: [2, 4, 5] };
      const r = keras.call(q, v, null, { returnAttentionScores: true, capture: ['pattern', 'z'] });
      assert.deepEqual(Object.keys(r.captured), ['pattern', 'z']);
      assert.deepEqual(r.captured.pattern, r.scores);
      assert.deepEqual(r.captured.z.shape, [2, 3, 2, 4]);
      // Every head ablated: each output row is the output dense layer's bias.
      const ablated = keras.call(q, v, null, { patch: { z: { data: new Float32Array(48), shape: [2, 3, 2, 4] } } }).output;
      for (let row = 1; row < 6; row++) assert.deepEqual([...ablated.data.subarray(row * 6, row * 6 + 6)], [...ablated.data.subarray(0, 6)]);
      assert.throws(() => keras.call({ data: new Float32Array(2 * 2 * 3 * 6), shape: [2, 2, 3, 6] }, { data: new Float32Array(2 * 2 * 4 * 5), shape: [2, 2, 4, 5] }, null, { capture: true }),
        { name: 'TypeError', message: 'call: capture: not with inputs of rank > 3 (attentionAxes); pass [B, T, features]' });
      keras.dispose();
    });

    test('grad: true through a patch: the patched tensor is a constant; gradients equal the reference\'s finite differences', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 4, numKvHeads: 2 });
      const sd = randomStateDict(layer, 100);
      layer.loadStateDict(sd);
      const L = 3, x = { data: seededFloats(L * 8, 101), shape: [L, 8] };
      const G = seededFloats(L * 8, 102);  // loss = sum(output * G)
      const shapes = { q: [4, L, 2], k: [2, L, 2], v: [2, L, 2], z: [L, 4, 2] };
      for (const [step, shape] of Object.entries(shapes)) {
        const data = seededFloats(shape.reduce((a, b) => a * b, 1), 103, 0.7);
        const heads = [1];
        const r = layer.forward(x, null, null, { grad: true, causal: true, capture: ['z'], patch: { [step]: { data, shape }, heads } });
        const plain = layer.forward(x, null, null, { causal: true, capture: ['z'], patch: { [step]: { data, shape }, heads } });
        assert.deepEqual(r.captured.z, plain.captured.z, `${step}: captured with grad`);
        const g = r.backward({ data: G, shape: [L, 8] });
        // Central differences of the float64 reference that patches, in float64.
        const loss = (query, stateDict) => {
          const out = attentionSteps(layer.config, stateDict, { query, causal: true }, { step, data, heads }).output.data;
          return out.reduce((sum, o, i) => sum + o * G[i], 0);
        };
        const h = 1e-6;
        const numeric = (array, i, f) => {
          const plus = Float64Array.from(array), minus = Float64Array.from(array);
          plus[i] += h;
          minus[i] -= h;
          return (f(plus) - f(minus)) / (2 * h);
        };
        const dx = Float64Array.from(x.data, (_, i) => numeric(x.data, i, (d) => loss({ data: d, shape: x.shape }, sd)));
        assertClose(g.query, { data: dx, shape: x.shape }, `${step}: dQuery`);
        for (const key of ['q_proj_weight', 'k_proj_weight', 'v_proj_weight']) {
          const w = sd[key];
          const dw = Float64Array.from(w, (_, i) => numeric(w, i, (changed) => loss(x, { ...sd, [key]: changed })));
          assertClose({ data: g.params[key], shape: [w.length] }, { data: dw, shape: [w.length] }, `${step}: d ${key}`);
        }
      }
      // Every head of z a constant: nothing reaches the query or the input projections.
      const all = layer.forward(x, null, null, { grad: true, patch: { z: { data: new Float32Array(L * 8), shape: [L, 4, 2] } } });
      const g = all.backward({ data: G, shape: [L, 8] });
      assert.ok(g.query.data.every((v) => v === 0));
      for (const key of ['q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'out_proj.weight']) assert.ok(g.params[key].every((v) => v === 0), key);
      layer.dispose();
    });

    test('bad inputs: an Error naming the option and what was expected', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2, numKvHeads: 1 });
      layer.loadStateDict(randomStateDict(layer, 50));
      const x = { data: seededFloats(2 * 3 * 8, 51), shape: [2, 3, 8] };
      const zeros = (shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });
      const rows = [
        [{ capture: ['pattern', 'attention'] }, TypeError, "forward: capture[1]: unknown step 'attention'; the steps are q, k, v, scores, logits, pattern, z, gate, result"],
        [{ capture: 'pattern' }, TypeError, 'forward: capture must be true or an array of step names (q, k, v, scores, logits, pattern, z, gate, result), got string pattern'],
        [{ patch: { hook_z: zeros([2, 3, 2, 4]) } }, TypeError, "forward: patch: unknown step 'hook_z'; the steps are q, k, v, scores, logits, pattern, z, gate, result"],
        [{ patch: { scores: zeros([2, 2, 3, 3]) } }, TypeError, "forward: patch: the step 'scores' cannot be patched (the steps a later step reads can: q, k, v, pattern, z, gate)"],
        [{ patch: { z: zeros([2, 3, 2, 4]), q: zeros([2, 2, 3, 4]) } }, TypeError, 'forward: patch: give exactly one step to patch (q, k, v, pattern, z or gate) beside heads, got z, q'],
        [{ patch: { heads: [0] } }, TypeError, 'forward: patch: give one step to patch (q, k, v, pattern, z or gate) as { <step>: { data, shape }, heads? }'],
        [{ patch: { z: zeros([2, 3, 8]) } }, RangeError, 'forward: patch.z: expected the step\'s shape [B, L, H, Dv] = [2, 3, 2, 4], got [2, 3, 8]'],
        [{ patch: { k: zeros([2, 2, 3, 4]) } }, RangeError, 'forward: patch.k: expected the step\'s shape [B, Hkv, S, Dh] = [2, 1, 3, 4], got [2, 2, 3, 4]'],
        [{ patch: { z: zeros([2, 3, 2, 4]), heads: [0, 2] } }, RangeError, 'forward: patch.heads[1]: head 2 is out of range: z has 2 heads (0 to 1)'],
        [{ patch: { v: zeros([2, 1, 3, 4]), heads: [1] } }, RangeError, 'forward: patch.heads[0]: head 1 is out of range: v has 1 key/value heads (0 to 0)'],
        [{ patch: { z: zeros([2, 3, 2, 4]), heads: [1, 1] } }, RangeError, 'forward: patch.heads[1]: head 1 is listed twice'],
        [{ patch: { z: zeros([2, 3, 2, 4]), heads: [0.5] } }, TypeError, 'forward: patch.heads must be an array of head indices (integers), got an Array'],
        [{ patch: { z: { data: new Float64Array(48), shape: [2, 3, 2, 4] } } }, TypeError, 'forward: patch.z.data must be a Float32Array, got a Float64Array'],
        [{ grad: true, patch: { pattern: zeros([2, 2, 3, 3]) } }, TypeError, 'forward: patch.pattern: not with grad: true (the backward pass recomputes the softmax from q and k; patch q, k, v or z instead)'],
      ];
      for (const [options, Kind, message] of rows) {
        assert.throws(() => layer.forward(x, null, null, options), (e) => {
          assert.ok(e instanceof Kind, `${message}: got ${e.name}: ${e.message}`);
          assert.equal(e.message, message);
          return true;
        });
      }
      layer.dispose();
    });

    test('memory: captured steps count against the same budget, with the same error', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 16, numHeads: 8 });
      layer.loadStateDict(randomStateDict(layer, 60));
      const L = 12000, x = { data: new Float32Array(L * 16), shape: [L, 16] };
      assert.throws(() => layer.forward(x, null, null, { capture: ['scores', 'logits', 'pattern'] }), {
        name: 'RangeError',
        message: /^forward: the inputs and buffers need [\d.]+ GiB of WebAssembly memory \(.*captured scores 4\.3 GiB, captured logits 4\.3 GiB, captured pattern 4\.3 GiB\)/,
      });
      layer.dispose();
    });
  });
}
