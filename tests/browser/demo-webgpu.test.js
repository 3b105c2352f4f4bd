// The demo page on WebGPU, in Chromium with SwiftShader's (software) WebGPU adapter: the page finds
// the adapter but keeps wasm as the default (a software adapter is slower); the switch moves the
// modes that run on WebGPU (Default model, Your layer, Sentiment, Generate, Train, the Steps view: capture
// and patch on the GPU) there, with the same numbers (generated text, training curves) as on wasm;
// switching mid-run keeps the generated tokens and the training state; a lost device (GPUDevice.destroy()) moves the page to wasm,
// mid-training too, without losing a step.
// SwiftShader is slow: short texts, few tokens, few training steps.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeSafetensors } from '../../bindings/js/index.js';
import { startDemo } from './browser.js';
import { maxDifference, referenceAttention } from './node-reference.js';

const TEXT = 'kelumi likes the red boat. kelu';
let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo({ gpu: true });
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
const setBackend = (backend) => page.evaluate((b) => window.__mhaDemo.setBackend(b), backend);
const header = () => page.locator('#backend').innerText();

/** Every head's weights, every layer's output and the prediction the page shows now. */
async function shown() {
  return page.evaluate(() => {
    const demo = window.__mhaDemo;
    const s = demo.getState();
    const heads = [];
    for (let l = 0; l < s.numLayers; l++) for (let h = 0; h < s.config.numHeads; h++) heads.push(demo.getWeights(l, h));
    const outputs = Array.from({ length: s.numLayers }, (_, l) => demo.getOutput(l));
    return { heads, outputs, prediction: s.prediction, ranOn: s.ranOn, ids: s.ids };
  });
}

function assertSame(a, b, what) {
  a.heads.forEach((w, i) => assert.ok(maxDifference(w, b.heads[i]) <= 1e-5, `${what}: head ${i} differs by ${maxDifference(w, b.heads[i])}`));
  a.outputs.forEach((o, l) => assert.ok(maxDifference(o, b.outputs[l]) <= 1e-4, `${what}: layer ${l}'s output differs by ${maxDifference(o, b.outputs[l])}`));
  assert.deepEqual(a.prediction.map((p) => p.token), b.prediction.map((p) => p.token), `${what}: the predicted characters`);
  a.prediction.forEach((p, i) => assert.ok(Math.abs(p.probability - b.prediction[i].probability) <= 1e-5, `${what}: p(${p.token})`));
}

/** The Steps view's numbers on WebGPU vs on wasm ({ shown: getState().steps, prediction }): within 1e-5 of each step's largest value. */
function assertSameSteps(gpu, cpu, what) {
  for (const name of ['q', 'keys', 'scores', 'logits', 'pattern', 'values', 'z', 'output']) {
    assert.equal(gpu.shown[name].length, cpu.shown[name].length, `${what} ${name}`);
    const want = cpu.shown[name].flat();
    const scale = Math.max(1, ...want.filter(Number.isFinite).map(Math.abs));
    const got = gpu.shown[name].flat();
    want.forEach((x, i) => { if (!Number.isFinite(x)) assert.ok(Object.is(got[i], x), `${what} ${name}[${i}]: ${got[i]} vs ${x}`); });
    const worst = maxDifference(got.map((x, i) => (Number.isFinite(want[i]) ? x : 0)), want.map((x) => (Number.isFinite(x) ? x : 0)));
    assert.ok(worst <= 1e-5 * scale, `${what} ${name}: WebGPU vs wasm ${worst} (largest value ${scale})`);
  }
  gpu.prediction.forEach((p, i) => assert.ok(Math.abs(p.probability - cpu.prediction[i].probability) <= 1e-5, `${what} p(${p.token})`));
}

test('a software adapter is found but wasm stays the default; the header says which backend and adapter run', async () => {
  const s = await state();
  assert.equal(s.backend, 'wasm');
  assert.equal(s.ranOn, 'wasm');
  assert.equal(s.adapter, 'google swiftshader');
  assert.equal(s.backends.adapter.isFallbackAdapter, true);
  assert.equal(s.backends.available, true);
  assert.match(await header(), /wasm SIMD · \d threads?\n?.*software one \(not the default: wasm is faster\); the switch reaches it/s);
  assert.equal(await page.locator('#backend-switch').inputValue(), 'wasm');
  assert.deepEqual(problems, []);
});

