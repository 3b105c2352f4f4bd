// The Sentiment tab's "Train in this browser" in Debian's Chromium, through the page's test hook:
// a short run from a fresh initialisation (tfjs in the training worker, mha-wasm's attention)
// gives curves of the right lengths, finite, with the loss falling and the accuracy reached; the
// page kept drawing frames and classifying typed sentences while it trained; afterwards the box
// classifies with the new weights and shows their 4 heads; Stop ends a run after its current batch.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';

let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
// A short run: 200 sentences (160 to train on, 5 batches of 32; 40 for validation), 20 epochs,
// Adam 0.003: enough for the model to fit its training sentences (measured in Node: training
// accuracy 0.82-0.97 from epoch 12 on, after a plateau at chance of 6-8 epochs), in a minute or two.
// Validation accuracy stays near chance on so few sentences: the full run is the page's default.
const SETTINGS = { epochs: 20, samples: 200, batchSize: 32, learningRate: 0.003 };

/** Types a sentence into the Sentiment box and waits until the page shows its classification. */
async function classify(text) {
  await page.locator('#sentiment-text').fill('');
  await page.locator('#sentiment-text').pressSequentially(text);
  await page.waitForFunction((t) => window.__mhaDemo.getState().sentiment?.text === t, text, { polling: 100 });
  return state();
}

const finite = (values) => values.every((v) => Number.isFinite(v));
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

