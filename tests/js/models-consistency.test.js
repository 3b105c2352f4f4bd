// mha-wasm/models' workflows against TransformerLens' own way of computing them, through the
// model's hooks: activationPatching's sweeps (which start mid-model, batch patched runs and skip
// unchanged slices) must equal one runWithHooks per slice that copies the clean activation in at
// its hook point, as patching.py's generic_activation_patch does. On the tiny GPT-2, Llama, Pythia
// (parallel and sequential blocks) and Gemma 2 checkpoints and on the demo page's default model
// (attention-only, web/demo-hooked.js), whose HookedModel must also give the default model's own
// logits and patterns (web/model.js).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { activationPatching, directLogitAttribution, headScores } from '../../bindings/js/models/index.js';
import { demoHookedModel } from '../../web/demo-hooked.js';
import { DemoModel, tokenize } from '../../web/model.js';
import { hookReference, loadFixture } from './models-reference.js';
import { assertClose } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });
const modelDir = new URL('../../web/model/', import.meta.url);
const demoWeights = readSafetensors(await readFile(new URL('demo-model.safetensors', modelDir)));
const demoVocab = JSON.parse(await readFile(new URL('vocab.json', modelDir), 'utf8'));

/** The last position's logit difference of a run's logits [1, L, V]. */
const logitDiff = ({ data, shape: [, L, V] }, answer, wrong) => data[(L - 1) * V + answer] - data[(L - 1) * V + wrong];

/** patching.py's generic_activation_patch: one hooked run per slice; `slices` gives [hook, copy(act, clean)]. */
async function patchByHooks(model, clean, corrupted, answer, wrong, slices) {
  const { cache } = await model.runWithCache(clean);
  const cleanDiff = logitDiff((await model.forward(clean)).logits, answer, wrong);
  const corruptedDiff = logitDiff((await model.forward(corrupted)).logits, answer, wrong);
  const values = [];
  for (const [hook, copy] of slices) {
    const { logits } = await model.runWithHooks(corrupted, { hooks: { [hook]: (act) => { copy(act.data, cache.get(hook).data); } } });
    values.push((logitDiff(logits, answer, wrong) - corruptedDiff) / (cleanDiff - corruptedDiff));
  }
  return Float32Array.from(values);
}

/** The slices of each sweep as [hook, copy] pairs, in the sweep's order. */
function slicesOf(over, { numLayers, numHeads: H, embedDim: E, headDim: D }, L) {
  const slices = [];
  for (let l = 0; l < numLayers; l++) {
    if (over === 'head_out') {
      for (let h = 0; h < H; h++) {
        slices.push([`blocks.${l}.attn.hook_z`, (act, clean) => {
          for (let p = 0; p < L; p++) act.set(clean.subarray((p * H + h) * D, (p * H + h + 1) * D), (p * H + h) * D);
        }]);
      }
    } else if (over === 'head_out_by_pos') {
      for (let p = 0; p < L; p++) {
        for (let h = 0; h < H; h++) {
          slices.push([`blocks.${l}.attn.hook_z`, (act, clean) => act.set(clean.subarray((p * H + h) * D, (p * H + h + 1) * D), (p * H + h) * D)]);
        }
      }
    } else {
      for (let p = 0; p < L; p++) slices.push([`blocks.${l}.hook_${over}`, (act, clean) => act.set(clean.subarray(p * E, (p + 1) * E), p * E)]);
    }
  }
  return slices;
}

for (const name of ['gpt2', 'llama', 'pythia', 'pythia-sequential', 'gemma2']) {  // (Pythia: parallel and sequential blocks; Gemma 2: post-norms, capped logits)
  test(`${name}: every sweep equals one hooked run per slice (patching.py's generic_activation_patch)`, async () => {
    const model = await loadFixture(mha, name);
    try {
      const { ids, otherIds, answer, wrong } = hookReference(name);
      for (const over of ['resid_pre', 'attn_out', 'mlp_out', 'head_out', 'head_out_by_pos']) {
        const sweep = await activationPatching(model, { clean: ids, corrupted: otherIds, answer, wrong, over });
        const byHooks = await patchByHooks(model, ids, otherIds, answer, wrong, slicesOf(over, model.config, ids.length));
        assertClose(sweep.data, byHooks, 1e-4, `${name} ${over}`);
      }
      // A metric of one's own gets the patched logits, not normalized.
      const custom = await activationPatching(model, {
        clean: ids, corrupted: otherIds, over: 'resid_pre', metric: (logits) => logitDiff(logits, answer, wrong),
      });
      const corruptedDiff = logitDiff((await model.forward(otherIds)).logits, answer, wrong);
      assert.ok(Math.abs(custom.data[0] - corruptedDiff) < 1e-4, 'the first position is the same in both texts: the corrupted run');
    } finally {
      model.dispose();
    }
  });
}

