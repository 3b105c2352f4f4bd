// The demo's Sentiment view in Debian's Chromium: typing a positive and a negated sentence gives
// the labels the package gives in Node, and the 4 heads' weights the page shows equal Node's.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { SentimentModel } from '../../web/sentiment.js';
import { startDemo } from './browser.js';
import { maxDifference } from './node-reference.js';

let demo;
let page;
let problems;
let model;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
  const dir = new URL('../../web/sentiment/', import.meta.url);
  model = new SentimentModel(await init(), readSafetensors(await readFile(new URL('sentiment.safetensors', dir))),
    JSON.parse(await readFile(new URL('vocab.json', dir), 'utf8')));
});

after(async () => {
  model?.dispose();
  await demo?.close();
});

const state = () => page.evaluate(() => window.__mhaDemo.getState());

/** Types a sentence into the Sentiment box and waits until the page shows its words. */
async function classify(text) {
  await page.locator('#sentiment-text').fill('');
  await page.locator('#sentiment-text').pressSequentially(text);
  const words = text.split(' ');
  await page.waitForFunction((w) => {
    const s = window.__mhaDemo.getState();
    return s.sentiment && s.labels.slice(0, w.length).join(' ') === w.join(' ') && s.labels[w.length] === '<pad>';
  }, words);
  return state();
}

test('the Sentiment view: a positive and a negated sentence, labelled as in Node, weights equal Node\'s (1e-5)', { timeout: 180_000 }, async () => {
  await page.locator('#source-sentiment').click();
  for (const [text, label] of [['i loved this movie', 'positive'], ['the film was not good at all', 'negative']]) {
    const s = await classify(text);
    const expected = model.predict(text);
    assert.equal(expected.label, label);
    assert.equal(s.source, 'sentiment');
    assert.equal(s.sentiment.label, label);
    assert.ok(Math.abs(s.sentiment.probability - expected.probability) <= 1e-6);
    assert.equal(await page.locator('#sentiment-result').textContent(), `${label} · p(positive) = ${expected.probability.toFixed(3)}`);
    assert.equal(await page.locator('#prediction-title').textContent(), 'Sentiment');
    assert.deepEqual(s.config, { embedDim: 100, numHeads: 4, numKvHeads: 4 });
    assert.equal(s.labels.length, 32);
    for (let head = 0; head < 4; head++) {
      const shown = await page.evaluate((h) => window.__mhaDemo.getWeights(0, h), head);
      const worst = maxDifference(shown, expected.weights.subarray(head * 1024, (head + 1) * 1024));
      assert.ok(worst <= 1e-5, `head ${head}: ${worst}`);
    }
  }
  // Every head's tile is drawn, and the line view works on the words.
  assert.equal(await page.locator('#grid .tile').count(), 4);
  await page.locator('#view-lines').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().view === 'lines');
  assert.ok(await page.evaluate(() => window.__mhaDemo.linePoint('query', 3)) !== null);
  await page.locator('#view-heatmap').click();
  // Back to the default model: its views return.
  await page.locator('#source-default').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'default' && window.__mhaDemo.getState().sentiment === null);
  assert.equal(await page.locator('#prediction-title').textContent(), 'Next character');
  assert.deepEqual(problems, []);
});
