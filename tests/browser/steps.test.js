// The demo page's Steps view in Debian's Chromium: the numbers it draws for a layer, head and
// query equal the package's `capture` in Node for the same tokens and the head view's weights;
// hovering a score and a softmax cell shows their arithmetic; the code tabs switch and follow the
// hovered step; ablating and patching a head change the steps and the prediction; the Sentiment
// mode's steps are bidirectional; Generate with an ablated or patched head equals Node's greedy
// generation with the same patch, the whole text each token. Saves build/steps-screenshot.png; with UPDATE_SCREENSHOT=1,
// docs/steps-screenshot.png (the README's) too.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { sinusoidalPositions, tokenize } from '../../web/model.js';
import { startDemo } from './browser.js';

const SCREENSHOT = new URL(`../../${process.env.UPDATE_SCREENSHOT === '1' ? 'docs' : 'build'}/steps-screenshot.png`, import.meta.url);
let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
const showSteps = (where) => page.evaluate((w) => window.__mhaDemo.showSteps(w), where);

/**
 * The demo model's steps in Node, through the package's capture (and an optional z patch per
 * layer), written out here rather than through web/model.js: per layer, { captured, output }.
 */
async function nodeSteps(ids, patches = []) {
  return (await nodeRun(ids, patches)).layers;
}

/** nodeSteps' layers, and the logits [V] of the token after the last one (the unembedding of the last row). */
async function nodeRun(ids, patches = []) {
  const mha = await init();
  const { tensors, metadata } = readSafetensors(await readFile(new URL('../../web/model/demo-model.safetensors', import.meta.url)));
  const E = Number(metadata.dModel), H = Number(metadata.numHeads), L = ids.length;
  const x = sinusoidalPositions(L, E);
  ids.forEach((id, pos) => { for (let i = 0; i < E; i++) x[pos * E + i] += tensors['tok_embed.weight'].data[id * E + i]; });
  const layers = [];
  for (let l = 0; l < Number(metadata.numLayers); l++) {
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
    try {
      const keys = ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'];
      layer.loadStateDict(Object.fromEntries(keys.map((k) => [k, tensors[`layers.${l}.${k}`].data])));
      const r = layer.forward({ data: x, shape: [L, E] }, null, null, { causal: true, capture: true, ...(patches[l] && { patch: patches[l] }) });
      layers.push({ captured: r.captured, output: r.output.data });
      for (let i = 0; i < x.length; i++) x[i] += r.output.data[i];
    } finally {
      layer.dispose();
    }
  }
  const W = tensors['unembed.weight'].data, b = tensors['unembed.bias'].data;
  const last = x.subarray((L - 1) * E);
  const logits = Array.from(b, (bias, v) => last.reduce((sum, xi, i) => sum + xi * W[v * E + i], bias));
  return { layers, logits };
}

/**
 * Greedy generation in Node, the whole text each token: `patchesFor(ids)` gives each layer's
 * patch for the text so far (as nodeSteps takes them). <bos> and <unk> are never chosen (as the page).
 */
async function nodeGreedy(promptIds, count, patchesFor) {
  const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
  const ids = [...promptIds];
  for (let n = 0; n < count; n++) {
    const { logits } = await nodeRun(ids, await patchesFor(ids));
    let best = -1;
    logits.forEach((x, id) => { if (id !== vocab.bos && id !== vocab.unk && (best < 0 || x > logits[best])) best = id; });
    ids.push(best);
  }
  return ids;
}

/** Largest difference between two (nested) arrays of numbers; -Infinity must match -Infinity. */
function maxDifference(a, b) {
  const x = a.flat(), y = b.flat();
  assert.equal(x.length, y.length);
  let worst = 0;
  x.forEach((v, i) => {
    if (v === -Infinity || y[i] === -Infinity) assert.equal(v, y[i], `element ${i}: blocked in one only`);
    else worst = Math.max(worst, Math.abs(v - y[i]));
  });
  return worst;
}

