// The demo page's "Your model" mode in Debian's Chromium, driven with the tiny checkpoints of
// tools/make_tiny_checkpoints.py: the files go in through the test hook (as { name, bytes }, and as
// File objects through the file picker), every head of every layer is drawn and equals torch's
// pattern, the prediction is torch's, ablating a head in the Steps view gives torch's ablated
// prediction, Generate runs, export works, a refused file shows the page's message, and BERT's
// bidirectional heads and fill-mask match the reference (Generate, the lens and head edits off).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startDemo } from './browser.js';
import { assertClose, checkpointFiles, expectedValues, torchTop } from '../js/your-model-fixtures.js';

let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
const load = (name) => page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
  checkpointFiles(name).map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));

/**
 * getState() once the prediction's ids are no longer `before` (a rerun was drawn). The check and
 * the wait for the next render run in the page in one go: checked from here, a render landing
 * between the check and the wait would leave the wait hanging.
 */
function untilPredictionChanges(before) {
  return page.evaluate(async (ids) => {
    const hook = window.__mhaDemo;
    for (;;) {
      const s = hook.getState();
      if (s.prediction.map((p) => p.id).join() !== ids.join()) return s;
      await hook.nextRender();
    }
  }, before);
}

/** Waits in the page (check and wait in one go, as above) until the model of `family` is loaded. */
const untilModel = (family) => page.evaluate(async (name) => {
  while (window.__mhaDemo.getState().model?.family !== name) await window.__mhaDemo.nextRender();
}, family);


test('a Llama checkpoint (two shards) dropped in: every head drawn, torch\'s patterns and prediction', async () => {
  await load('llama');
  const s = await state();
  assert.equal(s.source, 'model');
  assert.deepEqual(s.model, { family: 'llama', numLayers: 3, numHeads: 4, numKvHeads: 2, dtype: 'f32', weightDtype: 'f32' });
  const { text, ids, tensors } = expectedValues('llama');
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  const after = await state();
  assert.deepEqual(after.ids, ids);
  assert.equal(after.numLayers, 3);
  assert.equal(await page.locator('#grid canvas').count(), 12, 'every head of every layer has a tile');
  for (let l = 0; l < 3; l++) {
    for (let h = 0; h < 4; h++) {
      const weights = await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]);
      const L = ids.length;
      assertClose(Float32Array.from(weights), tensors[`pattern.${l}`].data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `layer ${l} head ${h}`);
    }
  }
  assert.deepEqual(after.prediction.map((p) => p.id), torchTop(tensors.logits));
  assert.ok(after.prediction.every((p) => typeof p.token === 'string' && p.probability > 0 && p.probability < 1));
  assert.equal(after.lens.length, 3);
  assert.equal(await page.locator('#model-lens li').count(), 3);
  assert.deepEqual(problems, []);
});

// Issue 48's families in the page: each loads, every head is drawn with torch's pattern, and the
// prediction is torch's (Pythia parallel and sequential, Gemma multi-query, Gemma 2 windows and
// softcaps, Phi-3 fused projections, Qwen3 and Gemma 3 q/k norms per head with Gemma 3's local
// rotary base, OLMo-2's post-norms and q/k norms over the projection).
for (const name of ['mistral', 'pythia', 'pythia-sequential', 'gemma', 'gemma2', 'phi3', 'qwen3', 'olmo2', 'gemma3']) {
  test(`${name} dropped in: every head drawn, torch's patterns and prediction`, async () => {
    await load(name);
    const { text, ids, tensors, family } = expectedValues(name);
    const s = await state();
    assert.equal(s.model.family, family);
    await page.evaluate((t) => window.__mhaDemo.setText(t), text);
    const after = await state();
    assert.deepEqual(after.ids, ids);
    const L = ids.length, numLayers = s.model.numLayers, H = s.model.numHeads;
    assert.equal(after.numLayers, numLayers);
    assert.equal(await page.locator('#grid canvas').count(), numLayers * H, 'every head of every layer has a tile');
    for (let l = 0; l < numLayers; l++) {
      assert.deepEqual(tensors[`pattern.${l}`].shape, [H, L, L]);
      for (let h = 0; h < H; h++) {
        const weights = await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]);
        assertClose(Float32Array.from(weights), tensors[`pattern.${l}`].data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `${name} layer ${l} head ${h}`);
      }
    }
    assert.deepEqual(after.prediction.map((p) => p.id), torchTop(tensors.logits));
    assert.deepEqual(problems, []);
  });
}

