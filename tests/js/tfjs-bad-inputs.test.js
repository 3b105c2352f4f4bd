// Runs mha-wasm/tfjs's bad-input table (tfjs-bad-inputs.table.js) on tfjs' cpu backend: each row
// throws (or rejects with) exactly its error class and message.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { mhaTfjs, registerFastGradients } from '../../bindings/js/tfjs.js';
import { checkTrainingSettings } from '../../web/sentiment-train/session.js';
import { TFJS_ROWS } from './tfjs-bad-inputs.table.js';

const tf = await loadTfjs('cpu');
const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
/** Runs fn with the fast kernels on cpu and without tfjs' own `name` kernel to hand refused cases to. */
function withoutTfjsKernel(name, fn) {
  const own = tf.getKernel(name, 'cpu');
  tf.unregisterKernel(name, 'cpu');
  const registration = registerFastGradients(tf, { backends: ['cpu'] });
  try {
    return fn();
  } finally {
    registration.restore();
    tf.registerKernel(own);
  }
}
const kit = { tf, x: tf.zeros([2, 3, 4]), layer: (args) => multiHeadAttention(args), mhaTfjs, registerFastGradients, checkTrainingSettings, withoutTfjsKernel };

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
