// The demo's Generate mode in Debian's Chromium: the text it writes with and without the KV cache,
// against the package in Node; Stop; typing stops it and an edit truncates the cache to the
// unchanged prefix; the page answers input while generating. Saves build/generate-screenshot.png
// mid-generation (UPDATE_SCREENSHOT=1: docs/generate-screenshot.png, docs/demo.md's).
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { DemoModel, tokenize } from '../../web/model.js';
import { startDemo } from './browser.js';
import { maxDifference, referenceAttention } from './node-reference.js';

const SCREENSHOT = new URL(`../../${process.env.UPDATE_SCREENSHOT === '1' ? 'docs' : 'build'}/generate-screenshot.png`, import.meta.url);
const PROMPT = 'the kelu sat on the mat. the kelu';
let demo;
let page;
let problems;
let model;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
  const modelDir = new URL('../../web/model/', import.meta.url);
  model = new DemoModel(await init(), readSafetensors(await readFile(new URL('demo-model.safetensors', modelDir))),
    JSON.parse(await readFile(new URL('vocab.json', modelDir), 'utf8')));
});

after(async () => {
  model?.dispose();
  await demo?.close();
});

const state = () => page.evaluate(() => window.__mhaDemo.getState());

/** Node's greedy continuation, written out here: the model's step() through KV caches, <bos>/<unk> never chosen. */
function nodeGreedy(prompt, count) {
  const { ids } = tokenize(prompt, model.vocab);
  const caches = model.createCaches(ids.length + count);
  let logits;
  for (const id of ids) logits = model.step(id, caches);
  const banned = [model.vocab.bos, model.vocab.unk];
  const out = [];
  for (let n = 0; n < count; n++) {
    let best = -1;
    for (let v = 0; v < logits.length; v++) if (!banned.includes(v) && (best < 0 || logits[v] > logits[best])) best = v;
    out.push(best);
    logits = model.step(best, caches);
  }
  caches.forEach((c) => c.dispose());
  return out.map((id) => model.vocab.tokens[id]).join('');
}

/** Sets the generation form like a person would. */
async function settings({ count, sampling = 'greedy', temperature, topK, seed, noCache = false }) {
  await page.locator('#gen-count').fill(String(count));
  await page.locator('#gen-sampling').selectOption(sampling);
  if (temperature !== undefined) await page.locator('#gen-temperature').fill(String(temperature));
  if (topK !== undefined) await page.locator('#gen-topk').fill(String(topK));
  if (seed !== undefined) await page.locator('#gen-seed').fill(String(seed));
  await page.locator('#gen-no-cache').setChecked(noCache);
}

/** Puts the prompt in the text box (drawn), generates, and returns the text the page added. */
async function generate(options) {
  await page.evaluate((text) => window.__mhaDemo.setText(text), PROMPT);
  await settings(options);
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated > 0 || window.__mhaDemo.getState().generation.running);
  await page.evaluate(() => window.__mhaDemo.generationDone());
  const text = await page.locator('#text').inputValue();
  assert.ok(text.startsWith(PROMPT));
  return text.slice(PROMPT.length);
}

test('greedy: 100 tokens, the same with and without the cache and as the package in Node; weights equal Node\'s', { timeout: 180_000 }, async () => {
  const expected = nodeGreedy(PROMPT, 100);
  assert.equal(expected.length, 100);

  const cached = await generate({ count: 100 });
  assert.equal(cached, expected);
  const s = await state();
  const promptTokens = tokenize(PROMPT, model.vocab).ids.length;
  assert.equal(s.labels.length, promptTokens + 100);
  assert.deepEqual(s.generation.running, false);
  assert.equal(s.generation.generated, 100);
  assert.equal(s.generation.useCache, true);
  assert.equal(s.generation.cacheLength, promptTokens + 100, 'every token went through the cache');
  assert.ok(s.generation.tokensPerSecond > 0 && s.generation.msPerToken > 0 && s.generation.attentionMsPerToken > 0);
  assert.match(await page.locator('#status').textContent(),
    /generated 100 \/ 100 · KV cache 134 tokens · [\d,]+ tokens\/s · \d+\.\d{3} ms per token, attention layers \d+\.\d{3} ms/);
  assert.equal(s.prediction.length, 5, 'the next-character bars show the step after the last token');

  // Every row the page shows (the prompt's from one forward, then one row per generated token),
  // and so the last row, equals the package's full causal forward in Node over the whole text.
  const reference = await referenceAttention(s.ids);
  const L = s.ids.length;
  for (let layer = 0; layer < 2; layer++) {
    for (let head = 0; head < 4; head++) {
      const shown = await page.evaluate(([l, h]) => window.__mhaDemo.getWeights(l, h), [layer, head]);
      const expectedRows = reference[layer].perHead.subarray(head * L * L, (head + 1) * L * L);
      assert.ok(maxDifference(shown.slice((L - 1) * L), expectedRows.subarray((L - 1) * L)) <= 1e-5, `layer ${layer} head ${head}: last row`);
      assert.ok(maxDifference(shown, expectedRows) <= 1e-5, `layer ${layer} head ${head}: every row`);
    }
  }

  const recomputed = await generate({ count: 100, noCache: true });
  assert.equal(recomputed, expected, 'no cache: the same tokens by recomputing the whole text');
  const n = await state();
  assert.equal(n.generation.useCache, false);
  assert.match(await page.locator('#status').textContent(), /generated 100 \/ 100 · no cache \(whole text each token\)/);
  assert.deepEqual(problems, []);
});

