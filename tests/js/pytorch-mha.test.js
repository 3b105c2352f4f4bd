// PyTorch's own nn.MultiheadAttention tests, ported case by case and called the way a user porting
// PyTorch code calls mha-wasm: test/nn/test_multihead_attention.py (in torch 1.13: inside
// test/test_nn.py), the module's samples in common_modules.py (run by test/test_modules.py), and
// the MHA tests of test/test_transformers.py. Titles keep PyTorch's test names. The numbers come
// from torch itself (tools/make_pytorch_mha_fixtures.py -> tests/fixtures/pytorch-mha/): outputs,
// attention weights, and the gradients torch autograd gives for loss = sum(output * dOut).
//
// A case that needs what mha-wasm does not do yet is listed in NOT_YET with the reason, and its
// test asserts that the layer refuses it by that name (so it fails, and must move out of the list,
// once the feature lands). PyTorch's math path gives NaN for a query row whose keys are all
// masked; our documented rule is zero weights and zero attended values (the output row is then
// out_proj.bias), and the tests hold us to it.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { worstError } from './fixtures.js';
import {
  arrays, casesOf, count, index, tensor, tensors,
} from './pytorch-mha-fixtures.js';
import { seededFloats } from './seeded.js';

const mha = await init();

/**
 * Features some fixture cases need and mha-wasm lacks yet: name -> why (the refusal must name it).
 * Empty now: batchFirst, addBiasKv, addZeroAttn and staticK were listed here until they landed.
 */
const NOT_YET = {
};

/** PyTorch's cases with no fixture: why each is not run (another issue's feature, or not applicable). */
const NOT_RUN = {
  'test_multihead_self_attn_two_masks_fast_path_mock': 'not applicable: it mocks torch._native_multi_head_attention '
    + 'to see which of PyTorch\'s internal paths ran; mha-wasm has one path (its numbers are checked by '
    + 'test_multihead_self_attn_two_masks_fast_path)',
  // Node 20 has no Float16Array: these two run in Chromium, on the same fixtures.
  'test_multihead_attention_dtype[float16]': 'runs in Chromium: tests/browser/pytorch-mha-float16.test.js',
  'test_multihead_attention_dtype_batch_first[float16]': 'runs in Chromium: tests/browser/pytorch-mha-float16.test.js',
};

// --- the fixtures ---------------------------------------------------------------------------------

/** The features of NOT_YET a draw needs. */
function featuresOf(draw) {
  const needs = [];
  if (draw.config.batchFirst === false) needs.push('batchFirst');
  if (draw.config.addBiasKv) needs.push('addBiasKv');
  if (draw.config.addZeroAttn) needs.push('addZeroAttn');
  if (draw.tensors.staticK || draw.tensors.staticV) needs.push('staticK');
  return needs;
}

/** The bound of a float32 draw's numbers, and of a float64 draw's (its tensors are Float64Array). */
const tolerance = index.tolerance;
const toleranceOf = (want) => (want instanceof Float64Array ? index.float64Tolerance : tolerance);
/** Gradients sum over rows and heads: the same relative bound, with an absolute floor scaled by their size. */
function gradientTolerance(want) {
  const largest = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  const bound = toleranceOf(want);
  return { absolute: bound.absolute * Math.max(1, largest), relative: bound.relative };
}

let largestError = 0;
let largestFloat64Error = 0;
function expectClose(got, want, what, bound = toleranceOf(want)) {
  assert.equal(got.length, want.length, `${what}: length`);
  // A float64 layer returns Float64Array, as torch returns float64 tensors (PyTorch's dtype tests' check).
  assert.equal(got.constructor, want.constructor, `${what}: ${want.constructor.name} expected`);
  const e = worstError(got, want, bound);
  if (want instanceof Float64Array) largestFloat64Error = Math.max(largestFloat64Error, e.absolute);
  else largestError = Math.max(largestError, e.absolute);
  assert.ok(e.ratio <= 1, `${what}[${e.index}] = ${got[e.index]}, torch ${want[e.index]} (off by ${e.absolute})`);
}

/**
 * Torch's output with each fully masked row (NaN in torch) replaced by what our rule gives there:
 * zero attended values, so the row is out_proj.bias (zeros without bias).
 */
