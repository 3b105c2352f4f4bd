// mha-wasm/models' encoders with their attention on WebGPU (the other products on wasm): the tiny
// BERT's masked-LM logits and every hook point, unpadded and padded through attentionMask, against
// the float64 torch reference tests/js/models-encoders.test.js reads, with and without subgroups.
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { loadModel } from '../../bindings/js/models/index.js';
import { assertCloseMasked } from '../js/models-reference.js';
import { assertClose, checkpointFiles } from '../js/your-model-fixtures.js';
import { modules } from './devices.js';

const wasm = await init({ threads: 1 });
const devices = await modules();
const dir = new URL('../fixtures/your-model/bert/', import.meta.url);
const ref = {
  ...JSON.parse(readFileSync(new URL('hooks.json', dir), 'utf8')),
  tensors: readSafetensors(readFileSync(new URL('hooks.safetensors', dir))).tensors,
};

for (const [label, gpu] of devices) {
  test(`bert on WebGPU (${label}): the logits and every hook point, unpadded and padded, match the torch reference`, async () => {
    const model = await loadModel(gpu, checkpointFiles('bert'), { wasm });
    try {
      for (const [prefix, ids, options] of [['', ref.ids, {}], ['padded.', ref.padded.ids, { attentionMask: ref.padded.attentionMask, tokenTypeIds: ref.padded.tokenTypeIds }]]) {
        const { logits, cache } = await model.runWithCache(ids, options);
        assertClose(logits.data, ref.tensors[`${prefix}logits`].data, 1e-4, `${prefix}logits`);
        for (const name of ref.hookNames) assertCloseMasked(cache.get(name).data, ref.tensors[prefix + name].data, 1e-5, prefix + name);
      }
    } finally {
      model.dispose();
    }
  });
}
