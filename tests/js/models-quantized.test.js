// mha-wasm/models at weightDtype f16, int8 and q4 (every matrix: attention, MLPs, unembedding,
// embedding rows) on every tiny checkpoint: the logits stay within docs/quantized.md's stated
// error of the same checkpoint at f32 (tools/models-quantization-error.mjs measures it), each
// precision holds fewer bytes than the one above it, and a model runs generate() at q4.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { loadModel } from '../../bindings/js/models/index.js';
import { quantizationErrors } from '../../tools/models-quantization-error.mjs';
import { checkpointFiles, expectedValues, FIXTURES } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });

/** docs/quantized.md#whole-models: the largest |logit - f32 logit| over the largest |f32 logit|. */
const BOUNDS = { f16: 2e-3, int8: 8e-2, q4: 0.6 };

for (const name of FIXTURES) {
  test(`${name}: f16, int8 and q4 logits within the documented error of f32`, async () => {
    const errors = await quantizationErrors(mha, checkpointFiles(name), expectedValues(name).ids);
    for (const [dtype, bound] of Object.entries(BOUNDS)) {
      assert.ok(errors[dtype].relative <= bound, `${name} at ${dtype}: ${errors[dtype].relative} > ${bound}`);
    }
    assert.ok(errors.int8.relative < errors.q4.relative, `${name}: int8 (${errors.int8.relative}) is closer than q4 (${errors.q4.relative})`);
  });
}

test('each precision holds fewer bytes of wasm heap than the one above it, and a q4 model generates', async () => {
  const files = checkpointFiles('gpt2');
  const held = {};
  for (const weightDtype of ['f32', 'f16', 'int8', 'q4']) {
    const before = mha.heapAllocatedBytes();
    const model = await loadModel(mha, files, { weightDtype });
    held[weightDtype] = mha.heapAllocatedBytes() - before;
    assert.equal(model.transformer.summary.weightDtype, weightDtype);
    if (weightDtype === 'q4') {
      const { ids } = await model.generate(model.tokenizer.encode('Hello'), { maxNewTokens: 4, stopAtEos: false });
      assert.equal(ids.length, 4);
    }
    model.dispose();
  }
  assert.ok(held.f32 > held.f16 && held.f16 > held.int8 && held.int8 > held.q4, JSON.stringify(held));
});