test('a sweep reports its progress and stops on its signal with an AbortError', async () => {
  const model = await loadFixture(mha, 'gpt2');
  try {
    const { ids, otherIds, answer, wrong } = hookReference('gpt2');
    const controller = new AbortController();
    const seen = [];
    await assert.rejects(activationPatching(model, {
      clean: ids, corrupted: otherIds, answer, wrong, over: 'head_out_by_pos', signal: controller.signal,
      onProgress: (done, total) => { seen.push([done, total]); if (done >= 8) controller.abort(); },
    }), { name: 'AbortError', message: 'activationPatching: aborted' });
    assert.ok(seen.length > 0 && seen.every(([, total]) => total === 2 * ids.length * 4));
  } finally {
    model.dispose();
  }
});

test('the default model as a HookedModel gives its own logits and patterns, and the workflows run on it', async () => {
  const demo = new DemoModel(mha, demoWeights, demoVocab);
  const model = await demoHookedModel(mha, demoWeights, demoVocab);
  try {
    const clean = tokenize('the cat sat on the mat', demoVocab).ids;
    const corrupted = tokenize('the dog sat on the rug', demoVocab).ids;
    const own = demo.forward(clean);
    const { logits, cache } = await model.runWithCache(clean);
    assertClose(logits.data, own.logits, 1e-5, 'logits');
    own.layers.forEach((layer, l) => assertClose(cache.get(`blocks.${l}.attn.hook_pattern`).data, layer.weights, 1e-5, `layer ${l} pattern`));
    assert.equal(model.config.normalization, 'none');
    assert.ok(!model.hookNames.includes('blocks.0.hook_resid_mid') && !model.hookNames.includes('ln_final.hook_scale'));
    assert.ok(model.hookNames.includes('hook_pos_embed'));
    assert.deepEqual(model.tokenizer.toStrTokens(clean.slice(1, 4)), ['t', 'h', 'e']);

    // As the fixtures choose them: the clean run's top next token, and the corrupted run's.
    const V = demoVocab.tokens.length;
    const top = (data) => { const last = data.subarray(data.length - V); return last.indexOf(Math.max(...last)); };
    const answer = top(logits.data);
    const corruptedTop = top((await model.forward(corrupted)).logits.data);
    const wrong = corruptedTop !== answer ? corruptedTop : (answer + 1) % V;
    for (const over of ['resid_pre', 'head_out']) {
      const sweep = await activationPatching(model, { clean, corrupted, answer, wrong, over });
      const byHooks = await patchByHooks(model, clean, corrupted, answer, wrong, slicesOf(over, model.config, clean.length));
      assertClose(sweep.data, byHooks, 1e-4, `default model ${over}`);
    }
    await assert.rejects(activationPatching(model, { clean, corrupted, answer, wrong, over: 'mlp_out' }),
      { message: "activationPatching: over 'mlp_out': the model is attention-only (it has no MLPs)" });
    // Attribution without a final norm: the final residual along W_U[answer] − W_U[wrong] is the
    // logit difference less the unembedding bias's part; the heads and the embeddings sum into it.
    const dla = directLogitAttribution(model, cache, { answer, wrong });
    const bias = demoWeights.tensors['unembed.bias'].data;
    assert.ok(Math.abs(dla.accumulated.data.at(-1) - (logitDiff(logits, answer, wrong) - (bias[answer] - bias[wrong]))) < 1e-3);
    assert.deepEqual(dla.mlps.data, new Float32Array(model.config.numLayers));
    assert.deepEqual(headScores(model, cache, 'previous_token').shape, [model.config.numLayers, model.config.numHeads]);
  } finally {
    model.dispose();
    demo.dispose();
  }
});