test('Default model: the switch runs it on WebGPU with the wasm backend\'s numbers; the text stays', { timeout: 300_000 }, async () => {
  await page.evaluate((t) => window.__mhaDemo.setText(t), TEXT);
  const onWasm = await shown();
  assert.equal(onWasm.ranOn, 'wasm');
  await setBackend('webgpu');
  const s = await state();
  assert.equal(s.backend, 'webgpu');
  assert.equal(await page.locator('#text').inputValue(), TEXT);
  const onGpu = await shown();
  assert.equal(onGpu.ranOn, 'webgpu');
  assert.deepEqual(onGpu.ids, onWasm.ids);
  assertSame(onGpu, onWasm, 'WebGPU vs wasm');
  // ... and PyTorch's model through the package in Node.
  const reference = await referenceAttention(onGpu.ids);
  const L = onGpu.ids.length;
  reference.forEach((layer, l) => {
    for (let h = 0; h < 4; h++) {
      const worst = maxDifference(onGpu.heads[l * 4 + h], layer.perHead.subarray(h * L * L, (h + 1) * L * L));
      assert.ok(worst <= 1e-5, `layer ${l} head ${h} vs Node: ${worst}`);
    }
  });
  const text = await header();
  assert.match(text, /WebGPU · google swiftshader \(software\)/);
  assert.ok(!text.includes('Generate: wasm'), text);
  for (const mode of ['Train', 'Steps', 'Generate']) assert.ok(!text.includes(`${mode}: wasm`), text);
  assert.match(await page.locator('#status').innerText(), /attention layers on WebGPU \d+\.\d\d ms/);
  // Typing on WebGPU redraws on WebGPU.
  await page.evaluate((t) => window.__mhaDemo.setText(t), `${TEXT}m`);
  assert.equal((await state()).ranOn, 'webgpu');
  assert.deepEqual(problems, []);
});

test('the Steps view on WebGPU: every step the wasm backend\'s; ablating and patching a head run on the GPU', { timeout: 300_000 }, async () => {
  const where = { layer: 1, head: 2, query: 12 };
  const steps = async (backend) => {
    await setBackend(backend);
    await page.evaluate((t) => window.__mhaDemo.setText(t), TEXT);
    const shown = await page.evaluate((w) => window.__mhaDemo.showSteps(w), where);
    assert.equal((await state()).ranOn, backend);
    return { shown, prediction: (await state()).prediction };
  };
  assert.equal((await state()).backends.modes.steps.backend, 'webgpu');
  const onWasm = await steps('wasm');
  const onGpu = await steps('webgpu');
  assertSameSteps(onGpu, onWasm, 'the text\'s steps');
  assert.deepEqual(onGpu.shown.logits.slice(where.query + 1), Array(onGpu.shown.logits.length - where.query - 1).fill(-Infinity));

  // Ablate the head (zeros in its z) on WebGPU, then on wasm: the same later steps and prediction.
  const ablated = async (backend) => {
    await setBackend(backend);
    await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.ablated.length === 1
      && window.__mhaDemo.getState().steps?.z.every((x) => x === 0));
    return { shown: (await state()).steps, prediction: (await state()).prediction, output: await page.evaluate(() => window.__mhaDemo.getOutput(1)) };
  };
  await page.locator('#steps-ablate').check();
  const gpuAblated = await ablated('webgpu');
  assert.equal((await state()).ranOn, 'webgpu');
  const wasmAblated = await ablated('wasm');
  assertSameSteps(gpuAblated, wasmAblated, 'ablated');
  assert.ok(maxDifference(gpuAblated.output, wasmAblated.output) <= 1e-5, 'ablated: layer 1\'s output');
  assert.notDeepEqual(gpuAblated.prediction, onGpu.prediction);
  await page.locator('#steps-ablate').uncheck();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.ablated.length === 0);

  // Patch the head's z from a second text (its z computed on the same backend).
  const second = TEXT.split('').reverse().join('');
  await page.locator('#steps-patch-text').fill(second);
  const patched = async (backend) => {
    await setBackend(backend);
    await page.locator('#steps-patch').click();
    await page.waitForFunction(([own, b]) => window.__mhaDemo.getState().ranOn === b && window.__mhaDemo.getState().stepsView.patched.length === 1
      && window.__mhaDemo.getState().steps?.z.some((x, i) => x !== own[i]), [onGpu.shown.z, backend]);
    return { shown: (await state()).steps, prediction: (await state()).prediction };
  };
  const gpuPatched = await patched('webgpu');
  const wasmPatched = await patched('wasm');
  assertSameSteps(gpuPatched, wasmPatched, 'patched');
  await page.locator('#steps-clear').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.patched.length === 0);

  // Generate with the view open: the newest token's steps against the KV cache (on the GPU), as wasm's.
  const generated = async (backend) => {
    await setBackend(backend);
    await page.evaluate((t) => window.__mhaDemo.setText(t), TEXT);
    await page.evaluate((w) => window.__mhaDemo.showSteps(w), { layer: 1, head: 3 });
    await page.locator('#gen-count').fill('4');
    await page.locator('#gen-sampling').selectOption('greedy');
    await page.locator('#gen-start').click();
    await page.evaluate(() => window.__mhaDemo.generationDone());
    const s = await state();
    assert.equal(s.ranOn, backend);
    assert.equal(s.steps.keys.length, s.labels.length, 'the cache holds every token so far');
    return { shown: s.steps, prediction: s.prediction };
  };
  assertSameSteps(await generated('webgpu'), await generated('wasm'), 'Generate\'s newest token');
  await setBackend('webgpu');
  await page.evaluate((t) => window.__mhaDemo.setText(t), TEXT);
  await page.locator('#view-heatmap').click();
  assert.deepEqual(problems, []);
});