test('GPT-2 picked as File objects; ablating a head in the Steps view gives torch\'s ablated prediction', async () => {
  const dir = fileURLToPath(new URL('../fixtures/your-model/gpt2/', import.meta.url));
  const paths = checkpointFiles('gpt2').map((f) => dir + f.name);
  const drawn = page.evaluate(() => window.__mhaDemo.nextRender());
  await page.locator('#model-files').setInputFiles(paths);
  await drawn;
  await untilModel('gpt2');
  const { text, ablate, tensors } = expectedValues('gpt2');
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  assert.deepEqual((await state()).prediction.map((p) => p.id), torchTop(tensors.logits));
  // A run captures the steps of the Steps view's layer alone: showing another layer runs again for its steps.
  const other = 1 - ablate.layer;
  const otherSteps = await page.evaluate((where) => window.__mhaDemo.showSteps(where), { layer: other, head: ablate.head });
  assert.equal(otherSteps.layer, other);
  const L = tensors[`pattern.${other}`].shape[1];
  const q = otherSteps.query;
  assertClose(Float32Array.from(otherSteps.pattern), tensors[`pattern.${other}`].data.subarray((ablate.head * L + q) * L, (ablate.head * L + q + 1) * L), 1e-4, 'the other layer\'s steps pattern');
  const steps = await page.evaluate((where) => window.__mhaDemo.showSteps(where), { layer: ablate.layer, head: ablate.head });
  assert.equal(steps.layer, ablate.layer);
  assert.equal(await page.locator('#steps-ablate').isVisible(), true);
  await page.locator('#steps-ablate').check();
  const s = await untilPredictionChanges(torchTop(tensors.logits));
  assert.deepEqual(s.stepsView.ablated, [[ablate.layer, ablate.head]]);
  assert.deepEqual(s.prediction.map((p) => p.id), torchTop(tensors.ablated_logits));
  // The ablated head's weights stay (its z is zeroed, not its pattern); the export has every head.
  const json = await page.evaluate(() => window.__mhaDemo.modelStateJson());
  assert.deepEqual(json.shape, [2, 4, 8, 8]);
  assert.deepEqual(json.ablated, [[ablate.layer, ablate.head]]);
  assert.equal(json.steps.layer, ablate.layer);
  await page.locator('#steps-clear').click();
  await page.locator('#view-heatmap').click();
});

test('Qwen2 (bf16): patching a head from a second text in the Steps view gives torch\'s patched prediction', async () => {
  await load('qwen2');
  const { text, otherText, patch, tensors } = expectedValues('qwen2');
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  assert.equal((await state()).model.dtype, 'bf16');
  assert.deepEqual((await state()).prediction.map((p) => p.id), torchTop(tensors.logits));
  await page.evaluate((where) => window.__mhaDemo.showSteps(where), { layer: patch.layer, head: patch.head });
  await page.locator('#steps-patch-text').fill(otherText);
  await page.locator('#steps-patch').click();
  const s = await untilPredictionChanges(torchTop(tensors.logits));
  assert.deepEqual(s.stepsView.patched, [[patch.layer, patch.head]]);
  assert.deepEqual(s.prediction.map((p) => p.id), torchTop(tensors.patched_logits));
  await page.locator('#steps-clear').click();
  await untilPredictionChanges(torchTop(tensors.patched_logits));
  await page.locator('#view-heatmap').click();
});

test('Generate: tokens through the caches, the text grows, export SVG / PNG / JSON download', async () => {
  await load('mistral');
  await page.evaluate(() => window.__mhaDemo.setText('the cat'));
  const generation = await page.evaluate(() => window.__mhaDemo.generateModel(5));
  assert.equal(generation.generated, 5);
  assert.equal(generation.cancelled, false);
  const s = await state();
  assert.ok(s.labels.length >= 3 + 1, `the text grew: ${s.labels}`);
  assert.match(await page.locator('#model-gen-status').textContent(), /^5 tokens · [\d.]+ tokens\/s$/);
  for (const [button, name] of [['#model-export-svg', /heads\.svg$/], ['#model-export-png', /heads\.png$/], ['#model-export-json', /state\.json$/]]) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator(button).click()]);
    assert.match(download.suggestedFilename(), name);
  }
  assert.deepEqual(problems, []);
});