test('a short run trains in the worker; curves, accuracy, a responsive page, then the new weights classify', { timeout: 1_200_000 }, async () => {
  await page.locator('#source-sentiment').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().sentiment !== null);
  const shipped = (await state()).sentiment;
  assert.equal(shipped.model, 'shipped');
  const tfjsLoadedBefore = await page.evaluate(() => performance.getEntriesByType('resource').some((e) => e.name.includes('tfjs')));
  assert.equal(tfjsLoadedBefore, false, 'the page loads tfjs only when training starts');

  await page.evaluate((s) => window.__mhaDemo.startSentimentTraining(s), SETTINGS);
  const started = (await state()).sentimentTraining;
  assert.equal(started.running, true);
  assert.equal(started.phase, 'training');
  assert.equal(started.backend, 'wasm', 'the page trains on tfjs\' wasm backend (the faster in Chromium, docs/tfjs.md)');
  assert.equal(started.epochs, 20);
  assert.equal(await page.locator('#sentiment-stop').isDisabled(), false);
  assert.equal(await page.locator('#sentiment-train').isDisabled(), true);

  // While it trains, a typed sentence is classified (by the page's worker, with the shipped model).
  const typed = await classify('the acting was not good');
  assert.equal(typed.sentiment.model, 'shipped');
  assert.equal(typed.sentimentTraining.running, true, 'the sentence was classified while training ran');
  await page.waitForFunction(() => (window.__mhaDemo.getState().sentimentTraining?.curves.x.length ?? 0) > 0, null, { polling: 200 });
  assert.equal(await page.locator('#sentiment-charts').isVisible(), true);
  assert.equal(await page.locator('#sentiment-charts canvas').count(), 2, 'the loss and accuracy charts');

  const done = await page.evaluate(() => window.__mhaDemo.sentimentTrainingDone());
  assert.equal(done.error, null);
  assert.equal(done.running, false);
  assert.equal(done.finished, true);
  assert.equal(done.stopped, false);
  assert.equal(done.batchesPerEpoch, 5);
  assert.equal(done.progress, 1);
  assert.equal(await page.locator('#sentiment-progress').evaluate((p) => p.value), 1);
  // Per-epoch history: one entry per epoch, finite; the training loss falls and the accuracy is reached.
  const h = done.history;
  for (const key of ['loss', 'accuracy', 'valLoss', 'valAccuracy', 'seconds']) {
    assert.equal(h[key].length, 20, `history.${key}`);
    assert.ok(finite(h[key]), `history.${key}: ${h[key]}`);
  }
  assert.ok(Math.min(...h.loss.slice(-5)) < h.loss[0] - 0.2, `training loss ${h.loss}`);
  assert.ok(Math.max(...h.accuracy.slice(-8)) >= 0.75, `training accuracy: ${h.accuracy}`);
  assert.ok(h.valAccuracy.every((a) => a >= 0 && a <= 1));
  // Per-batch curves (running means, throttled to ~10 a second): within the batches, x rising to 20.
  const c = done.curves;
  assert.ok(c.x.length >= 20 && c.x.length <= 100, `${c.x.length} points`);
  assert.equal(c.loss.length, c.x.length);
  assert.equal(c.accuracy.length, c.x.length);
  assert.ok(finite(c.loss) && finite(c.accuracy) && finite(c.x));
  assert.ok(c.x.every((x, i) => i === 0 || x > c.x[i - 1]));
  assert.equal(c.x.at(-1), 20);
  const firstEpoch = c.loss.filter((_, i) => c.x[i] <= 1), lastEpoch = c.loss.filter((_, i) => c.x[i] > 19);
  assert.ok(mean(lastEpoch) < mean(firstEpoch), `loss curve: first epoch ${firstEpoch}, last ${lastEpoch}`);
  // The page answered while the worker trained: frames drawn, the typed sentence classified.
  assert.ok(done.framesDuringTraining >= 30, `${done.framesDuringTraining} animation frames during training`);
  assert.ok(done.inputsDuringTraining >= 1, `${done.inputsDuringTraining} sentences classified during training`);
  assert.match(await page.locator('#sentiment-train-summary').textContent(), /trained on tfjs' wasm backend · epoch 20 \/ 20 .* now classifying with these weights/);

  // Afterwards the box classifies with the trained weights and shows their 4 heads.
  assert.equal(await page.locator('#sentiment-model').inputValue(), 'trained');
  const trained = await classify('i loved this movie');
  assert.equal(trained.sentiment.model, 'trained');
  assert.equal(trained.source, 'sentiment');
  assert.deepEqual(trained.config, { embedDim: 100, numHeads: 4, numKvHeads: 4 });
  assert.deepEqual(trained.labels.slice(0, 4), ['i', 'loved', 'this', 'movie']);
  assert.equal(trained.labels.length, 32);
  assert.equal(await page.locator('#grid .tile').count(), 4);
  for (let head = 0; head < 4; head++) {
    const weights = await page.evaluate((hd) => window.__mhaDemo.getWeights(0, hd), head);
    assert.equal(weights.length, 32 * 32);
    for (let i = 0; i < 32; i++) {
      const row = weights.slice(i * 32, (i + 1) * 32);
      assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-4, `head ${head} row ${i} sums to 1`);
    }
  }
  // Back to the shipped model: the same sentence as before gets the shipped model's answer.
  await page.locator('#sentiment-model').selectOption('shipped');
  const again = await classify('the acting was not good');
  assert.equal(again.sentiment.model, 'shipped');
  assert.ok(Math.abs(again.sentiment.probability - typed.sentiment.probability) < 1e-6);
  assert.deepEqual(problems, []);
});

test('Stop ends a run after its current batch; its weights then classify', { timeout: 600_000 }, async () => {
  await page.evaluate(() => window.__mhaDemo.startSentimentTraining({ epochs: 50, samples: 200, batchSize: 32 }));
  await page.waitForFunction(() => (window.__mhaDemo.getState().sentimentTraining?.batch ?? 0) >= 2, null, { polling: 100 });
  const stopped = await page.evaluate(() => window.__mhaDemo.stopSentimentTraining());
  assert.equal(stopped.running, false);
  assert.equal(stopped.stopped, true);
  assert.equal(stopped.finished, false);
  assert.ok(stopped.epoch < 50 && stopped.progress < 1);
  assert.ok(stopped.history.loss.length < 50);
  assert.equal(await page.locator('#sentiment-train').isDisabled(), false);
  assert.equal(await page.locator('#sentiment-stop').isDisabled(), true);
  const s = await classify('the film was fun');
  assert.equal(s.sentiment.model, 'trained');
  assert.match(await page.locator('#sentiment-train-summary').textContent(), /^stopped on tfjs' wasm backend/);
  assert.deepEqual(problems, []);
});
