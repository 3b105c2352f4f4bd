// mha-wasm/models with its attention on the WebGPU backend (the other products on the wasm
// module): every hook point, the replacing hooks and the three workflows against the same float64
// torch reference as on wasm (tests/js/models.test.js), for every family the package loads, on a
// device with subgroups (and shader-f16 where the adapter has it) and on one without.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { loadModel } from '../../bindings/js/models/index.js';
import { checkHookPoints, checkReplacements, checkWorkflows, loadFixture } from '../js/models-reference.js';
import { checkpointFiles, FIXTURES } from '../js/your-model-fixtures.js';
import { modules } from './devices.js';

const wasm = await init({ threads: 1 });
const devices = await modules();
const [, gpu] = devices[0];

for (const [label, mha] of devices) {
  for (const name of FIXTURES) {
    test(`${name} on WebGPU (${label}): every hook point, the replacing hooks and the workflows match the torch reference`, async () => {
      const model = await loadFixture(mha, name, { wasm });
      try {
        await checkHookPoints(model, name);
        await checkReplacements(model, name);
        await checkWorkflows(model, name);
      } finally {
        model.dispose();
      }
    });
  }
}

test('a WebGPU module without options.wasm is refused by name', async () => {
  await assert.rejects(loadModel(gpu, checkpointFiles('gpt2')), {
    name: 'TypeError',
    message: "loadModel: options.wasm: a WebGPU module runs the attention; the model's other products need the wasm module (await init()) as options.wasm",
  });
});
