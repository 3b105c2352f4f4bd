// The Sentiment tab's in-page training on WebGPU (Chromium, SwiftShader): with the page on 'webgpu'
// the training worker trains on tfjs' webgpu backend with mha-wasm/tfjs's attention on the same
// device; the same seed gives the same curve as on wasm: the first batch's loss to float precision
// (the same weights and sentences: the forward pass), the later ones within 3% (Adam's first steps
// move each weight by about +-lr whatever its gradient's size, so gradients near zero whose sign
// differs in float rounding between tfjs' GPU kernels and its wasm ones move apart by 2 lr);
// a lost device restarts the run on wasm, which finishes. SwiftShader is slow at this model's
// backward pass (4 heads of 128): the runs are 2 batches of 8.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';

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
// Short: 20 sentences (16 to train on, 2 batches of 8; 4 for validation), 1 epoch.
const SETTINGS = { epochs: 1, samples: 20, batchSize: 8, learningRate: 0.003, seed: 5 };

async function trainOn(backend, settings = SETTINGS) {
  await setBackend(backend);
  await page.evaluate((s) => window.__mhaDemo.startSentimentTraining(s), settings);
  const started = (await state()).sentimentTraining;
  return { started, done: await page.evaluate(() => window.__mhaDemo.sentimentTrainingDone()) };
}

test('page on webgpu: tfjs-webgpu with mha-wasm on its device; the same seed gives wasm\'s curve', { timeout: 600_000 }, async () => {
  const gpu = await trainOn('webgpu');
  assert.equal(gpu.started.backend, 'webgpu', 'the training worker runs tfjs\' webgpu backend');
  assert.equal(gpu.started.settings.backend, 'webgpu');
  assert.equal(gpu.done.finished, true);
  const wasm = await trainOn('wasm');
  assert.equal(wasm.started.backend, 'wasm');
  console.log(`# webgpu ${JSON.stringify(gpu.done.history)}\n# wasm ${JSON.stringify(wasm.done.history)}`);
  const [gpuCurve, wasmCurve] = [gpu.done.curves.loss, wasm.done.curves.loss];
  assert.equal(gpuCurve.length, 2);
  assert.equal(wasmCurve.length, 2);
  assert.ok(Math.abs(gpuCurve[0] - wasmCurve[0]) <= 1e-5 * wasmCurve[0], `first batch: webgpu ${gpuCurve[0]} vs wasm ${wasmCurve[0]}`);
  assert.ok(Math.abs(gpuCurve[1] - wasmCurve[1]) <= 3e-2 * wasmCurve[1], `second batch: webgpu ${gpuCurve[1]} vs wasm ${wasmCurve[1]}`);
  assert.ok(Math.abs(gpu.done.history.valLoss[0] - wasm.done.history.valLoss[0]) <= 3e-2 * wasm.done.history.valLoss[0]);
  assert.deepEqual(problems, []);
});

test('a lost WebGPU device mid-run: the run restarts on wasm and finishes', { timeout: 600_000 }, async () => {
  await setBackend('webgpu');
  await page.evaluate((s) => window.__mhaDemo.startSentimentTraining(s), { ...SETTINGS, epochs: 2 });
  assert.equal((await state()).sentimentTraining.backend, 'webgpu');
  // (the first batch on SwiftShader took 40 s on a loaded machine: Playwright's default 30 s wait is the test's limit, not the page's)
  await page.waitForFunction(() => (window.__mhaDemo.getState().sentimentTraining?.curves.x.length ?? 0) > 0, null, { polling: 100, timeout: 300_000 });
  await page.evaluate(() => window.__mhaDemo.loseSentimentTrainingDevice());
  const restarted = (await state()).sentimentTraining;
  assert.equal(restarted.backend, 'wasm');
  assert.match(restarted.note, /WebGPU device was lost.*training restarted on wasm/);
  assert.equal(await page.locator('#message').textContent(), restarted.note, 'the page says so in its message line');
  const done = await page.evaluate(() => window.__mhaDemo.sentimentTrainingDone());
  assert.equal(done.finished, true);
  assert.equal(done.history.loss.length, 2);
});
