#!/usr/bin/env node
// Writes, under tests/fixtures/keras-converted/<model>/, what `tensorflowjs_converter --input_format
// keras model.h5 out/` writes for Keras 2.15 models containing MultiHeadAttention (model.json and
// group1-shard1of1.bin), and expected.json: inputs and the outputs computed in float64 from Keras'
// formulas with the same (float32) weights. TensorFlow cannot be installed here, so the files are
// written from the sources that define them; each choice cites its line:
//
//   tfjs-converter (tensorflow/tfjs, tfjs-v4.22.0) python/tensorflowjs/converters/keras_h5_conversion.py:
//     h5_merged_saved_model_to_tfjs_format: modelTopology = { keras_version, backend (from the .h5's
//       attributes, _initialize_output_dictionary), model_config (the .h5's, verbatim but for
//       translate_class_names), training_config (only when the .h5 has one: a compiled model) };
//       weights: for each group of model_weights (h5py iterates them in name order), each name of
//       its weight_names attribute, ':0' removed (normalize_weight_name, _convert_h5_group).
//     write_artifacts: { format: 'layers-model', generatedBy: 'keras v' + keras_version,
//       convertedBy: 'TensorFlow.js Converter v4.22.0', modelTopology, weightsManifest }, json.dump
//       (Python's default separators ', ' and ': ').
//   tfjs-converter python/tensorflowjs/write_weights.py: one group, shards of at most 4 MiB named
//     group1-shard1of1.bin, entries { name, shape, dtype: 'float32' }, little-endian float32 data
//     concatenated in manifest order.
//   keras v2.15.0 keras/src/engine/functional.py get_network_config: model_config = { class_name:
//     'Functional', config: { name, trainable, layers: [{ class_name, config, name, inbound_nodes }],
//     input_layers, output_layers } }; keras/src/engine/node.py Node.serialize: a call layer(x, y,
//     key=z) becomes [[x's layer, node, tensor, { value: [y's layer, node, tensor], key: [...] }]]
//     (the first argument is the node's input; the others are kwargs holding references).
//   keras v2.15.0 keras/src/layers/attention/multi_head_attention.py get_config: base config (name,
//     trainable, dtype) then num_heads, key_dim, value_dim, dropout, use_bias, output_shape,
//     attention_axes (after build: (1,) for rank-3 inputs, from _build_attention), the
//     initializers/regularizers/constraints, query_shape, key_shape, value_shape; its weights
//     (EinsumDense sublayers query, key, value, attention_output, built in that order by
//     _build_from_signature) are named multi_head_attention/query/kernel:0 ... with kernels
//     [in, H, D], biases [H, D], output kernel [H, Dv, out] and bias [out].
//   keras v2.15.0 initializers.serialize: { module: 'keras.initializers', class_name, config,
//     registered_name: null }.
//
//   node tools/make_keras_converted_fixtures.mjs
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const OUT = new URL('../tests/fixtures/keras-converted/', import.meta.url).pathname;

// ---- seeded float32 numbers (the same LCG as tests/js/seeded.js) ----
function seeded(n, seed, scale) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}
const size = (shape) => shape.reduce((a, b) => a * b, 1);

// ---- Keras 2.15's serialized pieces ----
const initializer = (className, config = {}) => ({ module: 'keras.initializers', class_name: className, config, registered_name: null });
const GLOROT = initializer('GlorotUniform', { seed: null });
const ZEROS = initializer('Zeros');
const ref = (layer, node = 0, tensor = 0) => [layer, node, tensor];

