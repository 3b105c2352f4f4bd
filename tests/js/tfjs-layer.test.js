// mha-wasm/tfjs's MultiHeadAttention layer against tfjs-layers' own port of Keras' layer (bundled
// by keras-reference.js), made trainable here by a two-operand Einsum gradient, on tfjs' cpu
// backend: the same weights (exchanged with getWeights/setWeights), inputs and masks give the
// same outputs, scores, and gradients of every weight and input of loss = sum(output * G).
// Tolerances (float32): outputs |d| <= 1e-5 + 1e-4 |ref|, gradients |d| <= 1e-5 + 1e-3 |ref|.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { KerasReference, tf } from './keras-reference.js';
import { seededFloats } from './seeded.js';

const { MultiHeadAttention, multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const OUTPUT = { absolute: 1e-5, relative: 1e-4 };
const GRADIENT = { absolute: 1e-5, relative: 1e-3 };

// dC = einsum('a,b->c'): dA = einsum('c,b->a')(dC, B), dB = einsum('a,c->b')(A, dC). Every index of
// the port's equations appears in two of the three operands, so no broadcast is needed.
tf.registerGradient({
  kernelName: 'Einsum',
  saveAllInputs: true,
  gradFunc: (dy, saved, attrs) => {
    const [inputs, out] = attrs.equation.split('->');
    const [a, b] = inputs.split(',');
    return { 0: () => tf.einsum(`${out},${b}->${a}`, dy, saved[1]), 1: () => tf.einsum(`${a},${out}->${b}`, saved[0], dy) };
  },
});

function assertClose(got, want, what, { absolute, relative }) {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    worst = Math.max(worst, d / (absolute + relative * Math.abs(want[i])));
    if (!(d <= absolute + relative * Math.abs(want[i]))) assert.fail(`${what}[${i}]: ${got[i]} vs reference ${want[i]}`);
  }
  return worst;
}

const portWeights = (port) => [port._queryDense, port._keyDense, port._valueDense, port._outputDense].flatMap((d) => d.trainableWeights);

const CASES = [
  { name: 'cross-attention, key != value, attentionMask [B, T, S]', H: 2, keyDim: 4, B: 2, T: 5, S: 6, q: 8, kIn: 6, vIn: 7, mask: true },
  { name: 'causal self-attention', H: 3, keyDim: 4, B: 2, T: 6, q: 9, causal: true },
  { name: "the tutorial's layer (4 heads x keyDim 128 on 100 features, 32 tokens)", H: 4, keyDim: 128, B: 2, T: 32, q: 100 },
  { name: 'separate key and value, valueDim and outputShape', H: 2, keyDim: 3, valueDim: 5, outputShape: 11, B: 2, T: 4, S: 3, q: 6, kIn: 5, vIn: 4 },
];

/** The port and our layer with the same random weights; returns both and the port's variables. */
function twinLayers(args, query, kv) {
  const port = new KerasReference(args);
  port.call(query, kv);  // builds it
  // The port does not list its sublayers' weights in getWeights(): they are set on each sublayer.
  const portVariables = portWeights(port);
  portVariables.forEach((v, i) => v.write(tf.tensor(seededFloats(v.shape.reduce((a, b) => a * b, 1), 10 + i, i % 2 ? 0.3 : 1 / Math.sqrt(v.shape[0])), v.shape)));
  const ours = multiHeadAttention(args);
  ours.apply(query, kv);  // builds it
  ours.setWeights(portVariables.map((v) => v.read()));
  assert.deepEqual(ours.getWeights().map((w) => w.shape), portVariables.map((v) => v.shape));
  return { port, ours, portVariables };
}

const AXES_CASES = [
  { name: 'attentionAxes [2]: over the columns of a [B, rows, columns, F] grid', axes: [2], shape: [2, 3, 5, 8] },
  { name: 'attentionAxes [1]: over the rows', axes: [1], shape: [2, 3, 5, 8] },
  { name: 'attentionAxes [1, 2]: over the whole grid (the default)', axes: [1, 2], shape: [2, 3, 4, 6] },
  { name: 'attentionAxes [1, 3] of a rank-5 input', axes: [1, 3], shape: [1, 2, 3, 4, 6] },
];

