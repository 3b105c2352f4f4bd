// The demo page's frame in Debian's Chromium: every mode's tab is visible and clickable at common
// window sizes (the sidebar is 300 px wide), the Your model loading row goes away when a load ends,
// the head's caption names Your model's layer and head, and a refused checkpoint (first, and after
// a loaded one) leaves the page on a model that answers: setText settles and the message stays.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';
import { checkpointFiles } from '../js/your-model-fixtures.js';

let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
/** Hands files ({ name, bytes }) to the test hook's loadModel; resolves with 'loaded' or the rejection's message. */
const loadFiles = (files) => page.evaluate((fs) => window.__mhaDemo.loadModel(fs.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) })))
  .then(() => 'loaded', (error) => error.message), files.map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
/** The gpt2 fixture with one file's bytes replaced. */
const gpt2With = (name, bytes) => checkpointFiles('gpt2').map((f) => (f.name === name ? { name, bytes: bytes(f.bytes) } : f));
/** setText, or 'timed out' when it has not settled after 20 s (the bug: it waited forever). */
const setTextSettles = (text) => page.evaluate((t) => Promise.race([
  window.__mhaDemo.setText(t).then(() => 'settled', (error) => `rejected: ${error.message}`),
  new Promise((resolve) => { setTimeout(() => resolve('timed out'), 20_000); }),
]), text);

/** Every tab of the mode tablist: { id, name, box, hit } (hit: the element at the tab's centre is the tab or inside it). */
const modeTabs = () => page.evaluate(() => [...document.querySelectorAll('#source-tabs [role=tab]')].map((tab) => {
  const r = tab.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const sidebar = tab.closest('aside').getBoundingClientRect();
  return {
    id: tab.id, name: tab.textContent, hit: tab.contains(hit),
    box: { left: r.left, right: r.right, top: r.top, bottom: r.bottom },
    sidebar: { left: sidebar.left, right: sidebar.right },
    viewport: { width: innerWidth, height: innerHeight },
  };
}));

for (const [width, height] of [[1400, 1000], [1024, 768], [1280, 800]]) {
  test(`at ${width} × ${height} every mode's tab is inside the viewport and the sidebar, and clicking it selects that mode`, async () => {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => scrollTo(0, 0));
    const tabs = await modeTabs();
    assert.ok(tabs.length >= 5, `the modes: ${tabs.map((t) => t.name)}`);
    assert.ok(tabs.some((t) => t.name === 'Your model'));
    for (const tab of tabs) {
      const { box, sidebar, viewport } = tab;
      assert.ok(box.left >= 0 && box.top >= 0 && box.right <= viewport.width && box.bottom <= viewport.height,
        `${tab.name}: ${JSON.stringify(box)} outside the ${viewport.width} × ${viewport.height} viewport`);
      assert.ok(box.left >= sidebar.left && box.right <= sidebar.right, `${tab.name}: ${JSON.stringify(box)} overflows the sidebar ${JSON.stringify(sidebar)}`);
      assert.ok(tab.hit, `${tab.name}: another element covers its centre`);
    }
    for (const tab of tabs) {
      await page.locator(`#${tab.id}`).click();
      const selected = await page.evaluate(() => [...document.querySelectorAll('#source-tabs [role=tab]')]
        .filter((t) => t.getAttribute('aria-selected') === 'true').map((t) => t.id));
      assert.deepEqual(selected, [tab.id], `after clicking ${tab.name}`);
      const panel = tab.id.replace(/^source-/, '');
      assert.equal(await page.locator(`#${panel}-panel`).isVisible(), true, `${tab.name}'s panel shows`);
    }
    await page.locator('#source-default').click();
    assert.equal((await state()).source, 'default');
  });
}

test('the Your model tab with no model: the panel says so and setText settles', async () => {
  await page.setViewportSize({ width: 1360, height: 1000 });
  await page.locator('#source-model').click();
  assert.match(await page.locator('#model-summary').textContent(), /No model loaded/);
  assert.equal(await page.locator('#model-loading').isVisible(), false);
  assert.equal(await setTextSettles('the cat'), 'settled');
  assert.equal((await state()).model, null);
  await page.locator('#source-default').click();
});

test('a first checkpoint refused (a truncated model.safetensors, then an unknown model_type): the page goes back to the default model, setText settles', async () => {
  const truncated = gpt2With('model.safetensors', (bytes) => bytes.subarray(0, Math.floor(bytes.length / 2)));
  const message = await loadFiles(truncated);
  assert.match(message, /^Could not load the model: .*model\.safetensors/);
  assert.equal(await page.locator('#message').isVisible(), true);
  assert.equal(await page.locator('#message').textContent(), message);
  assert.equal(await page.locator('#model-loading').isVisible(), false, 'the progress bar and Cancel are gone');
  let s = await state();
  assert.equal(s.source, 'default');
  assert.equal(s.model, null);
  assert.equal(await page.locator('#source-default').getAttribute('aria-selected'), 'true');
  assert.equal(await page.locator('#default-panel').isVisible(), true);
  assert.equal(await setTextSettles('kelumi likes the boat. kelu'), 'settled');
  s = await state();
  assert.equal(s.labels.slice(1).join(''), 'kelumi likes the boat. kelu', 'the default model drew the text');

  const t5 = gpt2With('config.json', () => new TextEncoder().encode('{"model_type":"t5","architectures":["T5Model"]}'));
  const second = await loadFiles(t5);
  assert.match(second, /^Could not load the model: config\.json: model_type "t5"/);
  assert.equal(await page.locator('#message').textContent(), second);
  assert.equal((await state()).source, 'default');
  assert.equal(await setTextSettles('the red boat'), 'settled');
  assert.equal((await state()).labels.slice(1).join(''), 'the red boat');
  assert.deepEqual(problems, []);
});

test('a checkpoint loaded: the loading row goes, the caption names the layer and head; one refused after it keeps it', async () => {
  assert.equal(await loadFiles(checkpointFiles('gpt2')), 'loaded');
  assert.equal(await page.locator('#model-loading').isVisible(), false, 'the progress bar and Cancel are gone');
  assert.equal(await page.locator('#message').isVisible(), false);
  await page.evaluate(() => window.__mhaDemo.setText('the cat met a dog. the cat'));
  // (the wait is registered before the click: Chromium may run the click before an evaluation sent ahead of it)
  await page.evaluate(() => { window.__tileDrawn = window.__mhaDemo.nextRender(); });
  await page.locator('#grid .tile[data-layer="1"][data-head="2"]').click();
  await page.evaluate(() => window.__tileDrawn);
  assert.equal(await page.locator('#selected-description').textContent(), 'Your model: layer 1, head 2.');

  const truncated = gpt2With('model.safetensors', (bytes) => bytes.subarray(0, 100));
  const message = await loadFiles(truncated);
  assert.match(message, /^Could not load the model: /);
  assert.equal(await page.locator('#message').textContent(), message);
  assert.equal(await page.locator('#model-loading').isVisible(), false);
  const s = await state();
  assert.equal(s.source, 'model', 'the page stays on the model it had');
  assert.equal(s.model.family, 'gpt2');
  assert.equal(await setTextSettles('the dog met a cat. the dog'), 'settled');
  assert.equal((await state()).labels.length, 8, 'the GPT-2 checkpoint drew the text');
  assert.deepEqual(problems, []);
});