test('sampled: a seed repeats its text, another seed writes another; top-k and temperature reach the worker', { timeout: 180_000 }, async () => {
  const first = await generate({ count: 60, sampling: 'sample', temperature: 0.8, topK: 10, seed: 5 });
  const again = await generate({ count: 60, sampling: 'sample', temperature: 0.8, topK: 10, seed: 5 });
  const other = await generate({ count: 60, sampling: 'sample', temperature: 0.8, topK: 10, seed: 6 });
  assert.equal(first.length, 60);
  assert.equal(again, first);
  assert.notEqual(other, first);
  // top-k 1 is greedy whatever the temperature.
  const topOne = await generate({ count: 40, sampling: 'sample', temperature: 5, topK: 1, seed: 9 });
  assert.equal(topOne, nodeGreedy(PROMPT, 40));
  // A bad field is named, and nothing runs.
  const before = await page.locator('#text').inputValue();
  await settings({ count: 5000 });
  await page.locator('#gen-start').click();
  assert.equal(await page.locator('#message').textContent(), 'Tokens to generate: a whole number from 1 to 2000, not \'5000\'.');
  await settings({ count: 10, sampling: 'sample', temperature: 0 });
  await page.locator('#gen-start').click();
  assert.equal(await page.locator('#message').textContent(), 'Temperature: a number above 0, not \'0\'.');
  assert.equal(await page.locator('#text').inputValue(), before);
  assert.equal((await state()).generation.running, false);
  // A prompt that leaves the caches no room for the tokens asked for: the worker's RangeError.
  const long = 'the red boat. '.repeat(150);
  await page.evaluate((text) => window.__mhaDemo.setText(text), long);
  await settings({ count: 2000 });
  await page.locator('#gen-start').click();
  await page.evaluate(() => window.__mhaDemo.generationDone());
  assert.equal(await page.locator('#message').textContent(),
    `Could not generate: the prompt (${long.length + 1} tokens) plus count (2000) must fit in 4096 tokens`);
  assert.equal(await page.locator('#text').inputValue(), long);
  assert.equal(await page.locator('#gen-start').isDisabled(), false);
  assert.deepEqual(problems, []);
});

