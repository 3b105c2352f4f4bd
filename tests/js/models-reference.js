// mha-wasm/models against the float64 torch reference of tools/make_tiny_checkpoints.py
// (tests/fixtures/your-model/<name>/hooks.safetensors): every hook point, the hook replacements,
// the three workflows. Shared by the wasm tests (tests/js/models.test.js) and the WebGPU ones
// (tests/webgpu/models.test.js): `mha` is the module the attention runs on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readSafetensors } from '../../bindings/js/index.js';
import { activationPatching, directLogitAttribution, headScores, loadModel } from '../../bindings/js/models/index.js';
import { assertClose, checkpointFiles, expectedValues } from './your-model-fixtures.js';

const dir = (name) => new URL(`../fixtures/your-model/${name}/`, import.meta.url);

/** hooks.json plus hooks.safetensors' tensors. */
export function hookReference(name) {
  const meta = JSON.parse(readFileSync(new URL('hooks.json', dir(name)), 'utf8'));
  const { tensors } = readSafetensors(readFileSync(new URL('hooks.safetensors', dir(name))));
  return { ...expectedValues(name), ...meta, hookTensors: tensors };
}

/** assertClose, with -Infinity (a masked score) required exactly where the reference has it. */
export function assertCloseMasked(actual, expected, tolerance, what) {
  const a = Float32Array.from(actual), e = Float32Array.from(expected);
  for (let i = 0; i < e.length; i++) {
    if (e[i] === -Infinity) {
      assert.equal(a[i], -Infinity, `${what}: [${i}] must be -Infinity (masked), got ${a[i]}`);
      a[i] = 0;
      e[i] = 0;
    }
  }
  assertClose(a, e, tolerance, what);
}

export const loadFixture = (mha, name, options) => loadModel(mha, checkpointFiles(name), options);

/** Every hook point of the clean run, by name and shape, in the reference's forward order. */
export async function checkHookPoints(model, name, tolerance = 1e-5) {
  const ref = hookReference(name);
  assert.deepEqual(model.hookNames, ref.hookNames, `${name}: the hook names in forward order`);
  const { logits, cache } = await model.runWithCache(ref.ids);
  assert.deepEqual(cache.names, ref.hookNames);
  assert.deepEqual(logits.shape, [1, ref.ids.length, model.config.vocabSize]);
  assertClose(logits.data, ref.tensors.logits.data, tolerance * 10, `${name} logits`);
  for (const hook of ref.hookNames) {
    const got = cache.get(hook), expected = ref.hookTensors[hook];
    assert.deepEqual(got.shape, expected.shape, `${name} ${hook}: shape`);
    assertCloseMasked(got.data, expected.data, tolerance, `${name} ${hook}`);
  }
  return cache;
}

/** Each replacing hook of the reference, run through runWithHooks, gives its logits. */
export async function checkReplacements(model, name, tolerance = 1e-4) {
  const ref = hookReference(name);
  const edits = {
    mlp_post_zero: (a) => ({ data: new Float32Array(a.data.length), shape: a.shape }),
    q_double: (a) => { a.data.forEach((v, i) => { a.data[i] = 2 * v; }); },   // in place, returning nothing
    ln1_scale_double: (a) => ({ data: a.data.map((v) => 2 * v), shape: a.shape }),
    scores_half: (a) => ({ data: a.data.map((v) => 0.5 * v), shape: a.shape }),
    resid_mid_half: (a) => ({ data: a.data.map((v) => 0.5 * v), shape: a.shape }),
    attn_out_half: (a) => ({ data: a.data.map((v) => 0.5 * v), shape: a.shape }),  // (a parallel block has no resid_mid)
    q_plus_half: (a) => ({ data: a.data.map((v) => v + 0.5), shape: a.shape }),  // (q/k norms undo a scaled q)
    ln1_post_scale_double: (a) => ({ data: a.data.map((v) => 2 * v), shape: a.shape }),  // (OLMo-2 has no ln1)
  };
  const plain = (await model.forward(ref.ids)).logits.data;
  for (const [kase, { hook }] of Object.entries(ref.replaced)) {
    const { logits } = await model.runWithHooks(ref.ids, { hooks: { [hook]: edits[kase] } });
    const expected = ref.hookTensors[`replaced.${kase}`].data;
    assertClose(logits.data, expected, tolerance, `${name} ${kase} (${hook})`);
    // The replacement changed the result (so the comparison tests something).
    assert.ok(plain.some((v, i) => Math.abs(v - expected[i]) > 1e-3), `${name} ${kase}: the reference moved`);
  }
}

/** activationPatching over each sweep, directLogitAttribution and headScores against the reference. */
export async function checkWorkflows(model, name, tolerance = 1e-4) {
  const ref = hookReference(name);
  const { answer, wrong } = ref;
  for (const over of ['resid_pre', 'attn_out', 'mlp_out', 'head_out', 'head_out_by_pos']) {
    const expected = ref.hookTensors[`patching.${over}`];
    let progress = 0;
    const got = await activationPatching(model, { clean: ref.ids, corrupted: ref.otherIds, answer, wrong, over, onProgress: (done) => { progress = done; } });
    assert.deepEqual(got.shape, expected.shape, `${name} patching.${over}: shape`);
    assert.equal(progress, expected.data.length);
    assertClose(got.data, expected.data, tolerance, `${name} patching.${over}`);
  }
  const { cache } = await model.runWithCache(ref.ids);
  const dla = directLogitAttribution(model, cache, { answer, wrong, position: ref.position });
  for (const part of ['heads', 'mlps', 'accumulated']) {
    const expected = ref.hookTensors[`dla.${part}`];
    assert.deepEqual(dla[part].shape, expected.shape, `${name} dla.${part}: shape`);
    assertClose(dla[part].data, expected.data, tolerance, `${name} dla.${part}`);
  }
  for (const kind of ['previous_token', 'duplicate_token', 'induction']) {
    const expected = ref.hookTensors[`scores.${kind}`];
    const got = headScores(model, cache, kind);
    assert.deepEqual(got.shape, expected.shape);
    assertClose(got.data, expected.data, tolerance, `${name} scores.${kind}`);
  }
}
