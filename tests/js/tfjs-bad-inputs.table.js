// The bad-input table of mha-wasm/tfjs: every row is one wrong call, the error class it throws and
// the exact message. tests/js/tfjs-bad-inputs.test.js runs each row (tfjs cpu backend); rendered
// into docs/bad-inputs.md with the core's table (node tests/js/bad-inputs.render.js).
//
// Each `call(t)` gets t.tf (the tfjs namespace), t.layer(args) (the factory), t.x (a [2, 3, 4]
// tensor), t.mhaTfjs, t.registerFastGradients, t.checkTrainingSettings (the page's training settings)
// and t.withoutTfjsKernel(name, fn) (runs fn with the fast kernels registered on cpu and tfjs' own
// `name` kernel unregistered). This file loads nothing itself, so the renderer can import it.
export const TFJS_ROWS = [
  // ---- constructing the layer ----
  { input: 'args is a number', call: (t) => t.layer(4), error: TypeError, message: 'MultiHeadAttention: args must be an object, got number' },
  { input: 'numHeads missing', call: (t) => t.layer({ keyDim: 2 }), error: RangeError, message: 'MultiHeadAttention: numHeads must be a positive integer, got undefined' },
  { input: 'keyDim 0', call: (t) => t.layer({ numHeads: 2, keyDim: 0 }), error: RangeError, message: 'MultiHeadAttention: keyDim must be a positive integer, got 0' },
  { input: 'valueDim not an integer', call: (t) => t.layer({ numHeads: 2, keyDim: 2, valueDim: 1.5 }), error: RangeError, message: 'MultiHeadAttention: valueDim must be a positive integer, got 1.5' },
  { input: 'outputShape negative', call: (t) => t.layer({ numHeads: 2, keyDim: 2, outputShape: -3 }), error: RangeError, message: 'MultiHeadAttention: outputShape must be a positive integer, got -3' },
  { input: 'dropout 1', call: (t) => t.layer({ numHeads: 2, keyDim: 2, dropout: 1 }), error: RangeError, message: 'MultiHeadAttention: dropout must be a number in [0, 1), got 1' },
  { input: 'useBias a string', call: (t) => t.layer({ numHeads: 2, keyDim: 2, useBias: 'yes' }), error: TypeError, message: 'MultiHeadAttention: useBias must be a boolean, got string' },
  { input: 'attentionAxes a string', call: (t) => t.layer({ numHeads: 2, keyDim: 2, attentionAxes: 'rows' }), error: TypeError, message: 'MultiHeadAttention: attentionAxes must be an integer or a non-empty list of integers, got "rows"' },
  { input: 'unknown initializer', call: (t) => t.layer({ numHeads: 2, keyDim: 2, kernelInitializer: 'fancy' }), error: TypeError, message: 'MultiHeadAttention: unknown initializer "fancy"' },
  // ---- calling it ----
  { input: 'apply without value', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.x), error: TypeError, message: 'MultiHeadAttention.apply: value is required: apply(query, { value }) (self-attention: { value: query })' },
  { input: 'unknown call argument', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.x, { value: t.x, causal: true }), error: TypeError, message: "MultiHeadAttention.apply: unknown argument 'causal'; known: value, key, attentionMask, useCausalMask, returnAttentionScores, training" },
  { input: 'value not a tensor', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.x, { value: [1, 2] }), error: TypeError, message: 'MultiHeadAttention.apply: expected tensors for query, value, got 2 inputs' },
  { input: 'value in the list and as an argument', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply([t.x, t.x], { value: t.x }), error: TypeError, message: 'MultiHeadAttention.apply: give value/key either in the input list or as arguments, not both' },
  { input: 'symbolic query with a concrete value', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.tf.input({ shape: [3, 4] }), { value: t.x }), error: TypeError, message: 'MultiHeadAttention.apply: query, value, key and attentionMask must be all symbolic (tf.input) or all tensors' },
  { input: 'query of rank 2', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.tf.zeros([3, 4]), { value: t.tf.zeros([3, 4]) }), error: RangeError, message: 'MultiHeadAttention.call: query must have rank >= 3 ([batch, ..., features]), got shape [3,4]' },
  { input: 'value of another rank', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.x, { value: t.tf.zeros([2, 3, 1, 4]) }), error: RangeError, message: 'MultiHeadAttention.call: value must have the query\'s rank 3, got shape [2,3,1,4]' },
  { input: 'attentionMask of the wrong shape', call: (t) => t.layer({ numHeads: 2, keyDim: 2 }).apply(t.x, { value: t.x, attentionMask: t.tf.ones([2, 3]).reshape([3, 2]) }), error: RangeError, message: 'MultiHeadAttention.call: attentionMask must have shape [B, T, S] = [2, 3, 3] (or [T, S], or [B, S]), got [3,2]' },
  { input: 'attentionAxes naming the batch axis', call: (t) => t.layer({ numHeads: 2, keyDim: 2, attentionAxes: [0] }).apply(t.x, { value: t.x }), error: RangeError, message: 'MultiHeadAttention.apply: attentionAxes [0] must name axes between 1 and 1 (not the batch or features) of a rank-3 input' },
  { input: 'useCausalMask with attentionAxes over part of the axes', call: (t) => { const g = t.tf.zeros([1, 2, 3, 4]); return t.layer({ numHeads: 1, keyDim: 2, attentionAxes: [2] }).apply(g, { value: g, useCausalMask: true }); }, error: Error, message: 'MultiHeadAttention.call: attentionMask and useCausalMask are not supported together with attentionAxes other than all inner axes' },
  { input: 'one layer applied in a model in two forms', call: (t) => { const a = t.tf.input({ shape: [3, 4] }); const l = t.layer({ numHeads: 1, keyDim: 2 }); l.apply(a, { value: a }); return l.apply(a, { value: a, useCausalMask: true }); }, error: Error, message: 'MultiHeadAttention.apply: this layer was already applied in a model as {"roles":["query","value"],"useCausalMask":false,"returnAttentionScores":false}; tfjs-layers runs a model without per-call arguments, so one layer takes one form: create another layer (or share weights with setWeights)' },
  // ---- the entry point and the kernels ----
  { input: 'mhaTfjs given something that is not tfjs', call: (t) => t.mhaTfjs({ layers: {} }), error: TypeError, message: "mhaTfjs: tf must be the @tensorflow/tfjs namespace (import * as tf from '@tensorflow/tfjs'), got object" },
  { input: 'registerFastGradients without tf', call: (t) => t.registerFastGradients(undefined), error: TypeError, message: "registerFastGradients: pass the @tensorflow/tfjs namespace (import * as tf from '@tensorflow/tfjs')" },
  { input: 'registerFastGradients backends not an array', call: (t) => t.registerFastGradients(t.tf, { backends: 'wasm' }), error: TypeError, message: 'registerFastGradients: backends must be an array of backend names, got "wasm"' },
  { input: 'fast Conv2D given a case other than Conv1D\'s, with no tfjs kernel to hand it to', call: (t) => t.withoutTfjsKernel('Conv2D', () => t.tf.conv2d(t.tf.zeros([1, 1, 8, 2]), t.tf.zeros([1, 3, 2, 2]), [1, 2], 'same')), error: Error, message: "Conv2D (mha-wasm/tfjs fast kernels): only Conv1D's case is supported (float32, channels last, a filter 1 row high, stride 1, dilation 1), got strides [1,2]" },
  { input: 'fast Conv2DBackpropInput given a 2-D filter, with no tfjs kernel to hand it to', call: (t) => t.withoutTfjsKernel('Conv2DBackpropInput', () => t.tf.engine().runKernel('Conv2DBackpropInput', { dy: t.tf.zeros([1, 3, 4, 2]), filter: t.tf.zeros([2, 2, 3, 2]) }, { inputShape: [1, 3, 4, 3], strides: 1, pad: 'same', dataFormat: 'NHWC' })), error: Error, message: "Conv2DBackpropInput (mha-wasm/tfjs fast kernels): only Conv1D's case is supported (float32, channels last, a filter 1 row high, stride 1, dilation 1), got a filter 2 rows high" },
  { input: 'fast Add given two int32 tensors, with no tfjs kernel to hand them to', call: (t) => t.withoutTfjsKernel('Add', () => t.tf.add(t.tf.zeros([2, 3], 'int32'), t.tf.zeros([3], 'int32'))), error: Error, message: 'Add (mha-wasm/tfjs fast kernels): only a float32 bias along the last axes is supported, got [2,3] int32 + [3] int32' },
  // ---- the demo page's training run (web/sentiment-train/session.js) ----
  { input: 'page training: settings not an object', call: (t) => t.checkTrainingSettings(10), error: TypeError, message: 'trainSentiment: settings must be an object, got number' },
  { input: 'page training: an unknown setting', call: (t) => t.checkTrainingSettings({ epoch: 3 }), error: TypeError, message: "trainSentiment: unknown setting 'epoch'; known: epochs, batchSize, learningRate, validationSplit, samples" },
  { input: 'page training: epochs 0', call: (t) => t.checkTrainingSettings({ epochs: 0 }), error: RangeError, message: 'trainSentiment: epochs must be an integer in [1, 1000], got 0' },
  { input: 'page training: samples fewer than 10', call: (t) => t.checkTrainingSettings({ samples: 5 }), error: RangeError, message: 'trainSentiment: samples must be an integer in [10, 1000000], got 5' },
  { input: 'page training: learning rate 0', call: (t) => t.checkTrainingSettings({ learningRate: 0 }), error: RangeError, message: 'trainSentiment: learningRate must be a number in (0, 1], got 0' },
  { input: 'page training: validationSplit 1', call: (t) => t.checkTrainingSettings({ validationSplit: 1 }), error: RangeError, message: 'trainSentiment: validationSplit must be a number in (0, 1), got 1' },
];
