// A model containing mha-wasm/tfjs's MultiHeadAttention, trained by tfjs-layers (trainOnBatch, Adam,
// binary cross-entropy, an l2 regularizer) for 20 steps, against the same model trained in PyTorch
// from the same initial weights and batches (tests/fixtures/tfjs-training.json, written by
// tools/make_tfjs_training_fixture.py): the same loss at every step and the same final weights.
// Float32 on both sides; tolerances: losses |d| <= 1e-5 + 1e-4 |torch|, final weights
// |d| <= 1e-4 + 1e-3 |torch| (Adam divides by sqrt(v), which magnifies rounding in tiny gradients).
// Run on the cpu backend and on the wasm backend (with the fast gradient kernels, which it needs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/tfjs-training.json', import.meta.url)));
const LOSS = { absolute: 1e-5, relative: 1e-4 };
const WEIGHTS = { absolute: 1e-4, relative: 1e-3 };

function worstRatio(got, want, { absolute, relative }, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const ratio = Math.abs(got[i] - want[i]) / (absolute + relative * Math.abs(want[i]));
    if (!(ratio <= 1)) assert.fail(`${what}[${i}]: ${got[i]} vs PyTorch ${want[i]}`);
    worst = Math.max(worst, ratio);
  }
  return worst;
}

/** The fixture's model in tfjs-layers, with the fixture's initial weights. */
function buildModel(tf, multiHeadAttention) {
  const m = fixture.model;
  const input = tf.input({ shape: [m.length], dtype: 'int32' });
  let x = tf.layers.embedding({ inputDim: m.vocab, outputDim: m.embed, embeddingsRegularizer: tf.regularizers.l2({ l2: m.l2 }) }).apply(input);
  x = tf.layers.conv1d({ filters: m.filters, kernelSize: m.kernelSize, padding: 'same' }).apply(x);
  x = multiHeadAttention({ numHeads: m.numHeads, keyDim: m.keyDim }).apply(x, { value: x });
  x = tf.layers.flatten().apply(x);
  const model = tf.model({ inputs: input, outputs: tf.layers.dense({ units: 1, activation: 'sigmoid' }).apply(x) });
  model.compile({ optimizer: tf.train.adam(m.learningRate), loss: 'binaryCrossentropy' });
  model.setWeights(fixture.weightOrder.map((name) => tf.tensor(fixture.initial[name], fixture.shapes[name])));
  return model;
}

describe('20 Adam steps of a model with the layer, against PyTorch', () => {
  for (const backend of ['cpu', 'wasm']) {
    test(`tfjs ${backend} backend`, async () => {
      const tf = await loadTfjs(backend);
      const { multiHeadAttention, registerFastGradients } = await mhaTfjs(tf, { threads: 1 });
      const registration = backend === 'wasm' ? registerFastGradients({ backends: ['wasm'] }) : null;
      try {
        const model = buildModel(tf, multiHeadAttention);
        const m = fixture.model;
        const losses = [];
        for (const batch of fixture.batches) {
          const ids = tf.tensor2d(batch.ids, [m.batch, m.length], 'int32'), labels = tf.tensor2d(batch.labels, [m.batch, 1]);
          losses.push(await model.trainOnBatch(ids, labels));
          tf.dispose([ids, labels]);
        }
        const lossRatio = worstRatio(losses, fixture.losses, LOSS, 'loss');
        const weights = model.getWeights();
        let weightRatio = 0;
        fixture.weightOrder.forEach((name, i) => {
          assert.deepEqual(weights[i].shape, fixture.shapes[name], `${name}: shape`);
          weightRatio = Math.max(weightRatio, worstRatio(weights[i].dataSync(), fixture.final[name], WEIGHTS, `final ${name}`));
        });
        // The weights moved: a test that passes with no training would be worthless.
        const moved = Math.max(...fixture.final.query_kernel.map((w, i) => Math.abs(w - fixture.initial.query_kernel[i])));
        assert.ok(moved > 0.05, `query kernel moved ${moved}`);
        console.log(`# ${backend}: worst |tfjs - torch| / tolerance: losses ${lossRatio.toFixed(3)}, final weights ${weightRatio.toFixed(3)}`);
        model.dispose();
      } finally {
        registration?.restore();
      }
    });
  }
});
