// Runs mha-wasm/tfjs's bad-input table (tfjs-bad-inputs.table.js) on tfjs' cpu backend: each row
// throws (or rejects with) exactly its error class and message.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { mhaTfjs, registerFastGradients } from '../../bindings/js/tfjs.js';
import { TFJS_ROWS } from './tfjs-bad-inputs.table.js';

const tf = await loadTfjs('cpu');
const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const kit = { tf, x: tf.zeros([2, 3, 4]), layer: (args) => multiHeadAttention(args), mhaTfjs, registerFastGradients };

for (const row of TFJS_ROWS) {
  test(row.input, async () => {
    let error = null;
    try {
      await row.call(kit);
    } catch (e) {
      error = e;
    }
    assert.ok(error, 'no error thrown');
    assert.equal(error.constructor, row.error, `${error.constructor.name}: ${error.message}`);
    assert.equal(error.message, row.message);
  });
}
