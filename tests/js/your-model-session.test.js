// The worker's side of the "Your model" mode (web/your-model/session.js) in Node: a load, a run
// in the shape the page draws (every head, steps, prediction, logit lens), ablation through the
// Steps view's lists against torch, greedy generation through the caches, cancel, refusals, and
// the tiny BERT (every bidirectional head, fill-mask at [MASK], what an encoder refuses).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { YourModelSession } from '../../web/your-model/session.js';
import { assertClose, checkpointFiles, expectedValues, torchTop } from './your-model-fixtures.js';

const wasm = await init({ threads: 1 });
const pause = () => new Promise((resolve) => setImmediate(resolve));
const session = () => new YourModelSession(() => ({ wasm, attention: wasm, backend: 'wasm' }), pause);

test('load and run: every head of every layer, the steps, the prediction and the logit lens, as the page draws them', async () => {
  const s = session();
  const phases = [];
  const loaded = await s.load({ files: checkpointFiles('llama') }, (p) => phases.push(p));
  assert.deepEqual(loaded.model, { family: 'llama', numLayers: 3, numHeads: 4, numKvHeads: 2, dtype: 'f32', weightDtype: 'f32' });
  assert.deepEqual(phases.map((p) => `${p.phase} ${p.done}/${p.total}`),
    ['weights 1/2', 'weights 2/2', 'estimate 1/1', 'layers 1/3', 'layers 2/3', 'layers 3/3']);
  const { text, ids, tensors } = expectedValues('llama');
  const result = await s.run({ text });
  assert.deepEqual(result.ids, ids);
  assert.equal(result.labels.length, ids.length);
  assert.equal(result.layers.length, 3);
  // With the Steps view closed (no steps), no layer's steps are captured; with it open, its layer's alone.
  assert.deepEqual(result.layers.map((l) => l.captured), [undefined, undefined, undefined]);
  assertClose(result.layers[2].weights, tensors['pattern.2'].data, 1e-4, 'layer 2 pattern');
  const stepped = await s.run({ text, steps: { layer: 1, ablated: [], patched: [], patchText: '' } });
  assert.deepEqual(stepped.layers.map((l) => Boolean(l.captured)), [false, true, false]);
  assert.deepEqual(stepped.layers[1].captured.q.shape, [4, ids.length, 8]);
  assert.deepEqual(stepped.layers[1].captured.result.shape, [ids.length, 4, 32]);
  assertClose(stepped.layers[1].captured.pattern.data, tensors['pattern.1'].data, 1e-4, 'layer 1 captured pattern');
  assertClose(stepped.layers[1].weights, result.layers[1].weights, 1e-6, 'the same weights with or without the steps (the step path rounds apart)');
  await assert.rejects(s.model.transformer.forward(ids, { capture: true, captureLayers: [3] }),
    { name: 'TypeError', message: 'forward: captureLayers must be an array of layer indexes in [0, 3), got [3]' });
  const V = tensors.logits.shape[1];
  const last = tensors.logits.data.subarray((ids.length - 1) * V);
  const best = last.indexOf(Math.max(...last));
  assert.equal(result.prediction[0].id, best);
  assert.equal(result.prediction.length, 5);
  assert.ok(result.prediction[0].probability > result.prediction[1].probability);
  assert.equal(result.lens.length, 3);
  assert.equal(result.lens[2].top[0].id, best, 'the last layer\'s lens is the prediction');
  s.dispose();
});

test('the Steps view\'s ablation gives torch\'s ablated logits; a patch text of another length is refused', async () => {
  const s = session();
  await s.load({ files: checkpointFiles('gpt2') });
  const { text, ablate, tensors } = expectedValues('gpt2');
  const result = await s.run({ text, steps: { ablated: [[ablate.layer, ablate.head]], patched: [], patchText: '' } });
  assert.deepEqual(result.prediction.map((p) => p.id), torchTop(tensors.ablated_logits));
  await assert.rejects(s.run({ text, steps: { ablated: [], patched: [[0, 1]], patchText: 'the cat' } }),
    /patching needs a second text of the same length: 'the cat' is 2 tokens, the text 8/);
  s.dispose();
});