const inputLayer = (name, shape, dtype = 'float32') => ({
  class_name: 'InputLayer', config: { batch_input_shape: [null, ...shape], dtype, sparse: false, ragged: false, name }, name, inbound_nodes: [],
});
const embedding = (name, inbound, inputDim, outputDim) => ({
  class_name: 'Embedding',
  config: { name, trainable: true, dtype: 'float32', input_dim: inputDim, output_dim: outputDim,
    embeddings_initializer: initializer('RandomUniform', { minval: -0.05, maxval: 0.05, seed: null }), embeddings_regularizer: null,
    activity_regularizer: null, embeddings_constraint: null, mask_zero: false, input_length: null },
  name, inbound_nodes: [[[...inbound, {}]]],
});
const conv1d = (name, inbound, filters, kernelSize) => ({
  class_name: 'Conv1D',
  config: { name, trainable: true, dtype: 'float32', filters, kernel_size: [kernelSize], strides: [1], padding: 'same',
    data_format: 'channels_last', dilation_rate: [1], groups: 1, activation: 'linear', use_bias: true,
    kernel_initializer: GLOROT, bias_initializer: ZEROS, kernel_regularizer: null, bias_regularizer: null,
    activity_regularizer: null, kernel_constraint: null, bias_constraint: null },
  name, inbound_nodes: [[[...inbound, {}]]],
});
const dense = (name, inbound, units, activation = 'linear') => ({
  class_name: 'Dense',
  config: { name, trainable: true, dtype: 'float32', units, activation, use_bias: true, kernel_initializer: GLOROT,
    bias_initializer: ZEROS, kernel_regularizer: null, bias_regularizer: null, activity_regularizer: null,
    kernel_constraint: null, bias_constraint: null },
  name, inbound_nodes: [[[...inbound, {}]]],
});
const flatten = (name, inbound) => ({
  class_name: 'Flatten', config: { name, trainable: true, dtype: 'float32', data_format: 'channels_last' }, name, inbound_nodes: [[[...inbound, {}]]],
});
/** MultiHeadAttention called as layer(query, value, key=..., attention_mask=..., use_causal_mask=...). */
const multiHeadAttention = (name, { numHeads, keyDim, valueDim = keyDim, outputShape = null, queryShape, valueShape, keyShape = valueShape }, query, kwargs) => ({
  class_name: 'MultiHeadAttention',
  config: { name, trainable: true, dtype: 'float32', num_heads: numHeads, key_dim: keyDim, value_dim: valueDim, dropout: 0.0,
    use_bias: true, output_shape: outputShape, attention_axes: [1], kernel_initializer: GLOROT, bias_initializer: ZEROS,
    kernel_regularizer: null, bias_regularizer: null, activity_regularizer: null, kernel_constraint: null, bias_constraint: null,
    query_shape: queryShape, key_shape: keyShape, value_shape: valueShape },
  name, inbound_nodes: [[[...query, kwargs]]],
});
const MHA_WEIGHTS = ['query/kernel', 'query/bias', 'key/kernel', 'key/bias', 'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias'];

// keras v2.15.0 keras/src/saving/legacy/saving_utils.py model_metadata: training_config of
// model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy']). tfjs-layers
// reads a trainingConfig only at model.json's top level (tfjs-core io_utils getModelArtifactsForJSON),
// so the one the converter nests in modelTopology is ignored: the model loads uncompiled.
const TRAINING_CONFIG = {
  loss: 'binary_crossentropy',
  metrics: [[{ class_name: 'MeanMetricWrapper', config: { name: 'accuracy', dtype: 'float32', fn: 'binary_accuracy' } }]],
  weighted_metrics: null, loss_weights: null,
  optimizer_config: { class_name: 'Custom>Adam', config: { name: 'Adam', weight_decay: null, clipnorm: null, global_clipnorm: null,
    clipvalue: null, use_ema: false, ema_momentum: 0.99, ema_overwrite_frequency: null, jit_compile: false, is_legacy_optimizer: false,
    learning_rate: 0.0010000000474974513, beta_1: 0.9, beta_2: 0.999, epsilon: 1e-07, amsgrad: false } },
};