function withMaskedRows(want, outBias, width) {
  const fixed = want.slice();
  for (let row = 0; row < fixed.length / width; row++) {
    if (!Number.isNaN(fixed[row * width])) continue;
    for (let i = 0; i < width; i++) fixed[row * width + i] = outBias ? outBias[i] : 0;
  }
  return fixed;
}

/** The forward options of a draw (its masks and static keys/values included), plus `extra`. */
function drawOptions(draw, t, extra = {}) {
  const options = { ...draw.options, ...extra };
  for (const name of ['keyPaddingMask', 'attnMask', 'staticK', 'staticV']) if (t[name]) options[name] = t[name];
  return options;
}

/**
 * A nested-tensor draw (torch's fast path, no_grad), called as a ragged batch: the packed output,
 * and each sequence's weights (torch pads them to [B, max, max]; the fixture keeps [L_i, L_i]).
 * Torch refuses nested tensors where grad is enabled; mha-wasm's ragged calls take grad
 * (tests/js/ragged.test.js checks those gradients against per-sequence calls).
 */
function checkNestedDraw(draw) {
  const query = { ...tensor(draw.tensors.query), lengths: draw.lengths };
  const layer = new mha.MultiHeadAttention(draw.config);
  try {
    layer.loadStateDict(arrays(draw.stateDict));
    const r = layer.forward(query, null, null, drawOptions(draw, {}));
    const want = tensor(draw.expected.output);
    assert.deepEqual(r.output.shape, want.shape);
    assert.deepEqual([...r.output.lengths], draw.lengths);
    expectClose(r.output.data, want.data, 'output');
    assert.equal(r.weights.length, draw.lengths.length);
    draw.expected.weights.forEach((entry, i) => {
      const w = tensor(entry);
      assert.deepEqual(r.weights[i].shape, w.shape);
      expectClose(r.weights[i].data, w.data, `weights of sequence ${i}`);
    });
  } finally {
    layer.dispose();
  }
}

/** Runs one draw through a new layer: output, weights and gradients against torch's. */
function checkDraw(draw) {
  if (draw.lengths) return checkNestedDraw(draw);
  const t = tensors(draw.tensors);
  const stateDict = arrays(draw.stateDict);
  const layer = new mha.MultiHeadAttention(draw.config);
  try {
    layer.loadStateDict(stateDict);
    const [key, value] = draw.selfAttention ? [null, null] : [t.key, t.value];
    if (draw.error) {  // PyTorch refuses the call: so do we, in its words
      assert.throws(() => layer.forward(t.query, key, value, drawOptions(draw, t)), (e) => e.message.includes(draw.error));
      return;
    }
    const expected = tensors(draw.expected);
    const grad = Boolean(draw.gradients);
    const r = layer.forward(t.query, key, value, drawOptions(draw, t, grad ? { grad: true } : {}));
    assert.deepEqual(r.output.shape, expected.output.shape);
    const width = expected.output.shape.at(-1);
    expectClose(r.output.data, withMaskedRows(expected.output.data, stateDict['out_proj.bias'], width), 'output');
    if (draw.options.needWeights) {
      // (The largest cases keep the weights of their first batch rows only.)
      assert.equal(count(r.weights.shape), count(r.weights.shape.slice(1)) * r.weights.shape[0]);
      const want = expected.weights.data.map((w) => (Number.isNaN(w) ? 0 : w));
      expectClose(r.weights.data.subarray(0, want.length), want, 'weights');
      assert.deepEqual(r.weights.shape.slice(1), expected.weights.shape.slice(1));
    } else {
      assert.equal(r.weights, null);
    }
    if (!grad) return;
    const g = r.backward(t.dOut);
    const wantGrads = tensors(draw.gradients);
    for (const [name, want] of Object.entries(wantGrads)) {
      assert.deepEqual(g[name].shape, want.shape, `d${name}: shape`);
      expectClose(g[name].data, want.data, `d${name}`, gradientTolerance(want.data));
    }
    for (const [name, want] of Object.entries(arrays(draw.paramGradients))) {
      assert.ok(g.params[name], `d${name}: missing (got ${Object.keys(g.params).join(', ')})`);
      expectClose(g.params[name], want, `d${name}`, gradientTolerance(want));
    }
  } finally {
    layer.dispose();
  }
}

