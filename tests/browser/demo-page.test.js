// The demo page in Debian's Chromium: loads cleanly, draws heatmaps as the user types, shows the
// weights the package computes in Node, and its line view, averaging, export and long inputs work.
// Saves build/screenshot.png; with UPDATE_SCREENSHOT=1, docs/screenshot.png (the README's) too.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';
import { maxDifference, referenceAttention } from './node-reference.js';

// A test run leaves the tracked picture alone unless asked to refresh it.
const SCREENSHOT = new URL(`../../${process.env.UPDATE_SCREENSHOT === '1' ? 'docs' : 'build'}/screenshot.png`, import.meta.url);
let demo;
let page;
let problems; // console errors and uncaught exceptions

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());

/** Types into the text box like a person and waits until the page has drawn that text. */
async function typeText(text) {
  await page.locator('#text').fill('');
  await page.locator('#text').pressSequentially(text);
  await page.waitForFunction((expected) => window.__mhaDemo.getState().labels?.slice(1).join('') === expected, text);
}

/** How many pixels of a canvas are neither white nor the masked grey: a drawn heatmap has many. */
function inkedPixels(selector) {
  return page.$$eval(selector, (canvases) => canvases.map((canvas) => {
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let i = 0; i < data.length; i += 4) {
      const grey = data[i] === data[i + 1] && data[i + 1] === data[i + 2];
      if (!grey && !(data[i] === 228 && data[i + 1] === 231 && data[i + 2] === 238)) count++;
    }
    return count;
  }));
}

async function assertMatchesNode(padding = null) {
  const { ids, numLayers, config } = await state();
  const reference = await referenceAttention(ids, padding);
  const L = ids.length;
  for (let layer = 0; layer < numLayers; layer++) {
    for (let head = 0; head < config.numHeads; head++) {
      const shown = await page.evaluate(([l, h]) => window.__mhaDemo.getWeights(l, h), [layer, head]);
      const expected = reference[layer].perHead.subarray(head * L * L, (head + 1) * L * L);
      const worst = maxDifference(shown, expected);
      assert.ok(worst <= 1e-5, `layer ${layer} head ${head}: largest difference ${worst}`);
    }
  }
  return reference;
}

test('the page loads with no console errors and says which build runs', async () => {
  const s = await state();
  assert.equal(s.source, 'default');
  assert.equal(typeof s.build.simd, 'boolean');
  assert.match(await page.locator('#status').textContent(), new RegExp(`build ${s.build.name} · SIMD (on|off) · threads (on \\(\\d+\\)|off)`));
  assert.match(await page.locator('#status').textContent(), /whole forward pass \d+\.\d\d ms/);
  assert.equal(await page.evaluate(() => crossOriginIsolated), true, 'COOP/COEP make the page cross-origin isolated');
  assert.deepEqual(problems, []);
});

test('typing text redraws every head, the selected head, the outputs and the prediction', async () => {
  const before = (await state()).renders;
  await typeText('the dog likes the red car. the dog li');
  const s = await state();
  assert.ok(s.renders > before);
  assert.equal(s.labels.length, 38);
  assert.equal(s.numLayers, 2);
  const tiles = await inkedPixels('#grid canvas');
  assert.equal(tiles.length, s.numLayers * s.config.numHeads);
  for (const inked of tiles) assert.ok(inked > 100, `a head tile has only ${inked} coloured pixels`);
  const [heatmap] = await inkedPixels('#heatmap');
  assert.ok(heatmap > 1000);
  const [outputs] = await inkedPixels('#outputs');
  assert.ok(outputs > 1000);
  const prediction = s.prediction;
  assert.equal(prediction.length, 5);
  const total = prediction.reduce((sum, p) => sum + p.probability, 0);
  assert.ok(total > 0 && total <= 1 + 1e-6);
  assert.equal(await page.locator('#prediction li').count(), 5);
  assert.deepEqual(problems, []);
});

