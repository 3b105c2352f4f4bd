// Every way to call mha-wasm/tfjs's MultiHeadAttention builds the same layer as tfjs-layers' own
// port of Keras' (bundled by keras-reference.js, made trainable by a two-operand Einsum gradient as
// tfjs-layer.test.js does) and computes the same thing: one table of call forms (with and without
// key, with and without attentionMask, the list form, masks of rank 3 and 4 with attentionAxes,
// returnAttentionScores), each run eagerly and in a functional model (symbolic inputs, then
// model.apply on tensors). Per row: weight shapes, outputs, scores, and the gradients of every
// weight and input of loss = sum(output * G). Tolerances as tfjs-layer.test.js's (float32).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { KerasReference, tf } from './keras-reference.js';
import { seededFloats } from './seeded.js';

const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const OUTPUT = { absolute: 1e-5, relative: 1e-4 };
const GRADIENT = { absolute: 1e-5, relative: 1e-3 };

tf.registerGradient({  // the port's Einsum gradient (see tfjs-layer.test.js)
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
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= absolute + relative * Math.abs(want[i]))) assert.fail(`${what}[${i}]: ${got[i]} vs reference ${want[i]}`);
  }
}

// q, v, k: input shapes (v absent: self-attention, value = query); mask: its shape (1 = attend;
// the first key of every query stays open, where the port and Keras 3 differ); list: the list form
// apply([q, v, k?]); axes: attentionAxes; scores: returnAttentionScores.
const FORMS = [
  { name: 'self-attention apply(q, { value: q })', q: [2, 5, 6] },
  { name: 'cross-attention apply(q, { value })', q: [2, 5, 6], v: [2, 4, 7] },
  { name: 'apply(q, { value, key })', q: [2, 5, 6], v: [2, 4, 7], k: [2, 4, 3] },
  { name: 'apply(q, { value, attentionMask }) without key (the mask is not the key)', q: [2, 5, 6], v: [2, 4, 7], mask: [2, 5, 4] },
  { name: 'apply(q, { value, key, attentionMask }), returnAttentionScores', q: [2, 5, 6], v: [2, 4, 7], k: [2, 4, 3], mask: [2, 5, 4], scores: true },
  { name: 'self-attention with a [B, T, T] mask', q: [2, 4, 6], mask: [2, 4, 4] },
  { name: 'list form apply([q, v])', q: [2, 5, 6], v: [2, 4, 7], list: true },
  { name: 'list form apply([q, v, k]), returnAttentionScores', q: [2, 5, 6], v: [2, 4, 7], k: [2, 4, 3], list: true, scores: true },
  { name: 'rank 4, attentionAxes [2], mask [B, rows, T, S] (rank 4), returnAttentionScores', q: [2, 3, 4, 6], mask: [2, 3, 4, 4], axes: [2], scores: true },
  { name: 'rank 4 cross-attention, attentionAxes [1], mask [B, columns, T, S]', q: [2, 3, 4, 6], v: [2, 5, 4, 7], mask: [2, 4, 3, 5], axes: [1] },
];

const size = (shape) => shape.reduce((a, b) => a * b, 1);
const maskValues = (shape) => Float32Array.from({ length: size(shape) }, (_, i) => (i % shape.at(-1) === 0 || (i * 7919) % 5 !== 0 ? 1 : 0));

for (const mode of ['eager', 'symbolic']) {
  describe(`call forms, ${mode}, against tfjs-layers' port of Keras`, () => {
    for (const form of FORMS) {
      test(form.name, () => {
        const args = { numHeads: 2, keyDim: 3, ...(form.axes ? { attentionAxes: form.axes } : {}) };
        const query = tf.variable(tf.tensor(seededFloats(size(form.q), 1), form.q));
        const value = form.v ? tf.variable(tf.tensor(seededFloats(size(form.v), 2), form.v)) : query;
        const key = form.k ? tf.variable(tf.tensor(seededFloats(size(form.k), 3), form.k)) : null;
        const mask = form.mask ? tf.tensor(maskValues(form.mask), form.mask) : null;

        // The port, built by a call, with seeded weights.
        const port = new KerasReference(args);
        const portArgs = { value, ...(key ? { key } : {}), ...(mask ? { attentionMask: tf.cast(mask, 'bool') } : {}) };
        port.call(query, portArgs);
        const portVariables = [port._queryDense, port._keyDense, port._valueDense, port._outputDense].flatMap((d) => d.trainableWeights);
        portVariables.forEach((v, i) => v.write(tf.tensor(seededFloats(size(v.shape), 10 + i, i % 2 ? 0.3 : 1 / Math.sqrt(v.shape[0])), v.shape)));

        // Ours, called in the form under test: eagerly, or on symbolic inputs in a model.
        const layer = multiHeadAttention(args);
        const tensors = [query, ...(form.v ? [value] : []), ...(key ? [key] : []), ...(mask ? [mask] : [])];
        const callOn = ([q, ...rest]) => {
          const named = { value: form.v ? rest.shift() : q, ...(key ? { key: rest.shift() } : {}) };
          const m = mask ? rest.shift() : undefined;
          const options = { ...(m ? { attentionMask: m } : {}), ...(form.scores ? { returnAttentionScores: true } : {}) };
          if (form.list) return layer.apply([q, named.value, ...(named.key ? [named.key] : [])], options);
          return layer.apply(q, { ...named, ...options });
        };
        let run = callOn;
        if (mode === 'symbolic') {
          const inputs = tensors.map((t) => tf.input({ shape: t.shape.slice(1) }));
          const model = tf.model({ inputs, outputs: callOn(inputs) });
          run = (values) => model.apply(values);
        } else {
          callOn(tensors);  // builds it
        }
        assert.deepEqual(layer.getWeights().map((w) => w.shape), portVariables.map((v) => v.shape), 'weight shapes');
        layer.setWeights(portVariables.map((v) => v.read()));

        const asList = (r) => (Array.isArray(r) ? r : [r]);
        const callPort = () => (form.scores ? port.callAndReturnAttentionScores(query, portArgs) : [port.call(query, portArgs)]);
        const want = callPort(), got = asList(run(tensors));
        assert.equal(got.length, want.length);
        got.forEach((g, i) => {
          assert.deepEqual(g.shape, want[i].shape, i ? 'scores shape' : 'output shape');
          assertClose(g.dataSync(), want[i].dataSync(), i ? 'scores' : 'output', OUTPUT);
        });

        const G = tf.tensor(seededFloats(size(want[0].shape), 4), want[0].shape);
        const inputs = [query, ...(form.v ? [value] : []), ...(key ? [key] : [])];
        const gradients = (call, weights) => Object.values(tf.variableGrads(() => tf.sum(tf.mul(call()[0], G)), [...inputs, ...weights]).grads);
        const wantGrads = gradients(callPort, portVariables.map((w) => w.read()));
        const gotGrads = gradients(() => asList(run(tensors)), layer.trainableWeights.map((w) => w.read()));
        const names = [...inputs.map((_, i) => ['query', 'value', 'key'][i]), ...layer.trainableWeights.map((w) => w.originalName)];
        names.forEach((name, i) => {
          assert.deepEqual(gotGrads[i].shape, wantGrads[i].shape, `d ${name}: shape`);
          assertClose(gotGrads[i].dataSync(), wantGrads[i].dataSync(), `d ${name}`, GRADIENT);
        });
        layer.dispose();
      });
    }
  });
}
