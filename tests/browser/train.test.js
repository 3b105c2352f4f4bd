// The Train mode in Chromium, through the page's test hook: training starts, the loss falls and
// the head scores move; pause stops the steps; ablating a head changes the held-out loss and the
// prediction; the exported .safetensors loads back through "Your layer" with the same attention;
// "use these weights" makes Generate write with the trained model.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { sinusoidalPositions, tokenize } from '../../web/model.js';
import { DEFAULT_PROBE } from '../../web/training/session.js';
import { Trainer } from '../../web/training/trainer.js';
import { startDemo } from './browser.js';

const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const training = () => page.evaluate(() => window.__mhaDemo.getState().training);
const SETTINGS = { seed: 3, batchSize: 8, seqLen: 32, steps: 100000, learningRate: 0.003 };
let initial;
let paused;

test('startTraining resolves once training runs; the loss falls and the held-out head scores update', { timeout: 600_000 }, async () => {
  await page.evaluate((s) => window.__mhaDemo.startTraining(s), SETTINGS);
  initial = await training();
  assert.equal(initial.running, true);
  assert.deepEqual({ ...initial.settings, mix: undefined, text: undefined },
    { ...initial.settings, ...SETTINGS, mix: undefined, text: undefined });
  // The first evaluation is of the fresh model (step 0): 8 heads, every score in [0, 1].
  assert.equal(initial.headScores.length, 8);
  assert.deepEqual(initial.headScores.map((h) => [h.layer, h.head]), [0, 1].flatMap((l) => [0, 1, 2, 3].map((h) => [l, h])));
  for (const h of initial.headScores) for (const k of ['previousToken', 'induction', 'bracket', 'bos']) assert.ok(h[k] >= 0 && h[k] <= 1, `${k} ${h[k]}`);
  assert.ok(initial.heldOutLoss > 3.5, `a fresh model's held-out loss is near log(V) = 4.03, got ${initial.heldOutLoss}`);

  await page.waitForFunction(() => (window.__mhaDemo.getState().training?.evaluatedAt ?? 0) >= 150, null, { timeout: 0, polling: 500 });
  const later = await training();
  assert.ok(later.heldOutLoss < initial.heldOutLoss - 0.8, `held-out loss ${initial.heldOutLoss} -> ${later.heldOutLoss}`);
  assert.ok(later.loss < 3.5, `training loss ${later.loss}`);
  assert.ok(later.tokensPerSecond > 0 && later.step > initial.step);
  assert.equal(later.backend, 'mha-wasm', 'the attention layers train with mha-wasm\'s backward');
  assert.notDeepEqual(later.headScores, initial.headScores);
  // The page drew the probe text's heads from the model being trained.
  const s = await page.evaluate(() => window.__mhaDemo.getState());
  assert.equal(s.source, 'train');
  assert.equal(s.numLayers, 2);
  assert.equal(s.labels.length, DEFAULT_PROBE.length + 1);
  assert.match(await page.locator('#status').textContent(), /steps\/s .* tokens\/s/);
  assert.match(await page.locator('#train-summary').textContent(), /held-out \d\.\d{3}/);
});

test('pauseTraining stops the steps; the state says so', { timeout: 120_000 }, async () => {
  paused = await page.evaluate(() => window.__mhaDemo.pauseTraining());
  assert.equal(paused.running, false);
  assert.equal(paused.evaluatedAt, paused.step, 'the held-out figures are of the step training stopped at');
  await new Promise((resolve) => { setTimeout(resolve, 1500); });
  const still = await training();
  assert.equal(still.step, paused.step);
  assert.equal(await page.locator('#train-start').textContent(), 'Resume');
});

test('ablating a head changes the held-out loss and the prediction; restoring it gives them back', { timeout: 120_000 }, async () => {
  const before = await page.evaluate(() => window.__mhaDemo.getState());
  // The layer-1 head with the most attention off <bos> does the most: ablate it.
  const head = paused.headScores.filter((h) => h.layer === 1).reduce((a, h) => (h.bos < a.bos ? h : a)).head;
  const ablated = await page.evaluate((h) => window.__mhaDemo.ablateHead(1, h), head);
  assert.deepEqual(ablated.ablated, [{ layer: 1, head }]);
  assert.notEqual(ablated.heldOutLoss, paused.heldOutLoss);
  assert.equal(ablated.step, paused.step);
  const after = await page.evaluate(() => window.__mhaDemo.getState());
  assert.notDeepEqual(after.prediction, before.prediction);
  const restored = await page.evaluate((h) => window.__mhaDemo.ablateHead(1, h, false), head);
  assert.deepEqual(restored.ablated, []);
  assert.ok(Math.abs(restored.heldOutLoss - paused.heldOutLoss) < 1e-6, `${restored.heldOutLoss} vs ${paused.heldOutLoss}`);
});