/** The Node steps of (layer, head, query) in getState().steps' layout. */
function expectedSteps(layers, { layer, head, query }) {
  const c = layers[layer].captured;
  const [H, L, Dh] = c.q.shape, [, S] = c.k.shape, Dv = c.v.shape[2], E = c.result.shape[2];
  const pick = (t, start, n) => Array.from(t.data.subarray(start, start + n));
  return {
    q: pick(c.q, (head * L + query) * Dh, Dh),
    keys: Array.from({ length: S }, (_, j) => pick(c.k, (head * S + j) * Dh, Dh)),
    scores: pick(c.scores, (head * L + query) * S, S),
    logits: pick(c.logits, (head * L + query) * S, S),
    pattern: pick(c.pattern, (head * L + query) * S, S),
    values: Array.from({ length: S }, (_, j) => pick(c.v, (head * S + j) * Dv, Dv)),
    z: pick(c.z, (query * H + head) * Dv, Dv),
    output: Array.from(layers[layer].output.subarray(query * E, (query + 1) * E)),
  };
}

async function hover(step, row, column) {
  await page.locator(`#steps-chain [data-step=${step}] canvas`).scrollIntoViewIfNeeded();
  const p = await page.evaluate(([s, r, c]) => window.__mhaDemo.stepsPoint(s, r, c), [step, row, column]);
  await page.mouse.move(p.x, p.y);
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.tooltip !== null);
  return (await state()).stepsView.tooltip;
}

test('the steps of a layer, head and query equal the package\'s capture in Node and the head view', async () => {
  const shown = await showSteps({ layer: 1, head: 2, query: 20 });
  const { ids, config } = await state();
  const expected = expectedSteps(await nodeSteps(ids), { layer: 1, head: 2, query: 20 });
  assert.equal(shown.scale, 1 / Math.sqrt(config.embedDim / config.numHeads));
  for (const [name, want] of Object.entries(expected)) {
    const worst = maxDifference(shown[name], want);
    assert.ok(worst <= 1e-4, `${name}: largest difference ${worst}`);
  }
  // Causal: the keys after the query are blocked, and drawn as blocked (-Infinity), with 0 weight.
  assert.deepEqual(shown.logits.slice(21), Array(ids.length - 21).fill(-Infinity));
  assert.deepEqual(shown.pattern.slice(21), Array(ids.length - 21).fill(0));
  // The head view's row of the same head and query.
  const weights = await page.evaluate(() => window.__mhaDemo.getWeights(1, 2));
  assert.ok(maxDifference(shown.pattern, weights.slice(20 * ids.length, 21 * ids.length)) <= 1e-6);
  assert.deepEqual(problems, []);
});

test('hovering a score shows q_i, k_j, their products, the sum and the scale; a softmax cell its exp / Σ', async () => {
  const shown = await showSteps({ layer: 0, head: 1, query: 12 });
  const score = await hover('scores', 12, 5);
  assert.match(score, /^query 12 '.' · key 5 '.'\nq_i = \[.*\]\nk_j = \[.*\]\nq_i ⊙ k_j = \[.*\]\nΣ = -?[\d.]+ × scale 0\.250 \(1\/√16\) = (-?[\d.]+)$/);
  assert.ok(Math.abs(Number(score.match(/= (-?[\d.]+)$/)[1]) - shown.scores[5]) < 1e-3);
  const softmax = await hover('pattern', 12, 5);
  assert.match(softmax, /exp\(x − max\) \/ Σ = exp\(-?[\d.]+ − -?[\d.]+\) \/ [\d.]+\n= [\d.]+ \/ [\d.]+ = ([\d.]+)$/);
  assert.ok(Math.abs(Number(softmax.match(/= ([\d.]+)$/)[1]) - shown.pattern[5]) < 1e-3);
  assert.match(await hover('logits', 12, 13), /query 12 → key 13: blocked \(−∞\)/);
  // The hovered step's line of code is highlighted.
  assert.equal((await state()).stepsView.hovered, 'logits');
  assert.match((await page.locator('#steps-code-text .line.hot').allTextContents()).join(''), /scaled_attention_logits\[:, blocked\] = -np\.inf/);
});