/** A case needing a feature of NOT_YET: the layer must refuse it, naming that feature. */
function checkRefused(draw, feature) {
  const t = tensors(draw.tensors);
  assert.throws(() => {
    const layer = new mha.MultiHeadAttention(draw.config);
    try {
      layer.loadStateDict(arrays(draw.stateDict));
      layer.forward(t.query, draw.selfAttention ? null : t.key, draw.selfAttention ? null : t.value, drawOptions(draw, t));
    } finally {
      layer.dispose();
    }
  }, (e) => e instanceof Error && e.message.includes(feature), `a layer without ${feature} must refuse it by name`);
}

const tally = { passing: 0, notYet: new Map(), notRun: Object.keys(NOT_RUN).length };

/** One fixture case: every draw checked, or (a feature not there yet) refused by name. */
function fixtureTest(c, extraCheck) {
  const missing = [...new Set(c.draws.flatMap(featuresOf))].filter((f) => f in NOT_YET);
  if (missing.length) {
    tally.notYet.set(c.name, missing);
    test(`${c.name} (not yet: ${missing.join(', ')})`, () => checkRefused(c.draws[0], missing[0]));
    return;
  }
  test(c.name, () => {
    c.draws.forEach((draw) => checkDraw(draw));
    extraCheck?.(c);
    tally.passing++;
  });
}


// --- test/nn/test_multihead_attention.py ------------------------------------------------------------

/** Batch row b of a sequence-first [L, B, E] tensor, as [L, 1, E]. */
function batchRow({ data, shape: [L, B, E] }, b) {
  const out = new Float32Array(L * E);
  for (let l = 0; l < L; l++) out.set(data.subarray((l * B + b) * E, (l * B + b + 1) * E), l * E);
  return { data: out, shape: [L, 1, E] };
}

/** test_multihead_attn_3d_attn_mask's own check: the [N*H, T, S] mask's result, batch row by batch row with [T, S] masks. */
function threeDMaskRowByRow(c) {
  for (const draw of c.draws) {
    const t = tensors(draw.tensors);
    const masks = tensor(draw.perRowMasks);
    const [N, T, S] = masks.shape;
    const layer = new mha.MultiHeadAttention(draw.config);
    try {
      layer.loadStateDict(arrays(draw.stateDict));
      const all = layer.forward(t.query, t.key, t.value, { attnMask: t.attnMask }).output;
      for (let i = 0; i < N; i++) {
        const attnMask = { data: masks.data.subarray(i * T * S, (i + 1) * T * S), shape: [T, S] };
        const one = layer.forward(batchRow(t.query, i), batchRow(t.key, i), batchRow(t.value, i), { attnMask }).output;
        expectClose(one.data, batchRow(all, i).data, `batch row ${i}`);  // (PyTorch's assertEqual: within float32 tolerance)
      }
    } finally {
      layer.dispose();
    }
  }
}

/** Runs `check(layer)` on a new layer of `config`, or (a feature of NOT_YET in it) asserts the refusal. */
function layerTest(name, config, check) {
  const missing = config.batchFirst === false && 'batchFirst' in NOT_YET ? 'batchFirst' : null;
  if (missing) {
    tally.notYet.set(name, [missing]);
    test(`${name} (not yet: ${missing})`, () => {
      assert.throws(() => new mha.MultiHeadAttention(config).dispose(), (e) => e.message.includes(missing));
    });
    return;
  }
  test(name, () => {
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 1 });
    try {
      check(layer);
    } finally {
      layer.dispose();
    }
    tally.passing++;
  });
}

const randn = (shape, seed) => ({ data: seededFloats(count(shape), seed, 1), shape });
const bools = (values, shape) => ({ data: Uint8Array.from(values), shape });