test('a file the page refuses: loadModel rejects with the page\'s message', async () => {
  const files = checkpointFiles('gpt2').map((f) => (f.name === 'config.json'
    ? { name: f.name, bytes: Array.from(new TextEncoder().encode('{"model_type":"t5","architectures":["T5Model"]}')) }
    : { name: f.name, bytes: Array.from(f.bytes) }));
  const message = await page.evaluate((fs) => window.__mhaDemo.loadModel(fs.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) })))
    .then(() => 'loaded', (error) => error.message), files);
  assert.equal(message, 'Could not load the model: config.json: model_type "t5", architectures ["T5Model"] is not a supported architecture; supported model_type: gpt2, llama, mistral, qwen2, qwen3, gpt_neox, gemma, gemma2, gemma3_text, phi3, olmo2, bert, roberta, distilbert');
  assert.equal(await page.locator('#message').textContent(), message);
});

/**
 * An encoder fixture's torch reference (hooks.json, hooks.safetensors) and the top 5 tokens of
 * mha-wasm/models' masked-LM logits at its mask in Node (the first checked to be torch's).
 */
async function encoderReference(name) {
  const { readFileSync } = await import('node:fs');
  const { init, readSafetensors } = await import('../../bindings/js/index.js');
  const { loadModel } = await import('../../bindings/js/models/index.js');
  const dir = new URL(`../fixtures/your-model/${name}/`, import.meta.url);
  const ref = JSON.parse(readFileSync(new URL('hooks.json', dir), 'utf8'));
  const { tensors } = readSafetensors(readFileSync(new URL('hooks.safetensors', dir)));
  const node = await loadModel(await init({ threads: 1 }), checkpointFiles(name));
  const { logits } = await node.forward(ref.ids);
  const V = logits.shape[2];
  const row = logits.data.subarray(ref.maskPosition * V, (ref.maskPosition + 1) * V);
  const nodeTop = [...row.keys()].sort((a, b) => row[b] - row[a]).slice(0, 5);
  node.dispose();
  assert.equal(nodeTop[0], ref.fill, 'Node\'s top token at the mask is torch\'s');
  return { ref, tensors, nodeTop };
}

// Issue 48's encoders in the page: the tiny BERT (BertForMaskedLM's keys, a WordPiece
// tokenizer.json) with a [MASK] in the text: every head of every layer is the float64 reference's
// bidirectional pattern (full rows, no causal triangle), and the fill-mask list is the top 5 of
// mha-wasm/models' masked-LM logits at the mask in Node. Generate and the logit lens are off with
// the hint; the Steps view draws a head's steps with ablating and patching off.
test('BERT dropped in: every bidirectional head is the reference\'s, fill-mask at [MASK] is Node\'s forward', async () => {
  const { ref, tensors, nodeTop } = await encoderReference('bert');

  await load('bert');
  const s = await state();
  assert.deepEqual(s.model, { family: 'bert', numLayers: 2, numHeads: 4, numKvHeads: 4, dtype: 'f32', weightDtype: 'f32', encoder: true, mlmHead: true });
  assert.match(await page.locator('#model-summary').textContent(), /^BERT family · encoder \(bidirectional heads, fill-mask\) · 2 layers · 4 heads/);
  assert.match(await page.locator('#model-panel .hint').first().textContent(), /BERT, RoBERTa and DistilBERT/);
  await page.evaluate((t) => window.__mhaDemo.setText(t), ref.text);
  const after = await state();
  assert.deepEqual(after.ids, ref.ids);
  assert.equal(after.labels[0], '[CLS]');
  assert.equal(after.labels.at(-1), '[SEP]');
  assert.equal(after.causal, false);
  const L = ref.ids.length, H = 4;
  assert.equal(await page.locator('#grid canvas').count(), 2 * H, 'every head of every layer has a tile');
  for (let l = 0; l < 2; l++) {
    const expected = tensors[`blocks.${l}.attn.hook_pattern`];
    assert.deepEqual(expected.shape, [1, H, L, L]);
    for (let h = 0; h < H; h++) {
      const weights = Float32Array.from(await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]));
      assertClose(weights, expected.data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `bert layer ${l} head ${h}`);
      // Bidirectional: the first query sees the last key (a causal triangle would hide it).
      assert.ok(weights[L - 1] > 0, `layer ${l} head ${h}: row 0 reaches key ${L - 1}`);
    }
  }
  // The heatmap draws full rows: its top-right corner (query 0, the last key) is not the causal-mask color.
  const corner = await page.evaluate(() => {
    const canvas = document.getElementById('heatmap');
    return Array.from(canvas.getContext('2d').getImageData(canvas.width - 2, 1, 1, 1).data.slice(0, 3));
  });
  assert.notDeepEqual(corner, [228, 231, 238], 'the heatmap\'s top-right cell is drawn, not masked');
  assert.deepEqual(after.prediction.map((p) => p.id), nodeTop);
  assert.equal(after.predictionTitle, `Fill-mask: [MASK] at position ${ref.maskPosition}`);
  assert.equal(await page.locator('#prediction-title').textContent(), `Fill-mask: [MASK] at position ${ref.maskPosition}`);
  assert.deepEqual(after.fillMask.map((m) => [m.position, m.top.map((t) => t.id)]), [[ref.maskPosition, nodeTop]]);
  assert.equal(await page.locator('#model-fill li').count(), 1);
  assert.deepEqual(after.lens, []);
  assert.equal(await page.locator('#model-gen-start').isDisabled(), true);
  assert.match(await page.locator('#model-gen-status').textContent(), /^Generate: not for an encoder \(BERT\)/);
  assert.match(await page.locator('#model-lens-status').textContent(), /^Logit lens: not for an encoder \(BERT\)/);
  // No mask in the text: the last non-special token's prediction, and the title says so.
  await page.evaluate(() => window.__mhaDemo.setText('the cats sat'));
  assert.match(await page.locator('#prediction-title').textContent(), /^No \[MASK\] in the text: the prediction at position \d+ 'sat' \(the last non-special token\)$/);
  // The Steps view: the head's steps are drawn (bidirectional), ablating and patching are off.
  await page.evaluate((t) => window.__mhaDemo.setText(t), ref.text);
  await page.evaluate(() => window.__mhaDemo.showSteps({ layer: 1, head: 2 }));
  const steps = await page.evaluate(async () => {
    while (!window.__mhaDemo.getState().steps) await window.__mhaDemo.nextRender();
    return window.__mhaDemo.getState().steps;
  });
  const p1 = tensors['blocks.1.attn.hook_pattern'].data;
  const q = steps.query;
  assertClose(Float32Array.from(steps.pattern), p1.subarray((2 * L + q) * L, (2 * L + q + 1) * L), 1e-4, 'steps pattern');
  assert.equal(await page.locator('#steps-ablate').isDisabled(), true);
  assert.equal(await page.locator('#steps-patch').isDisabled(), true);
  assert.match(await page.locator('#steps-summary').textContent(), /Ablating or patching a head: not for an encoder \(bert\)/);
  await page.locator('#view-heatmap').click();
  assert.deepEqual(problems, []);
});

