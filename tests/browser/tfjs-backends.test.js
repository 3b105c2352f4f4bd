// mha-wasm/tfjs on tfjs' webgl and webgpu backends in Chromium (SwiftShader's WebGL and WebGPU, the
// machine has no GPU): the layer's output and gradients and a small model.fit
// (tests/js/tfjs-backend-scenario.js, its source sent to the page) equal the cpu backend's in the same
// page. The layer reads its inputs back from the GPU (dataSync) and hands its results to tfjs as
// new tensors: correct on both, with the cost measured by bench/tfjs/backends.mjs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from '../../tools/serve.mjs';
import { backendScenario, compareScenarios } from '../js/tfjs-backend-scenario.js';
import { launchBrowser } from './browser.js';

let server, browser, page;
const problems = [];

before(async () => {
  let url;
  ({ server, url } = await startServer({ port: 0 }));
  browser = await launchBrowser({ gpu: true });
  page = await browser.context.newPage();
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  await page.goto(`${url}/style.css`);  // any page of the server's origin
  await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs/dist/tf.min.js' });
  await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js' });
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** The scenario on each backend in turn, in the page. */
const runInPage = (backends) => page.evaluate(async ({ source, backends }) => {
  const scenario = new Function(`return ${source}`)();
  const { mhaTfjs } = await import('/bindings/js/tfjs.js');
  const api = await mhaTfjs(window.tf, { threads: 1 });
  api.registerFastGradients({ backends: ['cpu'] });
  const results = {};
  for (const backend of backends) {
    if (!(await window.tf.setBackend(backend))) throw new Error(`tfjs backend ${backend} did not start`);
    results[backend] = await scenario(window.tf, api);
  }
  return results;
}, { source: backendScenario.toString().replace(/^async function backendScenario/, 'async function'), backends });

test('webgl and webgpu (SwiftShader): forward, gradients and model.fit equal the cpu backend', async () => {
  const results = await runInPage(['cpu', 'webgl', 'webgpu']);
  assert.deepEqual(Object.values(results).map((r) => r.backend), ['cpu', 'webgl', 'webgpu']);
  assert.ok(results.cpu.losses[2] < results.cpu.losses[0]);
  // tfjs' GPU kernels (the Embedding, Conv1D, Dense and the loss around the layer) sum in other orders than its cpu
  // kernels, and 12 Adam steps at lr 0.01 amplify that: the losses agree to 5e-3 (measured: 1.0e-3 by epoch 3 on webgl).
  console.log(`# losses: ${JSON.stringify(Object.fromEntries(Object.entries(results).map(([b, r]) => [b, r.losses])))}`);
  compareScenarios(results.webgl, results.cpu, assert, { absolute: 1e-5, relative: 1e-4, loss: 5e-3 });
  compareScenarios(results.webgpu, results.cpu, assert, { absolute: 1e-5, relative: 1e-4, loss: 5e-3 });
  assert.deepEqual(problems, []);
});