test('the exported .safetensors loads back in "Your layer" with the same attention as the Train view', { timeout: 120_000 }, async () => {
  const trainView = await page.evaluate(() => ({ weights: window.__mhaDemo.getWeights(0, 1), state: window.__mhaDemo.getState() }));
  const bytes = Uint8Array.from(await page.evaluate(() => window.__mhaDemo.trainedWeights()));
  const { tensors, metadata } = readSafetensors(bytes);
  assert.deepEqual(metadata.dModel, '64');
  assert.equal(metadata.trainedSteps, String(paused.step));
  const V = vocab.tokens.length;
  assert.deepEqual(tensors['tok_embed.weight'].shape, [V, 64]);
  assert.deepEqual(tensors['layers.1.in_proj_weight'].shape, [192, 64]);
  assert.deepEqual(tensors['unembed.bias'].shape, [V]);
  // Layer 0's input for the probe text, computed here from the exported embedding.
  const { ids } = tokenize(DEFAULT_PROBE, vocab);
  assert.equal(ids.length, trainView.state.labels.length);
  const positions = sinusoidalPositions(ids.length, 64);
  const table = tensors['tok_embed.weight'].data;
  const rows = ids.map((id, t) => Array.from({ length: 64 }, (_, i) => table[id * 64 + i] + positions[t * 64 + i]));
  await page.locator('#source-custom').click();
  await page.locator('#byo-embeddings').setInputFiles({ name: 'probe.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(rows)) });
  await page.locator('#byo-weights').setInputFiles({ name: 'trained.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
  await page.locator('#byo-heads').fill('4');
  await page.locator('#byo-causal').setChecked(true);
  await page.locator('#byo-run').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'custom');
  assert.match(await page.locator('#message').textContent(), /Loaded trained\.safetensors \(layer 'layers\.0\.'\): embedDim 64, 4 heads/);
  const custom = await page.evaluate(() => window.__mhaDemo.getWeights(0, 1));
  assert.equal(custom.length, trainView.weights.length);
  custom.forEach((w, i) => assert.ok(Math.abs(w - trainView.weights[i]) < 1e-5, `weight ${i}: ${w} vs ${trainView.weights[i]}`));
});

test('"use these weights": the default model is the trained one and Generate writes with it', { timeout: 180_000 }, async () => {
  await page.locator('#source-train').click();
  const info = await page.evaluate(() => window.__mhaDemo.useTrainedWeights());
  assert.equal(info.step, paused.step);
  const trainPrediction = (await page.evaluate(() => window.__mhaDemo.getState())).prediction;
  await page.locator('#source-default').click();
  await page.evaluate((text) => window.__mhaDemo.setText(text), DEFAULT_PROBE);
  const s = await page.evaluate(() => window.__mhaDemo.getState());
  // The text box's run of the probe text now gives the Train view's prediction (the same weights).
  assert.deepEqual(s.prediction.map((p) => p.token), trainPrediction.map((p) => p.token));
  s.prediction.forEach((p, i) => assert.ok(Math.abs(p.probability - trainPrediction[i].probability) < 1e-4));
  await page.locator('#gen-count').fill('40');
  await page.locator('#gen-sampling').selectOption('greedy');
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated > 0 || window.__mhaDemo.getState().generation.running);
  await page.evaluate(() => window.__mhaDemo.generationDone());
  const text = await page.locator('#text').inputValue();
  assert.ok(text.startsWith(DEFAULT_PROBE) && text.length === DEFAULT_PROBE.length + 40, JSON.stringify(text));
  assert.deepEqual(problems, []);
});

test('the same seed and settings give the same curves in the page and in Node (examples/train-tiny.mjs\'s trainer)', { timeout: 300_000 }, async () => {
  const settings = { seed: 11, batchSize: 4, seqLen: 24, steps: 30, evalEvery: 10 };
  await page.locator('#source-train').click();
  await page.evaluate((s) => window.__mhaDemo.startTraining(s), settings);
  await page.waitForFunction(() => { const t = window.__mhaDemo.getState().training; return !t.running && t.step === 30; }, null, { timeout: 0, polling: 250 });
  const inPage = await training();
  // The run's full settings (the ones not given come from the tab's controls, e.g. the learning rate).
  assert.deepEqual({ ...inPage.settings, ...settings }, inPage.settings);
  const mha = await init({ threads: 1 });
  const trainer = new Trainer({ mha, vocab, settings: inPage.settings });
  try {
    let loss;
    for (let step = 1; step <= 30; step++) ({ loss } = trainer.trainStep());
    const { heldOutLoss, headScores } = trainer.evaluate();
    assert.equal(inPage.backend, trainer.backend);
    // The same wasm kernels on both sides: equal up to the threads build's summation order.
    assert.ok(Math.abs(inPage.loss - loss) < 1e-5, `training loss at step 30: page ${inPage.loss}, Node ${loss}`);
    assert.ok(Math.abs(inPage.heldOutLoss - heldOutLoss) < 1e-5, `held-out loss: page ${inPage.heldOutLoss}, Node ${heldOutLoss}`);
    inPage.headScores.forEach((h, i) => assert.ok(Math.abs(h.induction - headScores[i].induction) < 1e-5, `L${h.layer} H${h.head} induction`));
  } finally {
    trainer.dispose();
  }
  assert.deepEqual(problems, []);
});
