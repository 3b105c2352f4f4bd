// The demo page's Patching view in Debian's Chromium, on the tiny GPT-2 checkpoint of
// tools/make_tiny_checkpoints.py loaded in the Your model mode: a head_out sweep run from the
// panel's button has the [layers, heads] shape and the values mha-wasm/models' activationPatching
// gives in Node on the same files (and so do resid_pre, the direct logit attribution and the head
// scores); a cell opens its head (or its layer and position) in the page's views, which show the
// clean run; texts of unequal length are refused with both counts; Cancel stops a sweep; an
// encoder (BERT) is refused by name, with no sweep to run; the four
// exports download.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { activationPatching, directLogitAttribution, headScores, loadModel } from '../../bindings/js/models/index.js';
import { startDemo } from './browser.js';
import { assertClose, checkpointFiles, expectedValues } from '../js/your-model-fixtures.js';

let demo;
let page;
let problems;
let model;  // the same checkpoint in Node (the reference)

const { text: clean, otherText: corrupted } = expectedValues('gpt2');

before(async () => {
  model = await loadModel(await init(), checkpointFiles('gpt2'));
  demo = await startDemo();
  ({ page, problems } = demo);
  await page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
    checkpointFiles('gpt2').map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
});

after(() => {
  model?.dispose();
  return demo?.close();
});

const state = () => page.evaluate(() => window.__mhaDemo.getState());
const setPatching = (inputs) => page.evaluate((i) => window.__mhaDemo.setPatching(i), inputs);
const argmaxLast = ({ data, shape: [, L, V] }) => {
  const row = data.subarray((L - 1) * V, L * V);
  let best = 0;
  for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
  return best;
};
/**
 * Clicks the centre of a figure's cell and waits for the redraw it causes. The wait is registered
 * in the page before the click is sent: Chromium may run an input event before a script evaluation
 * sent ahead of it, and a redraw before the wait would leave it hanging.
 */
async function clickCell(figure, row, col) {
  await page.locator(`.patch-figure[data-figure="${figure}"]`).scrollIntoViewIfNeeded();
  const point = await page.evaluate(([f, r, c]) => window.__mhaDemo.patchingPoint(f, r, c), [figure, row, col]);
  assert.ok(point, `${figure} is drawn`);
  await page.evaluate(() => { window.__cellDrawn = window.__mhaDemo.nextRender(); });
  await page.mouse.click(point.x, point.y);
  await page.evaluate(() => window.__cellDrawn);
}

test('a head_out sweep from the panel\'s button: shape [layers, heads], and the values activationPatching gives in Node', async () => {
  await page.locator('#source-patching').click();
  const s = await setPatching({ clean, corrupted, answer: '', wrong: '' });
  assert.equal((await state()).source, 'patching');
  const ids = { clean: Array.from(model.tokenizer.encode(clean)), corrupted: Array.from(model.tokenizer.encode(corrupted)) };
  assert.deepEqual(s.prepared.clean.ids, ids.clean);
  assert.deepEqual(s.prepared.corrupted.ids, ids.corrupted);
  assert.equal(s.prepared.refused, null);
  assert.equal(await page.locator('#patch-counts').textContent(), `clean ${ids.clean.length} tokens · corrupted ${ids.corrupted.length} tokens`);
  // The defaults: the clean run's top next token, and the corrupted run's.
  const answer = argmaxLast((await model.forward(ids.clean)).logits);
  const wrong = argmaxLast((await model.forward(ids.corrupted)).logits);
  assert.notEqual(answer, wrong, 'the fixture\'s two texts predict different tokens');
  assert.equal(s.prepared.answer.id, answer);
  assert.equal(s.prepared.wrong.id, wrong);

  await page.locator('#patch-over').selectOption('head_out');
  await page.locator('#patch-run').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().patching.sweeps.head_out && !window.__mhaDemo.getState().patching.running);
  const shown = (await state()).patching.sweeps.head_out;
  const reference = await activationPatching(model, { clean: ids.clean, corrupted: ids.corrupted, answer, wrong, over: 'head_out' });
  assert.deepEqual(shown.shape, [model.config.numLayers, model.config.numHeads]);
  assert.deepEqual(shown.shape, reference.shape);
  assertClose(Float32Array.from(shown.data), reference.data, 1e-5, 'head_out');
  assert.equal(await page.locator('#patch-progress-row').isVisible(), false, 'the progress bar goes when the sweep ends');
  assert.equal(await page.locator('#patch-cancel').isDisabled(), true);
  assert.ok((await state()).patching.figures.includes('head_out'));
  assert.equal(await page.locator('.patch-figure[data-figure="head_out"] canvas').isVisible(), true);
  assert.deepEqual(problems, []);
});