test('the code tabs switch between NumPy, PyTorch and Keras, each naming the tutorials\' variables', async () => {
  await showSteps({ layer: 0, head: 0 });
  const code = () => page.locator('#steps-code-text').textContent();
  assert.match(await code(), /split_heads[\s\S]*scaled_attention_logits = matmul_qk \/ np\.sqrt\(16\)[\s\S]*concat_attention/);
  await page.locator('#steps-code-pytorch').click();
  assert.equal((await state()).stepsView.code, 'pytorch');
  assert.match(await code(), /attention_weights = torch\.softmax\(scores, dim=-1\)/);
  await page.locator('#steps-code-keras').click();
  assert.match(await code(), /self\._output_dense\(attention_output\)/);
  await page.locator('#steps-chain [data-step=pattern]').hover();
  assert.match((await page.locator('#steps-code-text .line.hot').allTextContents()).join(''), /_softmax/);
  await page.locator('#steps-code-numpy').click();
});

test('ablating a head zeroes its z and changes the prediction; patching takes z from a second text', async () => {
  const before = await showSteps({ layer: 0, head: 3 });
  const { prediction, ids, labels } = await state();
  await page.locator('#steps-ablate').check();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.ablated.length === 1
    && window.__mhaDemo.getState().steps?.z.every((x) => x === 0));
  let now = await state();
  assert.deepEqual(now.stepsView.ablated, [[0, 3]]);
  assert.notDeepEqual(now.prediction, prediction);
  assert.deepEqual(now.steps.pattern, before.pattern);  // the steps before z are unchanged
  // Node, with the same ablation: the prediction's later layer follows.
  const L = ids.length, H = 4, Dv = 16;
  const ablated = await nodeSteps(ids, [{ z: { data: new Float32Array(L * H * Dv), shape: [L, H, Dv] }, heads: [3] }]);
  const later = await page.evaluate(() => window.__mhaDemo.getOutput(1));
  assert.ok(maxDifference(later, Array.from(ablated[1].output)) <= 1e-4);
  await page.locator('#steps-ablate').uncheck();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.ablated.length === 0);

  // Patch head 3's z from a second text of the same length.
  const text = labels.slice(1).join('');
  const second = text.split('').reverse().join('');
  await page.locator('#steps-patch-text').fill(second);
  await page.locator('#steps-patch').click();
  // (The patched run has been drawn once the z shown is no longer the text's own.)
  await page.waitForFunction((own) => window.__mhaDemo.getState().steps?.z.some((x, i) => x !== own[i]), before.z);
  now = await state();
  const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
  const secondSteps = await nodeSteps(tokenize(second, vocab).ids);
  const want = expectedSteps(secondSteps, { layer: 0, head: 3, query: before.query }).z;
  assert.ok(maxDifference(now.steps.z, want) <= 1e-4, 'patched z is the second text\'s');
  assert.notDeepEqual(now.prediction, prediction);
  assert.match(await page.locator('#steps-summary').textContent(), /L0 H3 patched from/);

  // A second text of another length is refused with a message; Clear restores the model.
  await page.locator('#steps-patch-text').fill(`${second}xyz`);
  await page.locator('#steps-patch').click();
  await page.waitForFunction(() => /patch: the second text has \d+ characters/.test(document.getElementById('message').textContent));
  await page.locator('#steps-clear').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.patched.length === 0
    && document.getElementById('message').hidden);
  now = await state();
  assert.deepEqual(now.prediction.map((p) => p.token), prediction.map((p) => p.token));
});

test('Generate: the newest token\'s step reads K and V from the cache as it fills', async () => {
  await showSteps({ layer: 1, head: 3 });
  await page.locator('#gen-count').fill('6');
  await page.locator('#gen-sampling').selectOption('greedy');
  await page.locator('#gen-start').click();
  await page.evaluate(() => window.__mhaDemo.generationDone());
  const { steps, labels, ids } = await state();
  const S = labels.length;
  assert.equal(steps.query, S - 1);
  assert.equal(steps.keys.length, S, 'the cache holds every token so far');
  assert.match(await page.locator('#steps-summary').textContent(), new RegExp(`reads the K and V of the ${S} tokens in its cache`));
  // The same row of the whole text's causal forward, in Node.
  const expected = expectedSteps(await nodeSteps(ids), { layer: 1, head: 3, query: S - 1 });
  for (const name of ['q', 'keys', 'scores', 'pattern', 'z', 'output']) {
    const worst = maxDifference(steps[name], expected[name]);
    assert.ok(worst <= 1e-4, `${name}: largest difference ${worst}`);
  }
  const weights = await page.evaluate(() => window.__mhaDemo.getWeights(1, 3));
  assert.ok(maxDifference(steps.pattern, weights.slice((S - 1) * S, S * S)) <= 1e-6);
  // Typing ends the generation view: the text's own steps again.
  await page.locator('#text').fill('kelumi likes the red boat (near the old hill). kelu');
  await page.waitForFunction(() => window.__mhaDemo.getState().generation?.running !== true && window.__mhaDemo.getState().steps?.keys.length === 52);
});

