// The demo page's "Your model" mode in Debian's Chromium on a tiny checkpoint of each further
// family mha-wasm/models loads (tools/make_tiny_checkpoints.py): Mistral (sliding window, f16),
// Pythia (GPT-NeoX: parallel residual, partial rotary), Gemma (multi-query, GeGLU), Gemma 2
// (softcaps, alternating windows, post-norms) and Phi-3 (fused projections). Each loads into the
// page, and every head of every layer and the prediction equal the float64 torch reference's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startDemo } from './browser.js';
import { assertClose, checkpointFiles, expectedValues, torchTop } from '../js/your-model-fixtures.js';

let demo;
let page;
let problems;

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());

for (const name of ['mistral', 'pythia', 'gemma', 'gemma2', 'phi3']) {
  test(`${name}: loaded into the page, every head and the prediction are torch's`, async () => {
    await page.evaluate((files) => window.__mhaDemo.loadModel(files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.bytes) }))),
      checkpointFiles(name).map((f) => ({ name: f.name, bytes: Array.from(f.bytes) })));
    const { text, ids, tensors, family } = expectedValues(name);
    await page.evaluate((t) => window.__mhaDemo.setText(t), text);
    const s = await state();
    assert.equal(s.source, 'model');
    assert.equal(s.model.family, family);
    assert.deepEqual(s.ids, ids);
    const L = ids.length;
    const [H] = tensors['pattern.0'].shape;
    assert.equal(await page.locator('#grid canvas').count(), s.numLayers * H, 'every head of every layer has a tile');
    for (let l = 0; l < s.numLayers; l++) {
      for (let h = 0; h < H; h++) {
        const weights = await page.evaluate(([layer, head]) => window.__mhaDemo.getWeights(layer, head), [l, h]);
        assertClose(Float32Array.from(weights), tensors[`pattern.${l}`].data.subarray(h * L * L, (h + 1) * L * L), 1e-4, `${name} layer ${l} head ${h}`);
      }
    }
    assert.deepEqual(s.prediction.map((p) => p.id), torchTop(tensors.logits));
    assert.match(await page.locator('#model-summary').textContent(), /family · \d+ layers/);
    assert.deepEqual(problems, []);
  });
}
