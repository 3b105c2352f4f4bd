// What one tfjs backend costs mha-wasm/tfjs, measured on the current backend: used in Node (cpu,
// wasm) and, its source sent to the page, in Chromium (webgl, webgpu) by bench/tfjs/backends.mjs,
// so it uses nothing but its arguments. Wall times in ms (medians of `rounds`, after a warm-up):
//   forward_ms, forward_backward_ms: the tutorial's attention layer alone (64 x 32 x 100, 4 heads x
//     128; backward: engine.gradients of its weights for a given dOut, what model.fit runs), its
//     input made on the backend by an add (included);
//   readback_ms: reading one 64 x 32 x 100 float32 tensor already computed on the backend
//     (dataSync: what the layer does with its inputs, once per call, and with its weights after each update);
//   upload_ms: a new 64 x 32 x 100 tensor from a Float32Array, consumed by a sum on the backend
//     (what the layer's output costs the next layer), less the same sum of a tensor already there;
//   epoch_s: one model.fit epoch of the tutorial's model (the second: the first compiles shaders).
export async function measureBackend(tf, api, tutorial, { rounds = 5, samples = 640 } = {}) {
  const { buildSentimentModel, initializeAttentionLikeDense, fitTokenizer, TUTORIAL, corpus } = tutorial;
  const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  const time = async (fn) => {
    await fn();  // warm-up
    const times = [];
    for (let r = 0; r < rounds; r++) {
      const started = performance.now();
      await fn();
      times.push(performance.now() - started);
    }
    return Number(median(times).toFixed(2));
  };
  const [B, T, E] = [64, 32, 100];
  const x = tf.randomNormal([B, T, E]), G = tf.randomNormal([B, T, E]);
  const layer = api.multiHeadAttention({ numHeads: 4, keyDim: 128 });
  layer.apply(x, { value: x }).dispose();
  const weights = layer.trainableWeights.map((w) => w.read());
  const result = { backend: tf.getBackend() };
  // Each call gets a fresh input computed on the backend (as a layer's output would be), so a GPU
  // backend reads it back every time (a tensor read once keeps its values on the CPU).
  result.forward_ms = await time(async () => {
    const input = tf.add(x, 0);
    const y = layer.apply(input, { value: input });
    await y.data();
    tf.dispose([input, y]);
  });
  result.forward_backward_ms = await time(async () => {
    const input = tf.add(x, 0), dOut = tf.add(G, 0);
    const { value, grads } = tf.engine().gradients(() => layer.apply(input, { value: input }), weights, dOut);
    await Promise.all(grads.map((g) => g.data()));
    tf.dispose([input, dOut, value, ...grads]);
  });
  const onDevice = tf.add(x, 1);
  await tf.sum(onDevice).data();  // computed before anything is timed
  result.readback_ms = await time(async () => {
    const y = tf.add(onDevice, 0);
    await tf.sum(y).data();          // y computed on the backend
    const started = performance.now();
    y.dataSync();
    result.readbackOnly = (result.readbackOnly ?? []).concat(performance.now() - started);
    y.dispose();
  });
  result.readback_ms = Number(median(result.readbackOnly.slice(1)).toFixed(2));
  delete result.readbackOnly;
  const host = x.dataSync().slice();
  const sumOf = async (t) => { const s = tf.sum(t); await s.data(); s.dispose(); };
  const there = await time(() => sumOf(onDevice));
  const fresh = await time(async () => { const t = tf.tensor(host, [B, T, E]); await sumOf(t); t.dispose(); });
  result.upload_ms = Number(Math.max(0, fresh - there).toFixed(2));
  layer.dispose();
  tf.dispose([x, G, onDevice]);

  // One epoch of the tutorial's model.
  const texts = corpus.train.texts.slice(0, samples), labels = corpus.train.labels.slice(0, samples);
  const tokenizer = fitTokenizer(texts, { numWords: 1000 });
  const xs = tf.tensor2d(tokenizer.encodeAll(texts, TUTORIAL.maxLen), [texts.length, TUTORIAL.maxLen], 'int32');
  const ys = tf.tensor2d(labels, [labels.length, 1]);
  const attention = api.multiHeadAttention({ numHeads: TUTORIAL.numHeads, keyDim: TUTORIAL.keyDim });
  const model = buildSentimentModel(tf, attention, { learningRate: 0.01 });
  initializeAttentionLikeDense(tf, attention);
  const seconds = [];
  await model.fit(xs, ys, {
    epochs: 2, batchSize: 64, validationSplit: 0.2, shuffle: false, verbose: 0,
    callbacks: {
      onEpochBegin: async () => { seconds.push(performance.now()); },
      onEpochEnd: async (epoch) => { seconds[epoch] = (performance.now() - seconds[epoch]) / 1000; },
    },
  });
  result.samples = samples;
  result.steps_per_epoch = Math.ceil(samples * 0.8 / 64);
  result.epoch_s = Number(seconds[1].toFixed(2));
  result.first_epoch_s = Number(seconds[0].toFixed(2));
  model.dispose();
  tf.dispose([xs, ys]);
  return result;
}