test('the weights the page shows equal what the package computes in Node (1e-5)', async () => {
  await assertMatchesNode();
  // Hovering a cell of the large heatmap names the tokens and the weight.
  const { labels } = await state();
  const shown = await page.evaluate(() => window.__mhaDemo.getWeights(0, 0));
  const cell = await page.evaluate(() => window.__mhaDemo.heatmapPoint(9, 4));
  await page.mouse.move(cell.x, cell.y);
  assert.equal(await page.locator('#tooltip').textContent(),
    `query 9 '${labels[9]}' → key 4 '${labels[4] === ' ' ? '␣' : labels[4]}': ${shown[9 * labels.length + 4].toFixed(4)}`);
  const masked = await page.evaluate(() => window.__mhaDemo.heatmapPoint(4, 9));
  await page.mouse.move(masked.x, masked.y);
  assert.match(await page.locator('#tooltip').textContent(), /: masked \(causal\)$/);
  // Clicking another head selects it.
  await page.locator('.tile[data-layer="1"][data-head="2"]').click();
  assert.deepEqual((await state()).selected, { layer: 1, head: 2 });
  assert.equal(await page.locator('#selected-title').textContent(), 'Layer 1, head 2');
});

test('padding positions are masked keys: shaded, and still equal to Node', async () => {
  await page.locator('#padding').fill('3');
  await page.waitForFunction(() => window.__mhaDemo.getState().padding?.filter(Boolean).length === 3);
  const { padding } = await state();
  await assertMatchesNode(padding);
  await page.locator('#padding').fill('0');
  await page.waitForFunction(() => window.__mhaDemo.getState().padding === null);
});

test('the averaging toggle shows the mean over heads, equal to the package\'s averageWeights', async () => {
  const { ids } = await state();
  const reference = await referenceAttention(ids);
  await page.locator('input[name=mode][value=mean]').check();
  await page.waitForFunction(() => window.__mhaDemo.getState().mode === 'mean');
  assert.match(await page.locator('#selected-title').textContent(), /averaged over heads/);
  for (const layer of [0, 1]) {
    const shown = await page.evaluate((l) => window.__mhaDemo.getWeights(l, 'mean'), layer);
    assert.ok(maxDifference(shown, reference[layer].mean) <= 1e-5);
  }
  await page.locator('input[name=mode][value=head]').check();
});

test('the threshold slider hides weights below it', async () => {
  const before = (await inkedPixels('#heatmap'))[0];
  await page.locator('#threshold').fill('0.3');
  await page.waitForFunction(() => document.getElementById('threshold-value').textContent === '0.30');
  const after = (await inkedPixels('#heatmap'))[0];
  assert.ok(after < before, `coloured pixels ${before} -> ${after}`);
  await page.locator('#threshold').fill('0');
});

test('the line view shows a token\'s attention on hover and locks it on click', async () => {
  await page.locator('.tile[data-layer="0"][data-head="0"]').click();
  await page.locator('#view-lines').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().view === 'lines');
  const [inked] = await inkedPixels('#lines');
  assert.ok(inked > 200, 'lines are drawn');
  const point = await page.evaluate(() => window.__mhaDemo.linePoint('query', 10));
  await page.mouse.move(point.x, point.y);
  await page.waitForFunction(() => window.__mhaDemo.getState().focus?.index === 10);
  assert.deepEqual((await state()).focus, { side: 'query', index: 10 });
  await page.mouse.click(point.x, point.y);
  assert.equal((await state()).locked, true);
  // Locked: moving elsewhere keeps the focus.
  const other = await page.evaluate(() => window.__mhaDemo.linePoint('key', 3));
  await page.mouse.move(other.x, other.y);
  assert.deepEqual((await state()).focus, { side: 'query', index: 10 });
  await page.mouse.click(point.x, point.y); // a second click on the same token unlocks
  assert.equal((await state()).locked, false);
  assert.deepEqual(problems, []);
});