test('generate: greedy tokens through the caches, the text continued, the views of the final text', async () => {
  const s = session();
  await s.load({ files: checkpointFiles('mistral') });
  const seen = [];
  const result = await s.generate({ text: 'the cat', count: 4 }, (p) => seen.push(p));
  assert.deepEqual(seen.map((p) => p.generated), [1, 2, 3, 4]);
  assert.equal(result.generation.generated, 4);
  assert.ok(result.text.startsWith('the cat'), result.text);
  assert.equal(result.text, seen.at(-1).text);
  // Greedy: each generated token is the top prediction of the text before it.
  const before = await s.run({ text: 'the cat' });
  assert.equal(result.generation.ids[0], before.prediction[0].id);
  const after = await s.run({ text: 'the cat' + s.tokenizer.decode(result.generation.ids.slice(0, 1)) });
  assert.ok(after.ids.length > before.ids.length);
  s.dispose();
});

test('cancel stops a load between layers; nothing stays loaded', async () => {
  const s = session();
  await assert.rejects(s.load({ files: checkpointFiles('llama') }, (p) => { if (p.phase === 'layers' && p.done === 1) s.cancel(); }),
    { name: 'CancelledError', message: 'cancelled' });
  await assert.rejects(s.run({ text: 'the cat' }), /no model loaded: drop its files first/);
  // The next load runs to the end.
  assert.equal((await s.load({ files: checkpointFiles('llama') })).model.numLayers, 3);
  s.dispose();
});

test('cancel stops a generation between tokens', async () => {
  const s = session();
  await s.load({ files: checkpointFiles('gpt2') });
  const result = await s.generate({ text: 'the cat', count: 40 }, (p) => { if (p.generated === 2) s.cancel(); });
  assert.equal(result.generation.cancelled, true);
  assert.equal(result.generation.generated, 2);
  s.dispose();
});

test('a checkpoint without tokenizer.json, and a run before any load, are refused', async () => {
  const s = session();
  await assert.rejects(s.load({ files: checkpointFiles('gpt2').filter((f) => f.name !== 'tokenizer.json') }),
    { name: 'TypeError', message: 'loadModel: tokenizer.json is missing' });
  await assert.rejects(s.run({ text: 'x' }), /no model loaded: drop its files first/);
});

test('a checkpoint refused while its layers are built leaves the model the session had', async () => {
  const s = session();
  await s.load({ files: checkpointFiles('gpt2') });
  const { text, tensors } = expectedValues('gpt2');
  const before = await s.run({ text });
  // Mistral's files with one layer's weight missing: they read, and layer 1 is refused while built.
  const { readSafetensors, writeSafetensors } = await import('../../bindings/js/index.js');
  const broken = checkpointFiles('mistral').map((file) => {
    if (file.name !== 'model.safetensors') return file;
    const { tensors: all } = readSafetensors(file.bytes);
    delete all['model.layers.1.mlp.down_proj.weight'];
    return { name: file.name, bytes: writeSafetensors(all) };
  });
  await assert.rejects(s.load({ files: broken }), /the weights have no tensor 'model.layers.1.mlp.down_proj.weight'/);
  const after = await s.run({ text });
  assert.equal(after.model.family, 'gpt2');
  assert.deepEqual(after.prediction.map((p) => p.id), before.prediction.map((p) => p.id));
  assert.deepEqual(after.prediction.map((p) => p.id), torchTop(tensors.logits));
  s.dispose();
});

