// The Keras tutorial's sentiment classifier written with tfjs-layers: Embedding(3001, 32, l2(0.001)
// on the embeddings) -> Conv1D(100, 4, 'same') -> MultiHeadAttention(num_heads=4, key_dim=128)
// (self-attention) -> Flatten -> Dense(1, sigmoid); Adam, binary cross-entropy, accuracy.
// The attention layer is passed in (mha-wasm's, or any layer applied as attention.apply(x, { value: x })).
export const TUTORIAL = Object.freeze({ vocabSize: 3001, maxLen: 32, embed: 32, filters: 100, kernelSize: 4, numHeads: 4, keyDim: 128 });

/** A compiled tf.LayersModel; `attention` is a layer instance for the MultiHeadAttention slot. */
export function buildSentimentModel(tf, attention, { learningRate = 0.001 } = {}) {
  const { vocabSize, maxLen, embed, filters, kernelSize } = TUTORIAL;
  const input = tf.input({ shape: [maxLen], dtype: 'int32', name: 'tokens' });
  let x = tf.layers.embedding({
    inputDim: vocabSize, outputDim: embed, name: 'embedding',
    embeddingsRegularizer: tf.regularizers.l2({ l2: 0.001 }),
  }).apply(input);
  x = tf.layers.conv1d({ filters, kernelSize, padding: 'same', name: 'conv1d' }).apply(x);
  x = attention.apply(x, { value: x });
  x = tf.layers.flatten({ name: 'flatten' }).apply(x);
  const output = tf.layers.dense({ units: 1, activation: 'sigmoid', name: 'dense' }).apply(x);
  const model = tf.model({ inputs: input, outputs: output, name: 'sentiment' });
  model.compile({ optimizer: tf.train.adam(learningRate), loss: 'binaryCrossentropy', metrics: ['accuracy'] });
  return model;
}
