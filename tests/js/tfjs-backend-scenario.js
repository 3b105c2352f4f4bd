// One run of mha-wasm/tfjs's layer on whichever tfjs backend is current, shared by the Node test
// (cpu, wasm: tests/js/tfjs-backends.test.js) and the Chromium test (webgl, webgpu:
// tests/browser/tfjs-backends.test.js, which sends this function's source to the page, so it uses
// nothing but its arguments). Returns plain arrays for the caller to compare across backends:
//   layer: the output and the gradients of loss = sum(output * G) for query, value, key and every
//     weight, for cross-attention with a key and a [B, T, S] mask;
//   fit: the loss per epoch of model.fit on a small classifier (Embedding, Conv1D, the layer,
//     Flatten, Dense), from the same seeded weights and data, without shuffling.
export async function backendScenario(tf, { multiHeadAttention }) {
  const seeded = (n, seed, scale = 0.5) => {
    let s = seed >>> 0;
    return Float32Array.from({ length: n }, () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return (s / 2 ** 32 - 0.5) * 2 * scale;
    });
  };
  const size = (shape) => shape.reduce((a, b) => a * b, 1);
  const t = (shape, seed, scale) => tf.tensor(seeded(size(shape), seed, scale), shape);

  // The layer alone: forward and every gradient.
  const query = tf.variable(t([2, 5, 6], 1)), value = tf.variable(t([2, 4, 7], 2)), key = tf.variable(t([2, 4, 3], 3));
  const mask = tf.tensor(Array.from({ length: 40 }, (_, i) => (i % 4 === 0 || (i * 7919) % 5 !== 0 ? 1 : 0)), [2, 5, 4]);
  const G = t([2, 5, 6], 4);
  const layer = multiHeadAttention({ numHeads: 2, keyDim: 3 });
  layer.apply(query, { value, key, attentionMask: mask });
  layer.setWeights(layer.getWeights().map((w, i) => t(w.shape, 10 + i, 0.4)));
  const output = Array.from(await layer.apply(query, { value, key, attentionMask: mask }).data());
  const { grads } = tf.variableGrads(() => tf.sum(tf.mul(layer.apply(query, { value, key, attentionMask: mask }), G)),
    [query, value, key, ...layer.trainableWeights.map((w) => w.read())]);
  const gradients = await Promise.all(Object.values(grads).map(async (g) => Array.from(await g.data())));
  layer.dispose();

  // model.fit of a small classifier.
  const tokens = tf.input({ shape: [6], dtype: 'int32' });
  let x = tf.layers.embedding({ inputDim: 20, outputDim: 8 }).apply(tokens);
  x = tf.layers.conv1d({ filters: 12, kernelSize: 3, padding: 'same' }).apply(x);
  x = multiHeadAttention({ numHeads: 2, keyDim: 4 }).apply(x, { value: x });
  x = tf.layers.flatten().apply(x);
  const model = tf.model({ inputs: tokens, outputs: tf.layers.dense({ units: 1, activation: 'sigmoid' }).apply(x) });
  model.setWeights(model.getWeights().map((w, i) => t(w.shape, 30 + i, 0.3)));
  model.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy' });
  const ids = tf.tensor2d(Int32Array.from({ length: 32 * 6 }, (_, i) => (i * 7 + Math.floor(i / 6)) % 20), [32, 6], 'int32');
  const labels = tf.tensor2d(Float32Array.from({ length: 32 }, (_, i) => (i % 3 === 0 ? 1 : 0)), [32, 1]);
  const history = await model.fit(ids, labels, { epochs: 3, batchSize: 8, shuffle: false, verbose: 0 });
  model.dispose();
  return { backend: tf.getBackend(), output, gradients, losses: history.history.loss };
}

/** Asserts a backend's scenario result equals the cpu backend's (float32 on both; tfjs' own ops differ in summation order). */
export function compareScenarios(got, want, assert, { absolute = 1e-5, relative = 1e-4, loss = 1e-4 } = {}) {
  const close = (a, b, what) => {
    assert.equal(a.length, b.length, `${got.backend} ${what}: length`);
    a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= absolute + relative * Math.abs(b[i]), `${got.backend} ${what}[${i}]: ${x} vs cpu ${b[i]}`));
  };
  close(got.output, want.output, 'output');
  assert.equal(got.gradients.length, 11);
  got.gradients.forEach((g, i) => close(g, want.gradients[i], `gradient ${i}`));
  got.losses.forEach((l, i) => assert.ok(Math.abs(l - want.losses[i]) <= loss * Math.abs(want.losses[i]), `${got.backend} loss of epoch ${i + 1}: ${l} vs cpu ${want.losses[i]}`));
  assert.ok(got.losses[2] < got.losses[0], `${got.backend}: the loss falls (${got.losses})`);
}