test('bert: every bidirectional head is the float64 reference\'s, fill-mask at [MASK] is forward\'s top 5; generate and head edits refused by name', async () => {
  const { readFileSync } = await import('node:fs');
  const { readSafetensors } = await import('../../bindings/js/index.js');
  const dir = new URL('../fixtures/your-model/bert/', import.meta.url);
  const ref = JSON.parse(readFileSync(new URL('hooks.json', dir), 'utf8'));
  const { tensors } = readSafetensors(readFileSync(new URL('hooks.safetensors', dir)));
  const s = session();
  const loaded = await s.load({ files: checkpointFiles('bert') });
  assert.deepEqual(loaded.model, { family: 'bert', numLayers: 2, numHeads: 4, numKvHeads: 4, dtype: 'f32', weightDtype: 'f32', encoder: true, mlmHead: true });
  const result = await s.run({ text: ref.text });
  assert.deepEqual(result.ids, ref.ids);
  assert.deepEqual([result.labels[0], result.labels.at(-1)], ['[CLS]', '[SEP]']);
  assert.equal(result.causal, false);
  assert.equal(result.encoder, true);
  const L = ref.ids.length;
  for (let l = 0; l < 2; l++) {
    assertClose(result.layers[l].weights, tensors[`blocks.${l}.attn.hook_pattern`].data, 1e-4, `layer ${l} pattern`);
    assertClose(result.layers[l].output, tensors[`blocks.${l}.hook_attn_out`].data, 1e-4, `layer ${l} attention output`);
  }
  assert.ok(result.layers[0].weights[L - 1] > 0, 'query 0 sees the last key');
  // fill-mask: the masked-LM logits at the mask (the HookedModel's forward), top 5
  const { logits } = await s.model.forward(ref.ids);
  const V = logits.shape[2];
  const row = logits.data.subarray(ref.maskPosition * V, (ref.maskPosition + 1) * V);
  const top = [...row.keys()].sort((a, b) => row[b] - row[a]).slice(0, 5);
  assert.equal(top[0], ref.fill);
  assert.deepEqual(result.prediction.map((p) => p.id), top);
  assert.equal(result.predictionTitle, `Fill-mask: [MASK] at position ${ref.maskPosition}`);
  assert.deepEqual(result.fillMask.map((m) => [m.position, m.token, m.top.map((t) => t.id)]), [[ref.maskPosition, '[MASK]', top]]);
  assert.deepEqual(result.lens, []);
  // Two masks: each has its own list; the prediction is the first's.
  const two = await s.run({ text: 'the [MASK] sat on the [MASK].' });
  assert.equal(two.fillMask.length, 2);
  assert.match(two.predictionTitle, /^Fill-mask: \[MASK\] at position 2 \(1 of 2 masks: every one in the panel\)$/);
  // No mask: the last non-special position, said in the title.
  const plain = await s.run({ text: 'the cats sat' });
  assert.equal(plain.ids.at(-1), ref.ids.at(-1), '[SEP] last');
  assert.equal(plain.predictionTitle, `No [MASK] in the text: the prediction at position ${plain.ids.length - 2} 'sat' (the last non-special token)`);
  // The Steps view's steps from the hook points (bidirectional: every key of every query).
  const { headSteps } = await import('../../web/steps-view.js');
  const stepped = await s.run({ text: ref.text, steps: { ablated: [], patched: [], patchText: '' } });
  const hs = headSteps(stepped.layers[1], { head: 2, config: stepped.config });
  assert.deepEqual([hs.sizes.L, hs.sizes.S, hs.sizes.Dh], [L, L, 8]);
  assertClose(hs.mats.pattern.data, tensors['blocks.1.attn.hook_pattern'].data.subarray(2 * L * L, 3 * L * L), 1e-4, 'steps pattern');
  assertClose(hs.mats.q.data.subarray(0, 8), tensors['blocks.1.attn.hook_q'].data.subarray(2 * 8, 3 * 8), 1e-4, 'steps q, token 0');
  await assert.rejects(s.generate({ text: ref.text, count: 2 }), /^TypeError: generate: not supported on an encoder \(bert\)/);
  await assert.rejects(s.run({ text: ref.text, steps: { ablated: [[0, 1]], patched: [], patchText: '' } }),
    /ablating or patching a head from the Steps view: not supported on an encoder \(bert\)/);
  // A decoder after it runs as before (causal, next token, logit lens).
  await s.load({ files: checkpointFiles('gpt2') });
  const { text, tensors: gpt2 } = expectedValues('gpt2');
  const decoded = await s.run({ text });
  assert.equal(decoded.causal, true);
  assert.equal(decoded.encoder, undefined);
  assert.deepEqual(decoded.prediction.map((p) => p.id), torchTop(gpt2.logits));
  assert.equal(decoded.lens.length, 2);
  s.dispose();
});

test('the page\'s File objects load as they are (read a tensor at a time), with the memory estimate reported first', async () => {
  const s = session();
  const phases = [];
  const files = checkpointFiles('llama').map(({ name, bytes }) => Object.assign(new Blob([bytes]), { name }));
  const loaded = await s.load({ files, weightDtype: 'int8' }, (p) => phases.push(p));
  assert.equal(loaded.model.weightDtype, 'int8');
  const estimate = phases.find((p) => p.phase === 'estimate').estimate;
  assert.equal(estimate.weightDtype, 'int8');
  assert.ok(estimate.fits && estimate.bytes.total > estimate.bytes.weights);
  const { text } = expectedValues('llama');
  assert.equal((await s.run({ text })).layers.length, 3);
  s.dispose();
});
