// mha-wasm/models' encoders with their attention on WebGPU (the other products on wasm): the tiny
// BERT's and RoBERTa's masked-LM logits and every hook point, unpadded and padded through attentionMask, against
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
/** A fixture's torch reference: hooks.json and hooks.safetensors' tensors. */
function referenceOf(name) {
  const dir = new URL(`../fixtures/your-model/${name}/`, import.meta.url);
  return {
    ...JSON.parse(readFileSync(new URL('hooks.json', dir), 'utf8')),
    tensors: readSafetensors(readFileSync(new URL('hooks.safetensors', dir))).tensors,
  };
}

for (const name of ['bert', 'roberta']) {
  const ref = referenceOf(name);
  for (const [label, gpu] of devices) {
    test(`${name} on WebGPU (${label}): the logits and every hook point, unpadded and padded, match the torch reference`, async () => {
      const model = await loadModel(gpu, checkpointFiles(name), { wasm });
      try {
        for (const [prefix, ids, options] of [['', ref.ids, {}], ['padded.', ref.padded.ids, { attentionMask: ref.padded.attentionMask, tokenTypeIds: ref.padded.tokenTypeIds }]]) {
          const { logits, cache } = await model.runWithCache(ids, options);
          assertClose(logits.data, ref.tensors[`${prefix}logits`].data, 1e-4, `${prefix}logits`);
          for (const hook of ref.hookNames) assertCloseMasked(cache.get(hook).data, ref.tensors[prefix + hook].data, 1e-5, prefix + hook);
        }
      } finally {
        model.dispose();
      }
    });
  }
}