test('resid_pre, the direct logit attribution and the head scores equal Node\'s; cells open their head or position', async () => {
  const s = (await state()).patching;
  const { clean: { ids: cleanIds }, corrupted: { ids: corruptedIds }, answer: { id: answer }, wrong: { id: wrong } } = s.prepared;
  const resid = await page.evaluate(() => window.__mhaDemo.runPatching('resid_pre'));
  const reference = await activationPatching(model, { clean: cleanIds, corrupted: corruptedIds, answer, wrong, over: 'resid_pre' });
  assert.deepEqual(resid.shape, [model.config.numLayers, cleanIds.length]);
  assertClose(Float32Array.from(resid.data), reference.data, 1e-5, 'resid_pre');

  const { cache } = await model.runWithCache(cleanIds);
  const dla = directLogitAttribution(model, cache, { answer, wrong });
  for (const part of ['heads', 'mlps', 'accumulated']) {
    assert.deepEqual(s.prepared.attribution[part].shape, dla[part].shape);
    assertClose(Float32Array.from(s.prepared.attribution[part].data), dla[part].data, 1e-4, `attribution ${part}`);
  }
  for (const kind of ['previous_token', 'duplicate_token', 'induction']) {
    assertClose(Float32Array.from(s.prepared.scores[kind].data), headScores(model, cache, kind).data, 1e-5, `${kind} scores`);
  }

  // A head_out cell selects its head in the page's views, which show the clean run.
  await clickCell('head_out', 1, 2);
  let after = await state();
  assert.deepEqual(after.selected, { layer: 1, head: 2 });
  assert.deepEqual(after.ids, cleanIds);
  assert.equal(await page.locator('#selected-description').textContent(), 'Your model: layer 1, head 2.');
  const L = cleanIds.length;
  const weights = await page.evaluate(() => window.__mhaDemo.getWeights(1, 2));
  assertClose(Float32Array.from(weights), cache.get('blocks.1.attn.hook_pattern').data.subarray(2 * L * L, 3 * L * L), 1e-5, 'L1 H2 pattern');
  // A head score's cell and an attribution bar do too.
  await clickCell('score-induction', 0, 3);
  assert.deepEqual((await state()).selected, { layer: 0, head: 3 });
  await clickCell('attribution', 1, 0);
  assert.deepEqual((await state()).selected, { layer: 1, head: 0 });
  // A layer × position cell: its layer, with that position's query row locked.
  await clickCell('resid_pre', 0, 3);
  after = await state();
  assert.equal(after.selected.layer, 0);
  assert.deepEqual(after.focus, { side: 'query', index: 3 });
  assert.equal(after.locked, true);
  assert.deepEqual(problems, []);
});

test('texts of unequal length are refused with both token counts; Cancel stops a sweep', async () => {
  const longer = `${corrupted} and a cat`;
  const n = model.tokenizer.encode(longer).length, m = model.tokenizer.encode(clean).length;
  assert.notEqual(n, m);
  const s = await setPatching({ corrupted: longer });
  assert.equal(s.prepared.refused, `the clean text is ${m} tokens and the corrupted text ${n}: patching needs two of the same length`);
  assert.match(await page.locator('#patch-counts').textContent(), new RegExp(`^Refused: the clean text is ${m} tokens and the corrupted text ${n}`));
  assert.equal(await page.locator('#patch-run').isDisabled(), true);
  assert.deepEqual(s.sweeps, {}, 'the sweeps of other inputs are gone');
  const message = await page.evaluate(() => window.__mhaDemo.runPatching('head_out').then(() => 'ran', (e) => e.message));
  assert.match(message, /patching needs two of the same length/);

  await setPatching({ corrupted });
  const run = await page.evaluate(async () => {
    const hook = window.__mhaDemo;
    const running = hook.runPatching('all');
    const shown = !document.getElementById('patch-progress-row').hidden && !document.getElementById('patch-cancel').disabled;
    hook.cancelPatching();
    return { shown, result: await running };
  });
  assert.equal(run.shown, true, 'the progress bar and Cancel show while the sweep runs');
  assert.deepEqual(run.result, { cancelled: true });
  assert.match(await page.locator('#patch-summary').textContent(), /^Sweep cancelled/);
  assert.equal(await page.locator('#patch-progress-row').isVisible(), false);
  assert.equal((await state()).patching.running, null);
  assert.equal(await page.locator('#patch-run').isDisabled(), false, 'a new sweep can start');
});