// RoBERTa in the page: its byte-level BPE with <s> … </s>, positions from padding_idx + 1, every
// bidirectional head the float64 reference's, and fill-mask at <mask> Node's forward.
test('RoBERTa dropped in: every head is the reference\'s, fill-mask at <mask> is Node\'s forward', async () => {
  const { ref, tensors, nodeTop } = await encoderReference('roberta');

  await load('roberta');
  const s = await state();
  assert.deepEqual(s.model, { family: 'roberta', numLayers: 2, numHeads: 4, numKvHeads: 4, dtype: 'f32', weightDtype: 'f32', encoder: true, mlmHead: true });
  await page.evaluate((t) => window.__mhaDemo.setText(t), ref.text);
  const after = await state();
  assert.deepEqual(after.ids, ref.ids);
  assert.equal(after.labels[0], '<s>');
  assert.equal(after.labels.at(-1), '</s>');
  assert.equal(after.causal, false);
  const L = ref.ids.length, H = 4;
  assert.equal(await page.locator('#grid canvas').count(), 2 * H, 'every head of every layer has a tile');
  for (let l = 0; l < 2; l++) {
    const expected = tensors[`blocks.${l}.attn.hook_pattern`];
    for (let h = 0; h < H; h++) {
      const weights = Float32Array.from(await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]));
      assertClose(weights, expected.data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `roberta layer ${l} head ${h}`);
    }
  }
  assert.deepEqual(after.prediction.map((p) => p.id), nodeTop);
  assert.equal(after.predictionTitle, `Fill-mask: <mask> at position ${ref.maskPosition}`);
  assert.deepEqual(problems, []);
});

test('after BERT, a decoder loads with Generate and the logit lens back on', async () => {
  await load('gpt2');
  const { text, tensors } = expectedValues('gpt2');
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  const s = await state();
  assert.equal(s.causal, true);
  assert.deepEqual(s.prediction.map((p) => p.id), torchTop(tensors.logits));
  assert.equal(await page.locator('#prediction-title').textContent(), 'Next token');
  assert.equal(await page.locator('#model-gen-start').isDisabled(), false);
  assert.equal(await page.locator('#model-lens-status').isHidden(), true);
  assert.equal(await page.locator('#model-fill-set').isHidden(), true);
});
