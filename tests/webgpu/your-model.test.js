// The "Your model" mode's checkpoints with their attention on the WebGPU backend (the other
// products on the wasm module's mha.Linear layers): the same torch values as on wasm (tests/js/your-model.test.js),
// f16 weights included, and generation through GPU caches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { readCheckpoint } from '../../bindings/js/models/checkpoint.js';
import { CheckpointModel } from '../../bindings/js/models/transformer.js';
import { assertClose, checkAgainstTorch, checkpointFiles, expectedValues, FIXTURES } from '../js/your-model-fixtures.js';
import { openDevice } from './devices.js';

const wasm = await init({ threads: 1 });
const gpu = await init({ backend: 'webgpu', threads: 1, device: await openDevice(true) });

for (const name of FIXTURES) {
  test(`${name} on WebGPU: logits, every head's pattern, logit lens, ablation and patching match torch's`, async () => {
    const model = await CheckpointModel.create(gpu, wasm, readCheckpoint(checkpointFiles(name)));
    try {
      await checkAgainstTorch(model, name);
    } finally {
      model.dispose();
    }
  });
}

test('generation through the GPU caches gives the logits of recomputing the whole text', async () => {
  const model = await CheckpointModel.create(gpu, wasm, readCheckpoint(checkpointFiles('llama')));
  try {
    const { ids } = expectedValues('llama');
    const caches = model.createCaches(32);
    await model.forward(ids.slice(0, -1), { caches, logits: 'last' });
    const step = await model.forward(ids.slice(-1), { caches, logits: 'last' });
    const full = await model.forward(ids, { logits: 'last' });
    assertClose(step.logits, full.logits, 1e-5, 'cached logits');
    assert.equal(step.layers[0].keys, ids.length);
  } finally {
    model.dispose();
  }
});

test('int8 and q4 weights on WebGPU (the attention quantized on the GPU, the rest on wasm) give the wasm model\'s logits', async () => {
  const { ids } = expectedValues('llama');
  for (const weightDtype of ['int8', 'q4']) {
    const onWasm = await CheckpointModel.create(wasm, wasm, readCheckpoint(checkpointFiles('llama')), { weightDtype });
    const onGpu = await CheckpointModel.create(gpu, wasm, readCheckpoint(checkpointFiles('llama')), { weightDtype });
    try {
      assert.equal(onGpu.summary.weightDtype, weightDtype);
      // (the same dequantized weights; the GPU's kernels do not round x to int16 as the wasm GEMV does)
      assertClose((await onGpu.forward(ids, { lens: false })).logits, (await onWasm.forward(ids, { lens: false })).logits, 5e-3, `${weightDtype} logits`);
    } finally {
      onWasm.dispose();
      onGpu.dispose();
    }
  }
});