test('Your layer: the same weights on WebGPU as on wasm', { timeout: 300_000 }, async () => {
  const E = 8, L = 5;
  const fill = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7.3 + i * 0.37) * 0.5);
  const bytes = Buffer.from(writeSafetensors({
    in_proj_weight: { data: fill(3 * E * E, 1), shape: [3 * E, E] }, in_proj_bias: { data: fill(3 * E, 2), shape: [3 * E] },
    'out_proj.weight': { data: fill(E * E, 3), shape: [E, E] }, 'out_proj.bias': { data: fill(E, 4), shape: [E] },
  }));
  const rows = Array.from({ length: L }, (_, i) => Array.from(fill(E, 10 + i)));
  await page.locator('#source-custom').click();
  await page.locator('#byo-embeddings').setInputFiles({ name: 'x.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(rows)) });
  await page.locator('#byo-weights').setInputFiles({ name: 'layer.safetensors', mimeType: 'application/octet-stream', buffer: bytes });
  await page.locator('#byo-heads').fill('2');
  await page.locator('#byo-run').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'custom');
  const weights = () => page.evaluate(() => [0, 1].map((h) => window.__mhaDemo.getWeights(0, h)));
  const onGpu = await weights();
  assert.equal((await state()).ranOn, 'webgpu');
  await setBackend('wasm');
  assert.equal((await state()).ranOn, 'wasm');
  const onWasm = await weights();
  onGpu.forEach((w, h) => assert.ok(maxDifference(w, onWasm[h]) <= 1e-5, `head ${h}`));
  await setBackend('webgpu');
  assert.equal((await state()).ranOn, 'webgpu');
  await page.locator('#source-default').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'default' && window.__mhaDemo.getState().ranOn === 'webgpu');
  assert.deepEqual(problems, []);
});