test('export: PNG, SVG, CSV and JSON download, the JSON with the sweep', async () => {
  const sweep = await page.evaluate(() => window.__mhaDemo.runPatching('head_out'));
  const saved = {};
  for (const kind of ['png', 'svg', 'csv', 'json']) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator(`#patch-export-${kind}`).click()]);
    assert.equal(download.suggestedFilename(), `patching-gpt2.${kind}`);
    saved[kind] = await readFile(await download.path());
  }
  assert.deepEqual([...saved.png.subarray(1, 4)].map((c) => String.fromCharCode(c)).join(''), 'PNG');
  const svg = saved.svg.toString('utf8');
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(svg, /<g id="head_out">/);
  const csv = saved.csv.toString('utf8').split('\r\n');
  assert.equal(csv[0], 'figure,layer,head,position,token,value');
  assert.ok(csv.some((line) => line.startsWith('patching head_out,1,2,,,')));
  const json = JSON.parse(saved.json.toString('utf8'));
  assert.deepEqual(json.sweeps.head_out.shape, sweep.shape);
  assertClose(Float32Array.from(json.sweeps.head_out.data.flat()), Float32Array.from(sweep.data), 1e-7, 'the JSON\'s head_out');
  assert.deepEqual(json.clean.ids, (await state()).patching.prepared.clean.ids);
  assert.equal(json.answer.id, (await state()).patching.prepared.answer.id);
  assert.deepEqual(problems, []);
});

test('the default model: its head_out and resid_pre sweeps equal mha-wasm/models\' in Node; no mlp_out sweep', async () => {
  const { readSafetensors } = await import('../../bindings/js/index.js');
  const { demoHookedModel } = await import('../../web/demo-hooked.js');
  const dir = new URL('../../web/model/', import.meta.url);
  const vocab = JSON.parse(await readFile(new URL('vocab.json', dir), 'utf8'));
  const reference = await demoHookedModel(await init(), readSafetensors(await readFile(new URL('demo-model.safetensors', dir))), vocab);
  try {
    const texts = { clean: 'the cat sat on the mat', corrupted: 'the dog sat on the rug' };
    const s = await setPatching({ source: 'default', ...texts, answer: '', wrong: '' });
    assert.equal(s.prepared.family, 'attn-only');
    assert.deepEqual(s.prepared.clean.ids, reference.tokenizer.encode(texts.clean));
    assert.equal(await page.locator('#patch-over option[value=mlp_out]').isDisabled(), true);
    const { answer: { id: answer }, wrong: { id: wrong } } = s.prepared;
    for (const over of ['head_out', 'resid_pre']) {
      const shown = await page.evaluate((o) => window.__mhaDemo.runPatching(o), over);
      const expected = await activationPatching(reference, { clean: s.prepared.clean.ids, corrupted: s.prepared.corrupted.ids, answer, wrong, over });
      assert.deepEqual(shown.shape, expected.shape);
      assertClose(Float32Array.from(shown.data), expected.data, 1e-5, `default model ${over}`);
    }
    await setPatching({ source: 'model' });
    assert.equal((await state()).patching.prepared.family, 'gpt2');
    assert.deepEqual(problems, []);
  } finally {
    reference.dispose();
  }
});

test('an encoder loaded in Your model: the Patching panel refuses it by name and runs no sweep', async () => {
  await page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
    checkpointFiles('bert').map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
  await page.locator('#source-patching').click();
  const s = await setPatching({ clean: 'the cat sat on the mat', corrupted: 'the dog sat on the log', answer: '', wrong: '' });
  assert.equal(s.prepared, null);
  assert.match(await page.locator('#patch-empty').textContent(), /^Nothing to show: Patching: not supported on an encoder \(bert\): activation patching and the direct logit attribution read a decoder's next-token logit difference/);
  assert.equal(await page.locator('#patch-summary').textContent(), '', 'the last sweep\'s summary goes');
  assert.equal(await page.locator('#patch-run').isDisabled(), true);
  assert.deepEqual(problems, []);
});