test('export downloads the current view as PNG and the weights as JSON', async () => {
  const [png] = await Promise.all([page.waitForEvent('download'), page.locator('#export-png').click()]);
  assert.match(png.suggestedFilename(), /^attention-layer0-head0-lines\.png$/);
  const pngBytes = await readFile(await png.path());
  assert.deepEqual([...pngBytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

  await page.locator('#view-heatmap').click();
  const [json] = await Promise.all([page.waitForEvent('download'), page.locator('#export-json').click()]);
  assert.equal(json.suggestedFilename(), 'attention-layer0-weights.json');
  const exported = JSON.parse(await readFile(await json.path(), 'utf8'));
  const s = await state();
  const L = s.labels.length;
  assert.deepEqual(exported.shape, [4, L, L]);
  assert.deepEqual(exported.tokens, s.labels);
  const shown = await page.evaluate(() => window.__mhaDemo.getWeights(0, 2));
  assert.ok(maxDifference(exported.weights[2].flat(), shown) === 0);
  assert.equal(exported.meanWeights.length, L);
});

test('a 1000-token input renders every view', async () => {
  const text = 'the old teacher reads a book near the river. '.repeat(23).slice(0, 999);
  const started = Date.now();
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  const elapsed = Date.now() - started;
  const s = await state();
  assert.equal(s.labels.length, 1000);
  for (const inked of await inkedPixels('#grid canvas')) assert.ok(inked > 100);
  const [heatmap] = await inkedPixels('#heatmap');
  assert.ok(heatmap > 1000);
  // The weights stay exact at this size too (spot-check one head).
  const reference = await referenceAttention(s.ids);
  const shown = await page.evaluate(() => window.__mhaDemo.getWeights(1, 1));
  assert.ok(maxDifference(shown, reference[1].perHead.subarray(1000 * 1000, 2 * 1000 * 1000)) <= 1e-5);
  // The line view shows a window of the tokens, chosen with a slider.
  await page.locator('#view-lines').click();
  assert.equal(await page.locator('#lines-window-label').isVisible(), true);
  await page.locator('#lines-start').fill('900');
  assert.match(await page.locator('#lines-hint').textContent(), /Showing tokens 900–999 of 1000/);
  assert.ok((await inkedPixels('#lines'))[0] > 200);
  await page.locator('#view-heatmap').click();
  console.log(`1000 tokens: forward in wasm ${s.wasmMs.toFixed(1)} ms; drawing ${s.renderMs.toFixed(0)} ms; text set to drawn ${elapsed} ms`);
  assert.deepEqual(problems, []);
});

test('the default view, saved as a screenshot', async () => {
  // Show the clearest induction head: the picture then explains the prediction.
  const { heads } = JSON.parse(await readFile(new URL('../../web/model/heads.json', import.meta.url), 'utf8'));
  const best = heads.reduce((a, b) => (b.scores.induction > a.scores.induction ? b : a));
  // The page's own default text: a made-up name seen once, then its start again.
  const defaultText = await page.locator('#text').evaluate((box) => box.defaultValue);
  await page.evaluate((text) => window.__mhaDemo.setText(text), defaultText);
  const { prediction, labels } = await state();
  assert.equal(prediction[0].token, 'm', 'the default model copies the name: kelu -> m');
  // The best induction head's last query looks at the "m" that followed the earlier "kelu".
  const weights = await page.evaluate(([l, h]) => window.__mhaDemo.getWeights(l, h), [best.layer, best.head]);
  const L = labels.length;
  const lastRow = weights.slice((L - 1) * L);
  const strongest = lastRow.indexOf(Math.max(...lastRow));
  assert.equal(labels[strongest], 'm');
  assert.equal(labels.slice(1, strongest + 1).join(''), 'kelum');
  await page.locator(`.tile[data-layer="${best.layer}"][data-head="${best.head}"]`).click();
  await mkdir(new URL('.', SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT.pathname, fullPage: true });
  const bytes = await readFile(SCREENSHOT);
  assert.ok(bytes.length > 10_000);
  assert.deepEqual(problems, []);
});