test('Generate with an ablated head, then a patched one: each token runs the whole text with it, as Node does', async () => {
  const text = 'kelumi likes the red boat (near the old hill). kelu';
  const H = 4, Dv = 16;
  const generate = async () => {
    await page.locator('#gen-count').fill('6');
    await page.locator('#gen-sampling').selectOption('greedy');
    await page.locator('#gen-start').click();
    await page.evaluate(() => window.__mhaDemo.generationDone());
    return state();
  };
  /** The page's newest-token steps of (layer, head) against Node's whole-text steps with the same patches. */
  const checkSteps = async (expectedLayers, layer, head) => {
    const shown = await showSteps({ layer, head });
    const want = expectedSteps(expectedLayers, { layer, head, query: shown.query });
    for (const name of ['q', 'keys', 'scores', 'pattern', 'z', 'output']) {
      const worst = maxDifference(shown[name], want[name]);
      assert.ok(worst <= 1e-4, `layer ${layer} ${name}: largest difference ${worst}`);
    }
    return shown;
  };
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  await showSteps({ layer: 0, head: 3 });
  const prompt = (await state()).ids;
  const P = prompt.length;

  // Ablation: zeros in layer 0 head 3's z at every position of every step.
  await page.locator('#steps-ablate').check();
  await page.waitForFunction(() => window.__mhaDemo.getState().steps?.z.every((x) => x === 0));
  let now = await generate();
  assert.equal(now.generation.changed, true);
  assert.equal(now.generation.useCache, false, 'a changed model runs without the cache');
  const ablate = (ids) => [{ z: { data: new Float32Array(ids.length * H * Dv), shape: [ids.length, H, Dv] }, heads: [3] }];
  assert.deepEqual(now.ids, await nodeGreedy(prompt, 6, ablate));
  assert.notDeepEqual(now.ids, await nodeGreedy(prompt, 6, () => []), 'the ablation changes the generated text');
  const ablatedLayers = await nodeSteps(now.ids, ablate(now.ids));
  assert.ok((await checkSteps(ablatedLayers, 0, 3)).z.every((x) => x === 0));
  await checkSteps(ablatedLayers, 1, 0);  // the later layer reads the ablated model's residual
  assert.match(await page.locator('#steps-summary').textContent(), /of the whole text, recomputed \(no cache\)\. Generated with L0 H3 ablated/);
  const ablatedIds = now.ids;

  // Patching: head 3's z from a second text, followed by the same generated tokens.
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  await showSteps({ layer: 0, head: 3 });
  await page.locator('#steps-ablate').uncheck();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.ablated.length === 0
    && window.__mhaDemo.getState().steps?.z.some((x) => x !== 0));
  const second = text.split('').reverse().join('');
  const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
  const secondIds = tokenize(second, vocab).ids;
  const own = (await state()).steps.z;
  await page.locator('#steps-patch-text').fill(second);
  await page.locator('#steps-patch').click();
  await page.waitForFunction((z) => window.__mhaDemo.getState().steps?.z.some((x, i) => x !== z[i]), own);
  now = await generate();
  const patch = async (ids) => [{ z: (await nodeSteps([...secondIds, ...ids.slice(P)]))[0].captured.z, heads: [3] }];
  assert.deepEqual(now.ids, await nodeGreedy(prompt, 6, patch));
  assert.notDeepEqual(now.ids, ablatedIds);
  const patchedLayers = await nodeSteps(now.ids, await patch(now.ids));
  const shown = await checkSteps(patchedLayers, 0, 3);
  const secondSteps = await nodeSteps([...secondIds, ...now.ids.slice(P)]);
  assert.ok(maxDifference(shown.z, expectedSteps(secondSteps, { layer: 0, head: 3, query: now.ids.length - 1 }).z) <= 1e-4,
    'the newest token\'s z is the second text\'s (with the same generated tokens)');
  await checkSteps(patchedLayers, 1, 2);
  assert.match(await page.locator('#steps-summary').textContent(), /Generated with L0 H3 patched from/);

  await page.locator('#steps-clear').click();
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.patched.length === 0);
  assert.deepEqual(problems, []);
});