describe('mha-wasm/tfjs MultiHeadAttention attentionAxes against the port (forward)', () => {
  for (const c of AXES_CASES) {
    test(c.name, () => {
      const size = c.shape.reduce((a, b) => a * b, 1);
      const x = tf.tensor(seededFloats(size, 5), c.shape);
      const args = { numHeads: 2, keyDim: 3, attentionAxes: c.axes };
      const { port, ours } = twinLayers(args, x, { value: x });
      const [want, wantScores] = port.callAndReturnAttentionScores(x, { value: x });
      const [got, gotScores] = ours.apply(x, { value: x, returnAttentionScores: true });
      assert.deepEqual(got.shape, want.shape);
      assert.deepEqual(gotScores.shape, wantScores.shape);
      assertClose(got.dataSync(), want.dataSync(), 'output', OUTPUT);
      assertClose(gotScores.dataSync(), wantScores.dataSync(), 'scores', OUTPUT);
      ours.dispose();
    });
  }
  test('attentionAxes naming the batch or the features is a clear error', () => {
    const x = tf.zeros([1, 2, 3, 4]);
    for (const axes of [[0], [3], [-1]]) {
      const layer = multiHeadAttention({ numHeads: 1, keyDim: 2, attentionAxes: axes });
      assert.throws(() => layer.apply(x, { value: x }), { name: 'RangeError', message: /^MultiHeadAttention.apply: attentionAxes \[-?\d\] must name axes between 1 and 2/ });
    }
  });
});

describe('mha-wasm/tfjs MultiHeadAttention against tfjs-layers\' port of Keras (cpu backend)', () => {
  let worstOutput = 0, worstGradient = 0;
  for (const c of CASES) {
    test(c.name, () => {
      const S = c.S ?? c.T, cross = c.S !== undefined || c.kIn !== undefined;
      const args = { numHeads: c.H, keyDim: c.keyDim, valueDim: c.valueDim, outputShape: c.outputShape };
      const query = tf.variable(tf.tensor(seededFloats(c.B * c.T * c.q, 1), [c.B, c.T, c.q]));
      const value = cross ? tf.variable(tf.tensor(seededFloats(c.B * S * c.vIn, 2), [c.B, S, c.vIn])) : query;
      const key = cross ? tf.variable(tf.tensor(seededFloats(c.B * S * c.kIn, 3), [c.B, S, c.kIn])) : null;
      // 1 = attend; key 0 stays open for every query, so no row is fully masked (where the port differs).
      const mask = c.mask ? tf.tensor(Int32Array.from({ length: c.B * c.T * S }, (_, i) => (i % S === 0 || (i * 7919) % 5 !== 0 ? 1 : 0)), [c.B, c.T, S]) : null;
      const G = tf.tensor(seededFloats(c.B * c.T * (c.outputShape ?? c.q), 4), [c.B, c.T, c.outputShape ?? c.q]);

      const kv = { value, ...(key ? { key } : {}) };
      const { port, ours, portVariables } = twinLayers(args, query, kv);
      const callPort = () => port.callAndReturnAttentionScores(query, { ...kv, attentionMask: mask ? tf.cast(mask, 'bool') : undefined, useCausalMask: c.causal ?? false });
      const callOurs = () => ours.apply(query, { ...kv, ...(mask ? { attentionMask: mask } : {}), useCausalMask: c.causal ?? false, returnAttentionScores: true });

      // Outside a gradient tape (inference: no state kept for a backward pass).
      const [wantOut, wantScores] = callPort(), [gotOut, gotScores] = callOurs();
      assert.deepEqual([gotOut.shape, gotScores.shape], [[c.B, c.T, c.outputShape ?? c.q], [c.B, c.H, c.T, S]]);
      worstOutput = Math.max(worstOutput, assertClose(gotOut.dataSync(), wantOut.dataSync(), 'output', OUTPUT),
        assertClose(gotScores.dataSync(), wantScores.dataSync(), 'scores', OUTPUT));

      const inputs = [query, ...(cross ? [value, key] : [])];
      // Under a gradient tape: loss = sum(output * G).
      const run = (call, weights) => tf.variableGrads(() => {
        const [out, scores] = call();
        run.values = [out.dataSync().slice(), scores.dataSync().slice()];
        return tf.sum(tf.mul(out, G));
      }, [...inputs, ...weights]);
      const want = run(callPort, portVariables.map((w) => w.read()));
      const wantValues = run.values;
      const got = run(callOurs, ours.trainableWeights.map((w) => w.read()));
      assertClose(run.values[0], wantValues[0], 'output under a tape', OUTPUT);
      assertClose(run.values[1], wantValues[1], 'scores under a tape', OUTPUT);
      const wantGrads = Object.values(want.grads), gotGrads = Object.values(got.grads);
      const names = [...inputs.map((_, i) => ['query', 'value', 'key'][i]), ...ours.trainableWeights.map((w) => w.originalName)];
      assert.equal(gotGrads.length, names.length);
      names.forEach((name, i) => {
        assert.deepEqual(gotGrads[i].shape, wantGrads[i].shape, `d ${name}: shape`);
        worstGradient = Math.max(worstGradient, assertClose(gotGrads[i].dataSync(), wantGrads[i].dataSync(), `d ${name}`, GRADIENT));
      });
      ours.dispose();
    });
  }
  after(() => console.log(`# worst |ours - port| / tolerance: outputs ${worstOutput.toFixed(3)}, gradients ${worstGradient.toFixed(3)}`));
});