test('Stop stops; while generating the page handles input, keeps generating and drops nothing, and the views follow the newest token', { timeout: 180_000 }, async () => {
  await page.locator('#view-lines').click();
  await page.evaluate((text) => window.__mhaDemo.setText(text), PROMPT);
  await settings({ count: 2000, noCache: true });  // the slow way: the run lasts long enough to watch
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 150, null, { timeout: 60_000 });
  // Each mouse event handled: whether a run was going on (Stop enabled) and how long it waited
  // (bench/demo-generate.mjs measures that delay; here only a hang, seconds long, fails).
  await page.evaluate(() => {
    window.inputEvents = [];
    addEventListener('mousemove', (event) => window.inputEvents.push({
      waitedMs: performance.now() - event.timeStamp, running: !document.querySelector('#gen-stop').disabled,
    }), { capture: true });
  });
  const before = await state();
  const box = await page.locator('#grid').boundingBox();
  for (let k = 0; k < 30; k++) {
    await page.mouse.move(box.x + 10 + 10 * k, box.y + 20 + (k % 5));
    await new Promise((resolve) => { setTimeout(resolve, 30); });
  }
  // Read right after a redraw: tokens may arrive between redraws.
  const during = await page.evaluate(async () => {
    await window.__mhaDemo.nextRender();
    return window.__mhaDemo.getState();
  });
  assert.equal(during.generation.running, true);
  assert.ok(during.generation.generated > before.generation.generated, 'the run went on while the events came');
  const events = await page.evaluate(() => window.inputEvents);
  assert.ok(events.length >= 20, `${events.length} mouse events handled`);
  assert.ok(events.every((e) => e.running), 'every event was handled while the run was going on');
  const worst = Math.max(...events.map((e) => e.waitedMs));
  assert.ok(worst < 5000, `an input event waited ${worst.toFixed(0)} ms: the page hung`);
  assert.equal(during.focus.index, during.labels.length - 1, 'the line view shows the newest token\'s row');
  await page.locator('#view-heatmap').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 250, null, { timeout: 60_000 });
  await mkdir(new URL('.', SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT.pathname });
  assert.ok((await readFile(SCREENSHOT)).length > 10_000);

  await page.locator('#gen-stop').click();
  const stopped = await state();
  assert.equal(stopped.generation.running, false);
  assert.ok(stopped.generation.generated < 2000);
  await new Promise((resolve) => { setTimeout(resolve, 500); });
  const later = await state();
  assert.equal(later.generation.generated, stopped.generation.generated, 'nothing arrives after Stop');
  assert.equal((await page.locator('#text').inputValue()).length, PROMPT.length + stopped.generation.generated);
  assert.equal(await page.locator('#gen-start').isDisabled(), false);
  assert.equal(await page.locator('#gen-stop').isDisabled(), true);

  assert.deepEqual(problems, []);
});

test('a keystroke in the middle of a run stops it there: nothing generated arrives after the key', { timeout: 180_000 }, async () => {
  await page.evaluate((text) => window.__mhaDemo.setText(text), PROMPT);
  await settings({ count: 2000, noCache: true });  // slow enough that the key lands mid-run
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 60, null, { timeout: 60_000 });
  await page.locator('#text').press('End');
  await page.locator('#text').pressSequentially('x');
  const typed = await state();
  assert.equal(typed.generation.running, false);
  assert.ok(typed.generation.generated < 2000, `the run had ended before the key (${typed.generation.generated} tokens)`);
  const text = await page.locator('#text').inputValue();
  assert.ok(text.endsWith('x'), 'the key is the last character: no generated text after it');
  await page.waitForFunction((t) => window.__mhaDemo.getState().labels.slice(1).join('') === t, text);
  await new Promise((resolve) => { setTimeout(resolve, 500); });
  assert.equal(await page.locator('#text').inputValue(), text);
  assert.equal((await state()).generation.generated, typed.generation.generated, 'nothing arrives after the key');
  assert.equal(await page.locator('#gen-start').isDisabled(), false);
  assert.deepEqual(problems, []);
});

test('typing stops generation; editing earlier text truncates the cache to the unchanged prefix', { timeout: 180_000 }, async () => {
  await page.evaluate((text) => window.__mhaDemo.setText(text), PROMPT);
  await settings({ count: 2000 });
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 20);
  await page.locator('#text').press('End');
  await page.locator('#text').pressSequentially('x');
  const typed = await state();
  assert.equal(typed.generation.running, false, 'a keystroke stops generation');
  const text = await page.locator('#text').inputValue();
  assert.ok(text.endsWith('x'));
  await page.waitForFunction((t) => window.__mhaDemo.getState().labels.slice(1).join('') === t, text);
  // Typing at the end keeps every cached token of the text before it.
  const kept = await state();
  assert.equal(kept.generation.cacheLength, text.length, `<bos> + ${text.length - 1} characters stay cached`);

  // An edit at character 10: the cache keeps <bos> and the 10 characters before it.
  const edited = `${text.slice(0, 10)}Q${text.slice(11)}`;
  await page.locator('#text').fill(edited);
  await page.waitForFunction((t) => window.__mhaDemo.getState().labels.slice(1).join('') === t, edited.toLowerCase());
  assert.equal((await state()).generation.cacheLength, 11);

  // Generating again runs only the text after the kept prefix through the cache.
  await settings({ count: 10 });
  await page.locator('#gen-start').click();
  await page.evaluate(() => window.__mhaDemo.generationDone());
  const after = await state();
  assert.equal(after.generation.reused, 11);
  assert.equal(after.generation.cacheLength, edited.length + 1 + 10);
  assert.deepEqual(problems, []);
});
