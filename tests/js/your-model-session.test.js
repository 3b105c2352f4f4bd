// The worker's side of the "Your model" mode (web/your-model/session.js) in Node: a load, a run
// in the shape the page draws (every head, steps, prediction, logit lens), ablation through the
// Steps view's lists against torch, greedy generation through the caches, cancel, and refusals.
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
  assert.deepEqual(loaded.model, { family: 'llama', numLayers: 3, numHeads: 4, numKvHeads: 2, dtype: 'f32' });
  assert.deepEqual(phases.map((p) => `${p.phase} ${p.done}/${p.total}`),
    ['weights 1/2', 'weights 2/2', 'layers 1/3', 'layers 2/3', 'layers 3/3']);
  const { text, ids, tensors } = expectedValues('llama');
  const result = await s.run({ text });
  assert.deepEqual(result.ids, ids);
  assert.equal(result.labels.length, ids.length);
  assert.equal(result.layers.length, 3);
  assert.deepEqual(result.layers[0].captured.q.shape, [4, ids.length, 8]);
  assertClose(result.layers[2].weights, tensors['pattern.2'].data, 1e-4, 'layer 2 pattern');
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