test('saves a screenshot of the Steps view', async () => {
  await showSteps({ layer: 1, head: 2, query: 30 });
  await page.locator('#steps-chain [data-step=pattern]').hover();
  await mkdir(new URL('.', SCREENSHOT), { recursive: true });
  await page.locator('.selected-view').screenshot({ path: SCREENSHOT.pathname });
});

test('Train: the model being trained shows its steps, updated with each evaluation', { timeout: 300_000 }, async () => {
  await page.locator('#source-train').click();
  await page.evaluate((s) => window.__mhaDemo.startTraining(s), { seed: 5, batchSize: 4, seqLen: 16, steps: 20, evalEvery: 10 });
  await page.waitForFunction(() => { const t = window.__mhaDemo.getState().training; return !t.running && t.step === 20; }, null, { timeout: 0, polling: 250 });
  const shown = await showSteps({ layer: 1, head: 0, query: 5 });
  const { labels } = await state();
  assert.equal(shown.keys.length, labels.length);
  const weights = await page.evaluate(() => window.__mhaDemo.getWeights(1, 0));
  assert.ok(maxDifference(shown.pattern, weights.slice(5 * labels.length, 6 * labels.length)) <= 1e-6);
  assert.deepEqual(shown.logits.slice(6), Array(labels.length - 6).fill(-Infinity));
  await page.locator('#source-default').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'default');
});

test('Sentiment mode: the Keras layer\'s steps, bidirectional (nothing blocked), equal to its head view', async () => {
  await page.locator('#source-sentiment').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'sentiment' && window.__mhaDemo.getState().sentiment);
  const shown = await showSteps({ layer: 0, head: 1, query: 2 });
  const { labels } = await state();
  assert.equal(shown.pattern.length, labels.length);
  assert.ok(shown.logits.every((x) => Number.isFinite(x)), 'no key is blocked');
  const weights = await page.evaluate(() => window.__mhaDemo.getWeights(0, 1));
  assert.ok(maxDifference(shown.pattern, weights.slice(2 * labels.length, 3 * labels.length)) <= 1e-6);
  // Ablating head 1 zeroes its z and moves the probability; patching takes z from another sentence.
  const second = 'a dull and boring film';
  const setSentence = async (text) => {
    await page.locator('#sentiment-text').fill(text);
    await page.waitForFunction((t) => window.__mhaDemo.getState().sentiment?.text === t, text);
  };
  await setSentence(second);
  const secondZ = (await showSteps({ layer: 0, head: 1, query: 2 })).z;
  const first = 'the acting was great but the film was far too long';
  await setSentence(first);
  const own = await showSteps({ layer: 0, head: 1, query: 2 });
  const probability = (await state()).sentiment.probability;
  await page.locator('#steps-ablate').check();
  await page.waitForFunction(() => window.__mhaDemo.getState().steps?.z.every((x) => x === 0));
  assert.notEqual((await state()).sentiment.probability, probability);
  await page.locator('#steps-ablate').uncheck();
  await page.waitForFunction((z) => window.__mhaDemo.getState().steps?.z.some((x, i) => x !== z[i]) === false, own.z);
  await page.locator('#steps-patch-text').fill(second);
  await page.locator('#steps-patch').click();
  await page.waitForFunction((z) => window.__mhaDemo.getState().steps?.z.some((x, i) => x !== z[i]), own.z);
  assert.ok(maxDifference((await state()).steps.z, secondZ) <= 1e-6, 'head 1\'s z is the second sentence\'s');
  await page.locator('#steps-clear').click();
  await page.locator('#source-default').click();
  assert.deepEqual(problems, []);
});
