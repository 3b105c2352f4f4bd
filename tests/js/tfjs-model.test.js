// mha-wasm/tfjs's layer in models and alone: model.save / tf.loadLayersModel round trips (in memory
// through tf.io, on disk through examples/tfjs-files.mjs) keep the layer's class, call form and
// weights; the layer's gradients equal mha-wasm's backward called directly (layout conversion
// checked independently here) and central finite differences.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { fileHandler } from '../../examples/tfjs-files.mjs';
import { stateDictFromKeras } from '../../bindings/js/index.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { seededFloats } from './seeded.js';

const tf = await loadTfjs('cpu');
const { multiHeadAttention, MultiHeadAttention, module: mha } = await mhaTfjs(tf, { threads: 1 });
const t = (shape, seed, scale = 0.5) => tf.tensor(seededFloats(shape.reduce((a, b) => a * b, 1), seed, scale), shape);

/** A model with a masked causal attention layer and cross attention (key != value). */
function buildModel() {
  const q = tf.input({ shape: [5, 6], name: 'q' }), kv = tf.input({ shape: [4, 3], name: 'kv' }), mask = tf.input({ shape: [5, 5], name: 'mask' });
  const selfAttention = multiHeadAttention({ numHeads: 2, keyDim: 3, name: 'self_attention', kernelRegularizer: tf.regularizers.l2({ l2: 0.01 }) })
    .apply(q, { value: q, attentionMask: mask, useCausalMask: true });
  const cross = multiHeadAttention({ numHeads: 3, keyDim: 2, valueDim: 4, outputShape: 7, name: 'cross' })
    .apply(selfAttention, { value: kv, key: tf.layers.dense({ units: 5 }).apply(kv) });
  return tf.model({ inputs: [q, kv, mask], outputs: cross });
}

const inputs = () => [t([2, 5, 6], 1), t([2, 4, 3], 2), tf.tensor(Array.from({ length: 50 }, (_, i) => (i % 5 === 0 || (i * 7) % 3 ? 1 : 0)), [2, 5, 5])];

async function assertRoundTrip(save, load) {
  const model = buildModel();
  const want = model.predict(inputs());
  await model.save(save);
  const loaded = await tf.loadLayersModel(load);
  assert.ok(loaded.getLayer('self_attention') instanceof MultiHeadAttention);
  assert.deepEqual(loaded.getLayer('cross').getConfig().outputShape, 7);
  const got = loaded.predict(inputs());
  assert.deepEqual(got.shape, [2, 5, 7]);
  assert.deepEqual(Array.from(got.dataSync()), Array.from(want.dataSync()));
  // The mask and the causal flag survived: without them the output differs.
  const ones = inputs();
  ones[2] = tf.onesLike(ones[2]);
  assert.notDeepEqual(Array.from(loaded.predict(ones).dataSync()), Array.from(got.dataSync()));
  loaded.getWeights().forEach((w, i) => assert.deepEqual(Array.from(w.dataSync()), Array.from(model.getWeights()[i].dataSync())));
}

test('model.save / tf.loadLayersModel through tf.io, in memory', async () => {
  let artifacts;
  await assertRoundTrip(tf.io.withSaveHandler(async (a) => { artifacts = a; return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } }; }),
    { load: async () => artifacts });
  const layers = artifacts.modelTopology.config.layers.filter((l) => l.class_name === 'MultiHeadAttention');
  assert.deepEqual(layers.map((l) => l.config.num_heads), [2, 3]);
});

