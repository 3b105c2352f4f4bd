// PyTorch's own nn.MultiheadAttention tests, ported case by case and called the way a user porting
// PyTorch code calls mha-wasm: test/nn/test_multihead_attention.py (in torch 1.13: inside
// test/test_nn.py), the module's samples in common_modules.py (run by test/test_modules.py), and
// the MHA tests of test/test_transformers.py. Titles keep PyTorch's test names. The numbers come
// from torch itself (tools/make_pytorch_mha_fixtures.py -> tests/fixtures/pytorch-mha/); the
// cases and their checks are pytorch-mha-cases.js's, shared with the WebGPU backend's port
// (tests/webgpu/pytorch-mha.test.js).
//
// A case that needs what mha-wasm does not do yet is listed in NOT_YET with the reason, and its
// test asserts that the layer refuses it by that name (so it fails, and must move out of the list,
// once the feature lands).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import {
  arrays, casesOf, checkDraw, count, drawOptions, featuresOf, largestErrorSeen, tensors, threeDMaskRowByRow,
} from './pytorch-mha-cases.js';
import { seededFloats } from './seeded.js';

const mha = await init();
/** The wasm layer, called as pytorch-mha-cases.js calls a backend. */
const WASM = {
  MultiHeadAttention: mha.MultiHeadAttention,
  forward: (layer, ...args) => layer.forward(...args),
  backward: (result, dOut) => result.backward(dOut),
};

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
  'test_multihead_attention_dtype[float16]': 'float16 tensors: not supported yet',
  'test_multihead_attention_dtype[float64]': 'float64 tensors: not supported yet',
  'test_multihead_attention_dtype_batch_first[float16]': 'float16 tensors: not supported yet',
  'test_multihead_attention_dtype_batch_first[float64]': 'float64 tensors: not supported yet',
  'test_multihead_attn_fast_path_query_and_bias_have_different_dtypes[float64]': 'float64 tensors: not supported yet',
  'test_multihead_attn_fast_path_small_test[float64]': 'float64 tensors: not supported yet',
  'test_multihead_attn_in_proj_bias_none[float64]': 'float64 tensors: not supported yet',
  'test_multihead_attn_in_proj_weight_none[float64]': 'float64 tensors: not supported yet',
};

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
  test(c.name, async () => {
    for (const draw of c.draws) await checkDraw(draw, WASM);
    await extraCheck?.(c, WASM);
    tally.passing++;
  });
}

// --- test/nn/test_multihead_attention.py ------------------------------------------------------------

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

after(() => {
  const total = tally.passing + tally.notYet.size + tally.notRun;
  const byFeature = {};
  for (const features of tally.notYet.values()) for (const f of features) byFeature[f] = (byFeature[f] ?? 0) + 1;
  const notYet = Object.entries(byFeature).map(([f, n]) => `${f} ${n}`).join(', ');
  console.log(`# PyTorch's MHA tests: ${tally.passing} of ${total} pass; not yet: ${tally.notYet.size}`
    + `${notYet ? ` (${notYet})` : ''}; not run: ${tally.notRun} (NOT_RUN says why)`);
  console.log(`# largest absolute error: ${largestErrorSeen().toExponential(3)}`);
});
