// The Keras tutorial's sentiment classifier written with tfjs-layers: Embedding(3001, 32, l2(0.001)
// on the embeddings) -> Conv1D(100, 4, 'same') -> MultiHeadAttention(num_heads=4, key_dim=128)
// (self-attention) -> Flatten -> Dense(1, sigmoid); Adam, binary cross-entropy, accuracy.
// The attention layer is passed in (mha-wasm's, or any layer applied as attention.apply(x, { value: x })).
export const TUTORIAL = Object.freeze({ vocabSize: 3001, maxLen: 32, embed: 32, filters: 100, kernelSize: 4, numHeads: 4, keyDim: 128 });

/**
 * Glorot-uniform of each attention kernel taken as the Dense of its flattened matrix ([in, H*D] and
 * [H*D, out]), biases zero: the initialisation tools/train_sentiment.py gives the demo's model.
 * Keras' own glorotUniform on a 3-D EinsumDense kernel counts fans as a convolution's (query kernel
 * [100, 4, 128]: fans 400 and 12800, limit 0.021 instead of 0.099): the queries and keys then start
 * so small that their gradients (~1e-11 per element) sit far below Adam's epsilon (1e-7), attention
 * stays uniform, and the model is a bag of words, which stays at chance on this corpus (measured:
 * loss 0.693 after 6 epochs).
 */
export function initializeAttentionLikeDense(tf, attention, { seed } = {}) {
  attention.setWeights(attention.getWeights().map((w, i) => {
    if (w.shape.length === 1 || (w.shape.length === 2 && i % 2 === 1)) return tf.zerosLike(w);
    const [fanIn, fanOut] = w.shape[0] === attention.numHeads ? [w.shape[0] * w.shape[1], w.shape[2]] : [w.shape[0], w.shape[1] * w.shape[2]];
    const limit = Math.sqrt(6 / (fanIn + fanOut));
    return tf.randomUniform(w.shape, -limit, limit, 'float32', seed === undefined ? undefined : seed + 100 + i);
  }));
}

/**
 * A compiled tf.LayersModel; `attention` is a layer instance for the MultiHeadAttention slot.
 * `seed`: the layers' initializers seeded (Keras' defaults: RandomUniform(-0.05, 0.05) embeddings,
 * glorotUniform kernels), so two builds start from the same weights; without it tfjs draws them.
 */
export function buildSentimentModel(tf, attention, { learningRate = 0.001, seed } = {}) {
  const { vocabSize, maxLen, embed, filters, kernelSize } = TUTORIAL;
  const seeded = (offset) => (seed === undefined ? {} : { seed: seed + offset });
  const input = tf.input({ shape: [maxLen], dtype: 'int32', name: 'tokens' });
  let x = tf.layers.embedding({
    inputDim: vocabSize, outputDim: embed, name: 'embedding',
    embeddingsRegularizer: tf.regularizers.l2({ l2: 0.001 }),
    ...(seed === undefined ? {} : { embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.05, maxval: 0.05, ...seeded(1) }) }),
  }).apply(input);
  x = tf.layers.conv1d({
    filters, kernelSize, padding: 'same', name: 'conv1d',
    ...(seed === undefined ? {} : { kernelInitializer: tf.initializers.glorotUniform(seeded(2)) }),
  }).apply(x);
  x = attention.apply(x, { value: x });
  x = tf.layers.flatten({ name: 'flatten' }).apply(x);
  const output = tf.layers.dense({
    units: 1, activation: 'sigmoid', name: 'dense',
    ...(seed === undefined ? {} : { kernelInitializer: tf.initializers.glorotUniform(seeded(3)) }),
  }).apply(x);
  const model = tf.model({ inputs: input, outputs: output, name: 'sentiment' });
  model.compile({ optimizer: tf.train.adam(learningRate), loss: 'binaryCrossentropy', metrics: ['accuracy'] });
  return model;
}