// ---- float64 forward passes, Keras' formulas ----
// Embedding: rows of the table; Conv1D 'same': TF's SAME padding puts floor((k-1)/2) zeros before.
function embed(ids, [B, T], table, E) {
  return Float64Array.from({ length: B * T * E }, (_, i) => table[ids[Math.floor(i / E)] * E + (i % E)]);
}
function conv1dSame(x, [B, T, C], kernel, bias, k, F) {
  const before = Math.floor((k - 1) / 2), out = new Float64Array(B * T * F);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let f = 0; f < F; f++) {
    let s = bias[f];
    for (let j = 0; j < k; j++) {
      const u = t + j - before;
      if (u < 0 || u >= T) continue;
      for (let c = 0; c < C; c++) s += x[(b * T + u) * C + c] * kernel[(j * C + c) * F + f];
    }
    out[(b * T + t) * F + f] = s;
  }
  return out;
}
function denseLayer(x, rows, inF, kernel, bias, units, activation) {
  const out = new Float64Array(rows * units);
  for (let r = 0; r < rows; r++) for (let u = 0; u < units; u++) {
    let s = bias[u];
    for (let c = 0; c < inF; c++) s += x[r * inF + c] * kernel[c * units + u];
    out[r * units + u] = activation === 'sigmoid' ? 1 / (1 + Math.exp(-s)) : s;
  }
  return out;
}
// keras multi_head_attention.py call/_compute_attention for rank-3 inputs: projections
// einsum('abc,cde->abde') + bias; query * 1/sqrt(key_dim); scores einsum('aecd,abcd->acbe', key, query);
// Softmax with mask adds (1 - mask) * -1e9 (keras layers/activation/softmax.py); context
// einsum('acbe,aecd->abcd'); output einsum('abcd,cde->abe') + bias. The causal mask is lower-triangular
// and combined with the attention mask by logical and (_compute_causal_mask, _compute_attention_mask).
function attention(w, { H, Dk, Dv, out }, q, [B, T, Eq], v, [, S, Ev], k, Ek, { mask = null, causal = false } = {}) {
  const project = (x, rows, inF, kernel, bias, D) => {
    const y = new Float64Array(rows * H * D);
    for (let r = 0; r < rows; r++) for (let h = 0; h < H; h++) for (let d = 0; d < D; d++) {
      let s = bias[h * D + d];
      for (let c = 0; c < inF; c++) s += x[r * inF + c] * kernel[(c * H + h) * D + d];
      y[(r * H + h) * D + d] = s;
    }
    return y;
  };
  const Q = project(q, B * T, Eq, w['query/kernel'], w['query/bias'], Dk).map((x) => x / Math.sqrt(Dk));
  const K = project(k, B * S, Ek, w['key/kernel'], w['key/bias'], Dk);
  const V = project(v, B * S, Ev, w['value/kernel'], w['value/bias'], Dv);
  const context = new Float64Array(B * T * H * Dv);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let t = 0; t < T; t++) {
    const scores = new Float64Array(S);
    for (let s = 0; s < S; s++) {
      let dot = 0;
      for (let d = 0; d < Dk; d++) dot += Q[((b * T + t) * H + h) * Dk + d] * K[((b * S + s) * H + h) * Dk + d];
      const open = (mask ? mask[(b * T + t) * S + s] !== 0 : true) && (!causal || s <= t);
      scores[s] = dot + (open ? 0 : -1e9);
    }
    const max = Math.max(...scores);
    const e = scores.map((x) => Math.exp(x - max)), sum = e.reduce((a, c) => a + c, 0);
    for (let d = 0; d < Dv; d++) {
      let c = 0;
      for (let s = 0; s < S; s++) c += (e[s] / sum) * V[((b * S + s) * H + h) * Dv + d];
      context[((b * T + t) * H + h) * Dv + d] = c;
    }
  }
  return denseLayer(context, B * T, H * Dv, w['attention_output/kernel'], w['attention_output/bias'], out, 'linear');
}

// ---- the models ----
/** Each weight: [name, shape, seed, scale]; returns name -> Float32Array, in manifest order. */
function makeWeights(specs) {
  return specs.map(([name, shape, seed, scale]) => ({ name, shape, data: seeded(size(shape), seed, scale) }));
}
const mhaSpecs = (layer, { H, Dk, Dv, Eq, Ek, Ev, out }, seed) => MHA_WEIGHTS.map((n, i) => [`${layer}/${n}`,
  { 'query/kernel': [Eq, H, Dk], 'query/bias': [H, Dk], 'key/kernel': [Ek, H, Dk], 'key/bias': [H, Dk], 'value/kernel': [Ev, H, Dv],
    'value/bias': [H, Dv], 'attention_output/kernel': [H, Dv, out], 'attention_output/bias': [out] }[n],
  seed + i, n.endsWith('bias') ? 0.1 : 1 / Math.sqrt(n.startsWith('attention_output') ? H * Dv : { q: Eq, k: Ek, v: Ev }[n[0]])]);
