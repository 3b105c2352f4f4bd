// Keras 2.15 models converted by tensorflowjs_converter (tests/fixtures/keras-converted/, written
// by tools/make_keras_converted_fixtures.mjs exactly as the converter writes them) load with
// tf.loadLayersModel once mhaTfjs(tf) has run: the MultiHeadAttention config Keras writes, the
// self-attention whose value is a node reference, cross-attention whose value and key are upstream
// of the query, weights bound by name in strict mode; predictions equal Keras' math in float64.
// A compiled model (training_config) loads uncompiled (tfjs reads no training_config inside
// modelTopology) and trains once compiled; a mask from another model input is a clear Error.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { fileHandler } from '../../examples/tfjs-files.mjs';
import { mhaTfjs } from '../../bindings/js/tfjs.js';

const tf = await loadTfjs('cpu');
const { MultiHeadAttention, multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const DIR = new URL('../fixtures/keras-converted/', import.meta.url).pathname;
const load = (name) => tf.loadLayersModel(fileHandler(tf, `${DIR}${name}`));
const expected = (name) => JSON.parse(readFileSync(`${DIR}${name}/expected.json`, 'utf8'));
const inputsOf = ({ inputs }) => inputs.map((i) => tf.tensor(i.data, i.shape, i.dtype));

function assertClose(got, want, what, absolute = 1e-5, relative = 1e-4) {
  assert.equal(got.length, want.length, `${what}: length`);
  want.forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= absolute + relative * Math.abs(w), `${what}[${i}]: ${got[i]} vs Keras' ${w}`));
}

test('without mhaTfjs, tfjs-layers alone fails as tfjs issue #8574 reports (what mhaTfjs(tf) fixes)', () => {
  const script = `import { loadTfjs } from './bench/tfjs/load-tfjs.js';
    import { fileHandler } from './examples/tfjs-files.mjs';
    const tf = await loadTfjs('cpu');
    await tf.loadLayersModel(fileHandler(tf, ${JSON.stringify(`${DIR}classifier-small`)})).catch((e) => console.log(e.message));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('../../', import.meta.url).pathname, encoding: 'utf8' });
  assert.match(output, /^Unknown layer: MultiHeadAttention\./);
});

for (const name of ['classifier-small', 'tutorial-compiled']) {
  test(`${name}: loads, binds every weight by name, predicts Keras' float64 outputs`, async () => {
    const model = await load(name);
    const layer = model.getLayer('multi_head_attention');
    assert.ok(layer instanceof MultiHeadAttention);
    // The Keras config's keys arrived: attention_axes [1], the saved input shapes, the initializers.
    const config = layer.getConfig();
    assert.deepEqual(config.attentionAxes, [1]);
    assert.deepEqual(config.queryShape, config.valueShape);
    assert.deepEqual(config.kernelInitializer.config, { scale: 1, mode: 'fanAvg', distribution: 'uniform', seed: null });  // GlorotUniform
    // The self-attention's value (a node reference) became the query: one input, as in Keras' graph.
    assert.equal(layer.inboundNodes[0].inputTensors.length, 1);
    const manifest = JSON.parse(readFileSync(`${DIR}${name}/model.json`, 'utf8')).weightsManifest[0].weights;
    assert.deepEqual(model.weights.map((w) => w.originalName).sort(), manifest.map((w) => w.name).sort());
    // Each weight holds its own bytes (strict binding by name, not by position).
    const bytes = readFileSync(`${DIR}${name}/group1-shard1of1.bin`);
    let offset = 0;
    for (const entry of manifest) {
      const n = entry.shape.reduce((a, b) => a * b, 1);
      const want = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + 4 * n));
      offset += 4 * n;
      const variable = model.weights.find((w) => w.originalName === entry.name);
      assert.deepEqual(variable.shape, entry.shape, entry.name);
      assert.deepEqual(variable.read().dataSync(), want, entry.name);
    }
    const e = expected(name);
    const got = model.predict(inputsOf(e));
    assert.deepEqual(got.shape, e.output.shape);
    assertClose(got.dataSync(), e.output.data, 'prediction');
    assert.equal(model.optimizer, undefined, 'the converter nests training_config in modelTopology, where tfjs does not read it');
    model.dispose();
  });
}

test('a loaded (compiled in Keras) model trains once compiled in tfjs, and save/load round-trips', async () => {
  const model = await load('classifier-small');
  model.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy', metrics: ['accuracy'] });
  const e = expected('classifier-small');
  const [x] = inputsOf(e);
  const y = tf.tensor2d([1, 0, 1, 0], [4, 1]);
  const before = model.getLayer('multi_head_attention').getWeights()[0].dataSync().slice();
  const history = await model.fit(x, y, { epochs: 3, batchSize: 2, verbose: 0 });
  assert.equal(history.history.loss.length, 3);
  assert.ok(history.history.loss[2] < history.history.loss[0], `loss ${history.history.loss}`);
  assert.notDeepEqual(model.getLayer('multi_head_attention').getWeights()[0].dataSync(), before);
  let artifacts;
  await model.save(tf.io.withSaveHandler(async (a) => { artifacts = a; return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } }; }));
  const again = await tf.loadLayersModel({ load: async () => artifacts });
  assert.deepEqual(again.predict(x).dataSync(), model.predict(x).dataSync());
  model.dispose();
  again.dispose();
});

test('cross-attention with value and key upstream of the query, causal, valueDim and outputShape', async () => {
  const model = await load('cross-attention');
  const layer = model.getLayer('cross_attention');
  // value (input_1) and key (key_source, camelCased by tfjs' loader to keySource) wired as inputs.
  assert.deepEqual(layer.inboundNodes[0].inputTensors.map((t) => t.sourceLayer.name), ['query_source', 'input_1', 'key_source']);
  const e = expected('cross-attention');
  const got = model.predict(inputsOf(e));
  assert.deepEqual(got.shape, e.output.shape);
  assertClose(got.dataSync(), e.output.data, 'prediction');
  model.dispose();
});

test('a mask from another model input cannot be wired by tfjs: a clear Error while loading', async () => {
  await assert.rejects(load('mask-input'), {
    message: /^MultiHeadAttention.apply: the model's attentionMask is the output of layer 'input2' \(node 0, tensor 0; tfjs' loader camelCases the name\), which is not upstream of the query/,
  });
});

test("the workaround: the same model built in tfjs, the converter's weights loaded by name", async () => {
  const x = tf.input({ shape: [4, 6], name: 'input_1' }), mask = tf.input({ shape: [4, 4], name: 'input_2' });
  const y = multiHeadAttention({ numHeads: 2, keyDim: 3, name: 'multi_head_attention' }).apply(x, { value: x, attentionMask: mask });
  const model = tf.model({ inputs: [x, mask], outputs: y });
  const { weightsManifest: [{ paths: [shard], weights: specs }] } = JSON.parse(readFileSync(`${DIR}mask-input/model.json`, 'utf8'));
  const bytes = readFileSync(`${DIR}mask-input/${shard}`);
  model.loadWeights(tf.io.decodeWeights(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length), specs));  // strict: every name
  const layer = model.getLayer('multi_head_attention');
  assert.deepEqual(layer.getWeights()[0].dataSync(), new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + 4 * 36)));
  const input = tf.randomUniform([1, 4, 6]), open = tf.ones([1, 4, 4]), diagonal = tf.eye(4).reshape([1, 4, 4]);
  assert.notDeepEqual(model.predict([input, open]).dataSync(), model.predict([input, diagonal]).dataSync());
  model.dispose();
});