test('Sentiment: the classifier\'s attention on WebGPU gives the wasm probability and heads', { timeout: 300_000 }, async () => {
  const sentence = 'a good film, not boring at all';
  const classified = async (backend) => {
    await setBackend(backend);
    await page.locator('#sentiment-text').fill(sentence);
    await page.waitForFunction(([t, b]) => { const s = window.__mhaDemo.getState(); return s.sentiment?.text === t && s.ranOn === b; }, [sentence, backend]);
    return page.evaluate(() => ({
      sentiment: window.__mhaDemo.getState().sentiment,
      heads: [0, 1, 2, 3].map((h) => window.__mhaDemo.getWeights(0, h)),
      output: window.__mhaDemo.getOutput(0),
    }));
  };
  await page.locator('#source-sentiment').click();
  const onGpu = await classified('webgpu');
  const onWasm = await classified('wasm');
  assert.equal(onGpu.sentiment.label, onWasm.sentiment.label);
  assert.ok(Math.abs(onGpu.sentiment.probability - onWasm.sentiment.probability) <= 1e-5,
    `p(positive) ${onGpu.sentiment.probability} vs ${onWasm.sentiment.probability}`);
  onGpu.heads.forEach((w, h) => assert.ok(maxDifference(w, onWasm.heads[h]) <= 1e-5, `head ${h}`));
  assert.ok(maxDifference(onGpu.output, onWasm.output) <= 1e-4, 'output');
  // Its Steps view, and a head's z patched from a second sentence, on WebGPU as on wasm.
  const where = { layer: 0, head: 1, query: 2 };
  const steps = async (backend) => {
    await setBackend(backend);
    const shown = await page.evaluate((w) => window.__mhaDemo.showSteps(w), where);
    assert.equal((await state()).ranOn, backend);
    return { shown, prediction: (await state()).prediction };
  };
  const own = await steps('webgpu');
  assertSameSteps(own, await steps('wasm'), 'Sentiment');
  await page.locator('#steps-patch-text').fill('a dull and boring film');
  await page.locator('#steps-patch').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.patched.length === 1);
  const patchedOnWasm = await steps('wasm');
  const patchedOnGpu = await steps('webgpu');
  assertSameSteps(patchedOnGpu, patchedOnWasm, 'Sentiment, patched');
  assert.ok(maxDifference(patchedOnGpu.shown.z, own.shown.z) > 1e-3, 'the patched head\'s z is the second sentence\'s');
  await page.locator('#steps-clear').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().stepsView.patched.length === 0);
  await page.locator('#view-heatmap').click();
  await setBackend('webgpu');
  await page.locator('#source-default').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'default' && window.__mhaDemo.getState().ranOn === 'webgpu');
  assert.deepEqual(problems, []);
});

test('Generate on WebGPU (KV caches on the GPU) writes the wasm backend\'s text; a mid-run switch keeps every token', { timeout: 300_000 }, async () => {
  const generate = async (backend, count, switchTo = null) => {
    await setBackend(backend);
    await page.evaluate((t) => window.__mhaDemo.setText(t), TEXT);
    await page.locator('#gen-count').fill(String(count));
    await page.locator('#gen-sampling').selectOption('greedy');
    await page.locator('#gen-start').click();
    await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 3);
    const ranOn = (await state()).ranOn;
    if (switchTo) await setBackend(switchTo);
    await page.evaluate(() => window.__mhaDemo.generationDone());
    const g = (await state()).generation;
    assert.equal(g.generated, count, 'every token arrived');
    return { ranOn, text: await page.locator('#text').inputValue() };
  };
  assert.equal((await state()).backends.modes.generate.backend, 'webgpu');
  const onGpu = await generate('webgpu', 24, 'wasm');
  assert.equal(onGpu.ranOn, 'webgpu');
  const onWasm = await generate('wasm', 24, 'webgpu');
  assert.equal(onWasm.ranOn, 'wasm');
  assert.equal(onGpu.text.length, TEXT.length + 24);
  assert.equal(onGpu.text, onWasm.text, 'greedy: the same text on both backends');
  await setBackend('webgpu');
  await page.evaluate((t) => window.__mhaDemo.setText(t), `${TEXT}m`);
  assert.deepEqual(problems, []);
});