const byLayer = (weights, layer) => Object.fromEntries(weights.filter((w) => w.name.startsWith(`${layer}/`)).map((w) => [w.name.slice(layer.length + 1), w.data]));

/** The tutorial's classifier: Input(T) -> Embedding -> Conv1D('same') -> MHA(x, x) -> Flatten -> Dense(1, sigmoid). */
function classifier({ vocab, T, E, F, k, H, Dk }, { compiled, B, seed }) {
  const attentionShape = [null, T, F];
  const layers = [
    inputLayer('input_1', [T]),
    embedding('embedding', ref('input_1'), vocab, E),
    conv1d('conv1d', ref('embedding'), F, k),
    multiHeadAttention('multi_head_attention', { numHeads: H, keyDim: Dk, queryShape: attentionShape, valueShape: attentionShape },
      ref('conv1d'), { value: ref('conv1d') }),
    flatten('flatten', ref('multi_head_attention')),
    dense('dense', ref('flatten'), 1, 'sigmoid'),
  ];
  layers[5].config.activation = 'sigmoid';
  // h5py lists model_weights' groups in name order: conv1d, dense, embedding, (flatten, input_1: none), multi_head_attention.
  const weights = makeWeights([
    ['conv1d/kernel', [k, E, F], seed, 1 / Math.sqrt(k * E)], ['conv1d/bias', [F], seed + 1, 0.1],
    ['dense/kernel', [T * F, 1], seed + 2, 1 / Math.sqrt(T * F)], ['dense/bias', [1], seed + 3, 0.1],
    ['embedding/embeddings', [vocab, E], seed + 4, 0.5],
    ...mhaSpecs('multi_head_attention', { H, Dk, Dv: Dk, Eq: F, Ek: F, Ev: F, out: F }, seed + 5),
  ]);
  const ids = Array.from({ length: B * T }, (_, i) => (i * 7919 + seed) % vocab);
  const w = (layer) => byLayer(weights, layer);
  const x0 = embed(ids, [B, T], w('embedding').embeddings, E);
  const x1 = conv1dSame(x0, [B, T, E], w('conv1d').kernel, w('conv1d').bias, k, F);
  const x2 = attention(w('multi_head_attention'), { H, Dk, Dv: Dk, out: F }, x1, [B, T, F], x1, [B, T, F], x1, F);
  const y = denseLayer(x2, B, T * F, w('dense').kernel, w('dense').bias, 1, 'sigmoid');
  return {
    config: { name: 'model', trainable: true, layers, input_layers: [ref('input_1')], output_layers: [ref('dense')] },
    training: compiled ? TRAINING_CONFIG : null, weights,
    expected: { inputs: [{ shape: [B, T], dtype: 'float32', data: ids }], output: { shape: [B, 1], data: Array.from(y) } },
  };
}

/**
 * Cross-attention whose value and key are upstream of the query (tfjs can wire those): x -> Dense
 * 'key_source' -> Dense 'query_source'; mha(query_source, x, key=key_source, use_causal_mask=True),
 * with value_dim and output_shape. Names with underscores: tfjs camelCases them inside the kwargs.
 */