test('model.save / tf.loadLayersModel on disk (model.json + weights.bin)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mha-tfjs-model-'));
  try {
    await assertRoundTrip(fileHandler(tf, dir), fileHandler(tf, dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** [rows, cols] -> [cols, rows], written independently of the package's conversion. */
const transposed = (data, rows, cols) => Float32Array.from({ length: rows * cols }, (_, i) => data[(i % rows) * cols + Math.floor(i / rows)]);

test("the layer's gradients equal mha-wasm's backward called directly", () => {
  const [B, T, S, Eq, Ek, Ev, H, Dk, Dv, out] = [2, 4, 3, 6, 5, 4, 2, 3, 2, 7];
  const layer = multiHeadAttention({ numHeads: H, keyDim: Dk, valueDim: Dv, outputShape: out });
  const q = tf.variable(t([B, T, Eq], 3)), v = tf.variable(t([B, S, Ev], 4)), k = tf.variable(t([B, S, Ek], 5)), G = t([B, T, out], 6);
  layer.apply(q, { value: v, key: k });
  layer.setWeights(layer.getWeights().map((w, i) => t(w.shape, 20 + i, 0.4)));
  const weights = layer.trainableWeights.map((w) => w.read());
  const { grads } = tf.variableGrads(() => tf.sum(tf.mul(layer.apply(q, { value: v, key: k }), G)), [q, v, k, ...weights]);
  const got = Object.values(grads).map((g) => g.dataSync());

  const names = ['query/kernel', 'query/bias', 'key/kernel', 'key/bias', 'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias'];
  const direct = new mha.MultiHeadAttention({ embedDim: Eq, numHeads: H, kdim: Ek, vdim: Ev, headDim: Dk, valueHeadDim: Dv, outputDim: out });
  direct.loadStateDict(stateDictFromKeras(Object.fromEntries(names.map((n, i) => [n, { data: weights[i].dataSync(), shape: weights[i].shape }]))));
  const asCore = (x) => ({ data: x.dataSync(), shape: x.shape });
  const g = direct.forward(asCore(q), asCore(k), asCore(v), { grad: true }).backward(asCore(G));
  direct.dispose();
  const close = (a, b, what) => a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= 1e-6 + 1e-5 * Math.abs(b[i]), `${what}[${i}]: ${x} vs ${b[i]}`));
  close(got[0], g.query.data, 'd query');
  close(got[1], g.value.data, 'd value');
  close(got[2], g.key.data, 'd key');
  const p = g.params, qRows = H * Dk;
  const inProjBias = p.in_proj_bias;
  close(got[3], transposed(p.q_proj_weight, qRows, Eq), 'd query/kernel');
  close(got[4], inProjBias.subarray(0, qRows), 'd query/bias');
  close(got[5], transposed(p.k_proj_weight, qRows, Ek), 'd key/kernel');
  close(got[6], inProjBias.subarray(qRows, 2 * qRows), 'd key/bias');
  close(got[7], transposed(p.v_proj_weight, H * Dv, Ev), 'd value/kernel');
  close(got[8], inProjBias.subarray(2 * qRows), 'd value/bias');
  close(got[9], transposed(p['out_proj.weight'], out, H * Dv), 'd attention_output/kernel');
  close(got[10], p['out_proj.bias'], 'd attention_output/bias');
  layer.dispose();
});

test("the layer's gradients equal central finite differences (every weight and input entry)", () => {
  const [B, T, E, H, D] = [1, 3, 4, 2, 3];
  const layer = multiHeadAttention({ numHeads: H, keyDim: D });
  const x = tf.variable(t([B, T, E], 7, 1));
  const G = t([B, T, E], 8, 1);
  layer.apply(x, { value: x, useCausalMask: true });
  layer.setWeights(layer.getWeights().map((w, i) => t(w.shape, 30 + i, 0.6)));
  const variables = [x, ...layer.trainableWeights.map((w) => w.read())];
  const loss = () => tf.tidy(() => tf.sum(tf.mul(layer.apply(x, { value: x, useCausalMask: true }), G)).dataSync()[0]);
  const { grads } = tf.variableGrads(() => tf.sum(tf.mul(layer.apply(x, { value: x, useCausalMask: true }), G)), variables);
  const analytic = Object.values(grads).map((g) => g.dataSync());
  const eps = 1e-2;
  let worst = 0;
  variables.forEach((variable, n) => {
    const base = variable.dataSync().slice();
    for (let i = 0; i < base.length; i++) {
      const at = (delta) => { const d = base.slice(); d[i] += delta; variable.assign(tf.tensor(d, variable.shape)); return loss(); };
      const numeric = (at(eps) - at(-eps)) / (2 * eps);
      variable.assign(tf.tensor(base, variable.shape));
      const error = Math.abs(numeric - analytic[n][i]);
      worst = Math.max(worst, error);
      assert.ok(error <= 2e-4 + 2e-3 * Math.abs(numeric), `variable ${n} [${i}]: finite difference ${numeric} vs gradient ${analytic[n][i]}`);
    }
  });
  console.log(`# worst |finite difference - gradient|: ${worst.toExponential(2)}`);
  layer.dispose();
});

test('dropout applies only with training (model.fit)', () => {
  const x = t([2, 4, 6], 9, 1);
  const plain = multiHeadAttention({ numHeads: 2, keyDim: 3 });
  const dropped = multiHeadAttention({ numHeads: 2, keyDim: 3, dropout: 0.5 });
  plain.apply(x, { value: x });
  dropped.apply(x, { value: x });
  dropped.setWeights(plain.getWeights());
  const values = (layer, training) => layer.apply(x, { value: x, training, returnAttentionScores: true }).map((r) => Array.from(r.dataSync()));
  const [want, wantScores] = values(plain, false);
  assert.deepEqual(values(dropped, false), [want, wantScores]);
  const [trained] = values(dropped, true);
  assert.notDeepEqual(trained, want);
  plain.dispose();
  dropped.dispose();
});