// weightDtype (Keras' quantize('int8')): the variables keep float32 weights, the wasm layer computes
// with its quantized projections; inputs' gradients flow, the weights are not trainable.
describe("mha-wasm/tfjs MultiHeadAttention with weightDtype 'int8'", () => {
  const x = tf.tensor(seededFloats(2 * 3 * 8, 5), [2, 3, 8]);
  const pair = () => {
    const float = multiHeadAttention({ numHeads: 2, keyDim: 4 }), int8 = multiHeadAttention({ numHeads: 2, keyDim: 4, weightDtype: 'int8' });
    float.apply(x, { value: x });
    int8.apply(x, { value: x });
    int8.setWeights(float.getWeights());
    return [float, int8];
  };

  test('computes with int8 projections: close to the float32 layer, not equal', () => {
    const [float, int8] = pair();
    const want = float.apply(x, { value: x }).dataSync(), got = int8.apply(x, { value: x }).dataSync();
    const worst = Math.max(...got.map((v, i) => Math.abs(v - want[i])));
    assert.ok(worst > 0 && worst < 0.05, `worst |int8 - f32| ${worst}`);
    assert.deepEqual(Array.from(int8.getWeights()[0].dataSync()), Array.from(float.getWeights()[0].dataSync()), 'getWeights: the float32 weights');
    float.dispose();
    int8.dispose();
  });

  test('its weights are not trainable; the inputs\' gradients go through the dequantized weights', () => {
    const [float, int8] = pair();
    assert.deepEqual([int8.trainableWeights.length, int8.nonTrainableWeights.length], [0, 8]);
    const loss = (layer) => (q) => layer.apply(q, { value: x }).sum();
    const want = tf.grad(loss(float))(x).dataSync(), got = tf.grad(loss(int8))(x).dataSync();
    const worst = Math.max(...got.map((v, i) => Math.abs(v - want[i])));
    assert.ok(worst > 0 && worst < 0.05, `worst |d query int8 - f32| ${worst}`);
    float.dispose();
    int8.dispose();
  });

  test('model.fit trains the layers around it and leaves its weights as they were', async () => {
    const input = tf.input({ shape: [3, 8] });
    const attention = multiHeadAttention({ numHeads: 2, keyDim: 4, weightDtype: 'int8' });
    const dense = tf.layers.dense({ units: 1 });
    const model = tf.model({ inputs: input, outputs: dense.apply(attention.apply(input, { value: input })) });
    model.compile({ optimizer: tf.train.sgd(0.1), loss: 'meanSquaredError' });
    const before = attention.getWeights().map((w) => Array.from(w.dataSync())), denseBefore = Array.from(dense.getWeights()[0].dataSync());
    await model.fit(x, tf.ones([2, 3, 1]), { epochs: 2, verbose: 0 });
    assert.deepEqual(attention.getWeights().map((w) => Array.from(w.dataSync())), before);
    assert.notDeepEqual(Array.from(dense.getWeights()[0].dataSync()), denseBefore, 'the dense layer trained');
    model.dispose();
  });

  test('getConfig carries it, and a layer made from that config is quantized too', () => {
    const [float, int8] = pair();
    const config = int8.getConfig();
    assert.equal(config.weightDtype, 'int8');
    assert.equal('weightDtype' in float.getConfig(), false, 'the default (f32) is left out');
    const copy = tf.serialization.SerializationMap.getMap().classNameMap.MultiHeadAttention[1](MultiHeadAttention, config);
    copy.apply(x, { value: x });
    copy.setWeights(float.getWeights());
    assert.deepEqual(Array.from(copy.apply(x, { value: x }).dataSync()), Array.from(int8.apply(x, { value: x }).dataSync()));
    for (const layer of [float, int8, copy]) layer.dispose();
  });
});