test('Train on WebGPU: wasm\'s curve for the same seed; a mid-run switch and a device lost mid-run keep the training state', { timeout: 300_000 }, async () => {
  // A tiny model and few steps: a training step on the software adapter takes a second or so.
  const SETTINGS = { seed: 5, batchSize: 2, seqLen: 12, steps: 12, evalEvery: 4, dModel: 16, numHeads: 2, numLayers: 2 };
  const train = async (backend, { midRun = null } = {}) => {
    if (backend) await setBackend(backend);
    await page.evaluate((s) => window.__mhaDemo.startTraining(s), SETTINGS);
    if (midRun) {
      await page.waitForFunction(() => window.__mhaDemo.getState().training.step >= 2, null, { polling: 50 });
      await midRun();
    }
    await page.waitForFunction((n) => { const t = window.__mhaDemo.getState().training; return !t.running && t.step === n; },
      SETTINGS.steps, { timeout: 0, polling: 100 });
    return { curves: await page.evaluate(() => window.__mhaDemo.trainingCurves()), training: (await state()).training };
  };
  const sameCurve = (got, want, what) => {
    assert.deepEqual(got.curves.steps, want.curves.steps, `${what}: the steps`);
    got.curves.losses.forEach((loss, i) => assert.ok(Math.abs(loss - want.curves.losses[i]) <= 1e-5 * want.curves.losses[i],
      `${what}: step ${i + 1}'s loss ${loss} vs ${want.curves.losses[i]}`));
    assert.deepEqual(got.curves.evaluations.map((e) => e.step), want.curves.evaluations.map((e) => e.step), `${what}: evaluated at`);
    got.curves.evaluations.forEach((e, i) => assert.ok(Math.abs(e.heldOutLoss - want.curves.evaluations[i].heldOutLoss) <= 1e-5 * e.heldOutLoss,
      `${what}: held-out loss at step ${e.step}`));
  };

  const onWasm = await train('wasm');
  assert.equal(onWasm.training.ranOn, 'wasm');
  const onGpu = await train('webgpu');
  assert.equal((await state()).backends.modes.train.backend, 'webgpu');
  assert.equal(onGpu.training.ranOn, 'webgpu');
  assert.ok(onGpu.training.rates.webgpu.stepsPerSecond > 0 && onGpu.training.rates.webgpu.tokensPerSecond > 0, 'WebGPU\'s rates');
  sameCurve(onGpu, onWasm, 'WebGPU vs wasm');
  assert.match(await page.locator('#status').innerText(), /attention in WebGPU/);
  assert.match(await page.locator('#train-summary').innerText(), /WebGPU \d+\.\d+ steps\/s \([\d,]+ tokens\/s\)/);
  assert.ok(!(await header()).includes('Train: wasm'), 'the header lists Train as on WebGPU');

  // The switch mid-run: the next step runs on wasm, from the state WebGPU left.
  const switched = await train('webgpu', { midRun: () => setBackend('wasm') });
  assert.equal(switched.training.ranOn, 'wasm');
  assert.ok(switched.training.rates.webgpu && switched.training.rates.wasm, 'both backends\' rates');
  assert.match(await page.locator('#status').innerText(), /wasm [\d.]+ steps\/s \([\d,]+ tokens\/s\) · WebGPU [\d.]+ steps\/s/);
  sameCurve(switched, onWasm, 'switched mid-run');

  // A device lost mid-run: the page says so, and training goes on on wasm without a lost step.
  const lost = await train('webgpu', { midRun: () => page.evaluate(() => window.__mhaDemo.loseDevice()) });
  assert.equal(lost.training.ranOn, 'wasm');
  assert.equal((await state()).backends.available, false);
  assert.match(await page.locator('#backend-note').innerText(), /^the WebGPU device was lost[^\n]*; continuing on wasm$/);
  sameCurve(lost, onWasm, 'after the device was lost');

  await setBackend('webgpu');  // (a new device, for the next test)
  await page.locator('#source-default').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().source === 'default' && window.__mhaDemo.getState().ranOn === 'webgpu');
  assert.deepEqual(problems, []);
});

test('a device lost mid-run: the page says so in one line and continues on wasm, without a reload', { timeout: 300_000 }, async () => {
  assert.equal((await state()).backend, 'webgpu');
  await page.evaluate(() => { window.__loaded = true; });  // (a reload would lose it)
  const text = await page.locator('#text').inputValue();
  const next = `${text.slice(0, 20)} kel`;
  // A run in flight on WebGPU, then the device destroyed under it.
  await page.evaluate((t) => { window.__typed = window.__mhaDemo.setText(t); }, next);
  await page.evaluate(() => window.__mhaDemo.loseDevice());
  await page.evaluate(() => window.__typed);
  await page.waitForFunction(() => window.__mhaDemo.getState().ranOn === 'wasm');
  const s = await state();
  assert.equal(s.backend, 'wasm');
  assert.equal(s.backends.available, false);
  assert.equal(await page.evaluate(() => window.__loaded), true);
  assert.equal(await page.locator('#text').inputValue(), next);
  assert.match(await page.locator('#backend-note').innerText(), /^the WebGPU device was lost[^\n]*destroyed[^\n]*; continuing on wasm$/);
  assert.match(await page.locator('#backend-text').innerText(), /^wasm SIMD/);
  // The numbers are the package's (Node's) on wasm.
  const now = await shown();
  const reference = await referenceAttention(now.ids);
  const L = now.ids.length;
  assert.ok(maxDifference(now.heads[7], reference[1].perHead.subarray(3 * L * L, 4 * L * L)) <= 1e-5);
  // The switch asks for a new device.
  await setBackend('webgpu');
  assert.equal((await state()).ranOn, 'webgpu');
  assert.deepEqual(problems, []);
});