function crossAttention({ B, seed }) {
  const [T, Ex, Ek, Eq, H, Dk, Dv, out] = [5, 6, 7, 8, 2, 3, 4, 5];
  const layers = [
    inputLayer('input_1', [T, Ex]),
    dense('key_source', ref('input_1'), Ek),
    dense('query_source', ref('key_source'), Eq),
    multiHeadAttention('cross_attention', { numHeads: H, keyDim: Dk, valueDim: Dv, outputShape: out,
      queryShape: [null, T, Eq], valueShape: [null, T, Ex], keyShape: [null, T, Ek] },
    ref('query_source'), { value: ref('input_1'), key: ref('key_source'), use_causal_mask: true }),
  ];
  const weights = makeWeights([
    ...mhaSpecs('cross_attention', { H, Dk, Dv, Eq, Ek, Ev: Ex, out }, seed),
    ['key_source/kernel', [Ex, Ek], seed + 10, 0.4], ['key_source/bias', [Ek], seed + 11, 0.1],
    ['query_source/kernel', [Ek, Eq], seed + 12, 0.4], ['query_source/bias', [Eq], seed + 13, 0.1],
  ]);
  const x = seeded(B * T * Ex, seed + 20, 1);
  const w = (layer) => byLayer(weights, layer);
  const kx = denseLayer(x, B * T, Ex, w('key_source').kernel, w('key_source').bias, Ek, 'linear');
  const qx = denseLayer(kx, B * T, Ek, w('query_source').kernel, w('query_source').bias, Eq, 'linear');
  const y = attention(w('cross_attention'), { H, Dk, Dv, out }, qx, [B, T, Eq], x, [B, T, Ex], kx, Ek, { causal: true });
  return {
    config: { name: 'model_1', trainable: true, layers, input_layers: [ref('input_1')], output_layers: [ref('cross_attention')] },
    training: null, weights,
    expected: { inputs: [{ shape: [B, T, Ex], dtype: 'float32', data: Array.from(x) }], output: { shape: [B, T, out], data: Array.from(y) } },
  };
}

/** Self-attention with a padding mask from a second model input: tfjs cannot wire it (the loader's Error). */
function maskInput({ seed }) {
  const [T, E] = [4, 6];
  const layers = [
    inputLayer('input_1', [T, E]), inputLayer('input_2', [T, T]),
    multiHeadAttention('multi_head_attention', { numHeads: 2, keyDim: 3, queryShape: [null, T, E], valueShape: [null, T, E] },
      ref('input_1'), { value: ref('input_1'), attention_mask: ref('input_2') }),
  ];
  return {
    config: { name: 'model_2', trainable: true, layers, input_layers: [ref('input_1'), ref('input_2')], output_layers: [ref('multi_head_attention')] },
    training: null, weights: makeWeights(mhaSpecs('multi_head_attention', { H: 2, Dk: 3, Dv: 3, Eq: E, Ek: E, Ev: E, out: E }, seed)), expected: null,
  };
}

function write(name, { config, training, weights, expected }) {
  const dir = join(OUT, name);
  mkdirSync(dir, { recursive: true });
  const modelTopology = { keras_version: '2.15.0', backend: 'tensorflow', model_config: { class_name: 'Functional', config } };
  if (training) modelTopology.training_config = training;
  const modelJson = {
    format: 'layers-model', generatedBy: 'keras v2.15.0', convertedBy: 'TensorFlow.js Converter v4.22.0', modelTopology,
    weightsManifest: [{ paths: ['group1-shard1of1.bin'], weights: weights.map(({ name, shape }) => ({ name, shape, dtype: 'float32' })) }],
  };
  // Python's json.dump separators: ', ' and ': '.
  const text = JSON.stringify(modelJson).replace(/("(?:[^"\\]|\\.)*")|([,:])/g, (m, string, sep) => string ?? `${sep} `);
  writeFileSync(join(dir, 'model.json'), text);
  const bytes = Buffer.concat(weights.map((w) => Buffer.from(w.data.buffer, w.data.byteOffset, w.data.byteLength)));
  writeFileSync(join(dir, 'group1-shard1of1.bin'), bytes);
  if (expected) writeFileSync(join(dir, 'expected.json'), `${JSON.stringify(expected)}\n`);
  console.log(`${dir}: ${weights.length} weights, ${bytes.length} bytes`);
}

const TUTORIAL = { vocab: 3001, T: 32, E: 32, F: 100, k: 4, H: 4, Dk: 128 };
write('tutorial-compiled', classifier(TUTORIAL, { compiled: true, B: 3, seed: 100 }));
write('classifier-small', classifier({ vocab: 50, T: 6, E: 8, F: 12, k: 4, H: 2, Dk: 4 }, { compiled: false, B: 4, seed: 200 }));
write('cross-attention', crossAttention({ B: 2, seed: 300 }));
write('mask-input', maskInput({ seed: 400 }));
