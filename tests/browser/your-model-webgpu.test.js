// The demo page's "Your model" mode with its attention on WebGPU (Chromium on SwiftShader): a
// Llama checkpoint's heads, prediction and an ablated head equal torch's, as on wasm
// (tests/browser/your-model.test.js); switching back to wasm reruns it there with the same numbers;
// Qwen3, Gemma 3 and OLMo-2 (q/k norms on the GPU) give torch's heads and prediction there too.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';
import { assertClose, checkpointFiles, expectedValues, torchTop } from '../js/your-model-fixtures.js';

let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo({ gpu: true });
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());

test('a Llama checkpoint on WebGPU: torch\'s heads, prediction and ablation; then the same on wasm', async () => {
  await page.evaluate(() => window.__mhaDemo.setBackend('webgpu'));
  await page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
    checkpointFiles('llama').map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
  const { text, ids, ablate, tensors } = expectedValues('llama');
  await page.evaluate((t) => window.__mhaDemo.setText(t), text);
  const s = await state();
  assert.equal(s.ranOn, 'webgpu');
  assert.deepEqual(s.ids, ids);
  const L = ids.length;
  const check = async (where) => {
    for (let l = 0; l < 3; l++) {
      for (let h = 0; h < 4; h++) {
        const weights = await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]);
        assertClose(Float32Array.from(weights), tensors[`pattern.${l}`].data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `${where}: layer ${l} head ${h}`);
      }
    }
    assert.deepEqual((await state()).prediction.map((p) => p.id), torchTop(tensors.logits), `${where}: prediction`);
  };
  await check('webgpu');
  await page.evaluate((where) => window.__mhaDemo.showSteps(where), { layer: ablate.layer, head: ablate.head });
  await page.locator('#steps-ablate').check();
  // (Checked and awaited in the page in one go: a render between a check here and the wait would hang it.)
  const now = await page.evaluate(async (ids) => {
    const hook = window.__mhaDemo;
    for (;;) {
      const s = hook.getState();
      if (s.prediction.map((p) => p.id).join() !== ids.join()) return s;
      await hook.nextRender();
    }
  }, torchTop(tensors.logits));
  assert.deepEqual(now.prediction.map((p) => p.id), torchTop(tensors.ablated_logits));
  assert.equal(now.ranOn, 'webgpu');
  await page.locator('#steps-clear').click();
  await page.locator('#view-heatmap').click();
  await page.evaluate(() => window.__mhaDemo.setBackend('wasm'));
  await page.evaluate(async () => {
    while (window.__mhaDemo.getState().ranOn !== 'wasm') await window.__mhaDemo.nextRender();
  });
  await check('wasm');
  assert.deepEqual(problems, []);
});

// The families whose attention takes the q/k norms (qkNorm: qk_norm.wgsl on the GPU) in the page on
// WebGPU: every head and the prediction are torch's.
for (const name of ['qwen3', 'gemma3', 'olmo2']) {
  test(`${name} on WebGPU: every head's pattern and the prediction are torch's`, async () => {
    await page.evaluate(() => window.__mhaDemo.setBackend('webgpu'));
    await page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
      checkpointFiles(name).map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
    const { text, ids, tensors, family } = expectedValues(name);
    await page.evaluate((t) => window.__mhaDemo.setText(t), text);
    const s = await state();
    assert.equal(s.model.family, family);
    assert.equal(s.ranOn, 'webgpu');
    assert.deepEqual(s.ids, ids);
    const L = ids.length, H = s.model.numHeads;
    for (let l = 0; l < s.model.numLayers; l++) {
      for (let h = 0; h < H; h++) {
        const weights = await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]);
        assertClose(Float32Array.from(weights), tensors[`pattern.${l}`].data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `${name} layer ${l} head ${h}`);
      }
    }
    assert.deepEqual(s.prediction.map((p) => p.id), torchTop(tensors.logits));
    assert.deepEqual(problems, []);
  });
}