/** test_multihead_attn_invalid_shape's calls, for a layer of embedDim 4 (4 heads): each refused, naming the argument. */
function invalidShapes(layer, keyShape2d) {
  const throwsNaming = (name, fn, shape) => assert.throws(fn, (e) => e instanceof Error && e.message.startsWith(`forward: ${name}`)
    && (!shape || e.message.includes(shape)), `${name} must be refused`);
  // Batched (3-D) query cases
  const query = randn([4, 4, 4], 1), key = randn([4, 4, 4], 2), value = randn([4, 4, 4], 3);
  throwsNaming('key', () => layer.forward(query, randn(keyShape2d, 4), value));
  throwsNaming('value', () => layer.forward(query, key, randn(keyShape2d, 5)));
  throwsNaming('keyPaddingMask', () => layer.forward(query, key, value, { keyPaddingMask: bools([0, 0, 1, 1], [4]) }), '[B, S]');
  throwsNaming('attnMask', () => layer.forward(query, key, value, { attnMask: bools([0, 0, 1, 1], [4]) }), '[L, S]');
  // Unbatched (2-D) query cases
  const q2 = randn([4, 4], 6), k2 = randn([4, 4], 7), v2 = randn([4, 4], 8);
  throwsNaming('key', () => layer.forward(q2, randn([4, 4, 4], 9), v2));
  throwsNaming('value', () => layer.forward(q2, k2, randn([4, 4, 4], 10)));
  throwsNaming('keyPaddingMask', () => layer.forward(q2, k2, v2, { keyPaddingMask: bools(Array(8).fill(0), [1, 8]) }), '[S]');
  throwsNaming('attnMask', () => layer.forward(q2, k2, v2, { attnMask: bools([0, 0, 1, 1], [4]) }), '[L, S]');
  throwsNaming('attnMask', () => layer.forward(q2, k2, v2, { attnMask: bools(Array(80).fill(0), [5, 4, 4]) }), '[4, 4, 4]');
}

describe('test/nn/test_multihead_attention.py', () => {
  for (const c of casesOf('test/nn/test_multihead_attention.py')) {
    fixtureTest(c, c.name === 'test_multihead_attn_3d_attn_mask' ? threeDMaskRowByRow : undefined);
  }
  layerTest('test_multihead_attn_no_bias', { embedDim: 8, numHeads: 4, bias: false, batchFirst: false }, (layer) => {
    // bias=False applies to both the in and the out projection.
    assert.deepEqual(Object.keys(layer.stateDictShapes()), ['in_proj_weight', 'out_proj.weight']);
  });
  layerTest('test_multihead_attn_invalid_shape', { embedDim: 4, numHeads: 4, batchFirst: false }, (layer) => invalidShapes(layer, [4, 4]));
  layerTest('test_multihead_attn_fast_path_invalid_shape', { embedDim: 4, numHeads: 4 }, (layer) => invalidShapes(layer, [3, 3]));
  for (const [name, reason] of Object.entries(NOT_RUN)) test(name, { skip: reason }, () => {});
});

describe('common_modules.py: module_inputs_torch_nn_MultiheadAttention (test/test_modules.py)', () => {
  for (const c of casesOf('torch/testing/_internal/common_modules.py')) fixtureTest(c);
});

describe('test/test_transformers.py', () => {
  for (const c of casesOf('test/test_transformers.py')) fixtureTest(c);
});

// Not PyTorch's own tests (not in the tally): its float32 cases' configurations run in float64, for
// the options its float64 tests leave out (appended keys, static keys and values, masks).
describe('float64 runs of PyTorch\'s float32 cases', () => {
  for (const c of casesOf('float64 runs')) {
    test(c.name, () => c.draws.forEach((draw) => checkDraw(draw)));
  }
});

after(() => {
  const total = tally.passing + tally.notYet.size + tally.notRun;
  const byFeature = {};
  for (const features of tally.notYet.values()) for (const f of features) byFeature[f] = (byFeature[f] ?? 0) + 1;
  const notYet = Object.entries(byFeature).map(([f, n]) => `${f} ${n}`).join(', ');
  console.log(`# PyTorch's MHA tests: ${tally.passing} of ${total} pass; not yet: ${tally.notYet.size}`
    + `${notYet ? ` (${notYet})` : ''}; not run: ${tally.notRun} (NOT_RUN says why)`);
  console.log(`# largest absolute error: ${largestError.toExponential(3)} (float32), `
    + `${largestFloat64Error.toExponential(3)} (float64)`);
});
