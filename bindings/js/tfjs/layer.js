// MultiHeadAttention as a tfjs-layers layer (Keras' constructor arguments and call signature, as
// tfjs-layers' unexported port has them), computed by mha-wasm. Weights are tfjs variables in
// Keras' layout and order; the forward pass reads them into an mha-wasm layer (PyTorch layout:
// wasm-attention.js, or gpu-attention.js on tfjs' WebGPU device) and the gradient comes from
// mha-wasm's backward through tf.customGrad, converted back to Keras' layout.
import {
  checkBatchAxes, checkCausalOverAxes, checkKeyValue, checkSameRank, maskErrorMessage, outputShapeOf, readAttentionAxes,
  readOutputDims, scoresShapeOf,
} from '../keras/arguments.js';
import { attentionLayout } from '../keras/attention-axes.js';
import { coreConfigFromKeras, coreMasksFromKeras, kerasWeightShapes } from '../keras/layout.js';
import { KERAS_315_OPTIONS, readKeras315Options } from '../keras/options.js';
import { checkDtypeOnBackend } from '../api/options.js';
import { checkWeightDtype } from '../api/config-reader.js';
import { TfjsGpuAttention } from './gpu-attention.js';
import { TfjsWasmAttention } from './wasm-attention.js';
import { isNodeReference, resolveNodeReference } from './node-references.js';

const CALL_KEYS = ['value', 'key', 'attentionMask', 'useCausalMask', 'returnAttentionScores', 'training', 'mask',
  'attentionInputs'];
// Roles of the layer's input list (one word each: tfjs-layers snake-cases a saved model's call arguments).
const INPUT_ROLES = ['query', 'value', 'key', 'mask'];

const product = (dims) => dims.reduce((a, b) => a * b, 1);
const dimsText = String;  // how this layer's messages write a list (keras/arguments.js' `dims`): '1,3'
// The constructor's arguments: Keras' (as tfjs-layers' port names them), the input shapes Keras'
// get_config writes once built, tf.layers.Layer's own, and the customObjects tfjs' deserializer
// adds to every config it loads (for tf.layers.Layer). Any other is refused by name.
const ARGS = ['numHeads', 'keyDim', 'valueDim', 'dropout', 'useBias', 'outputShape', 'attentionAxes',
  'kernelInitializer', 'biasInitializer', 'kernelRegularizer', 'biasRegularizer', 'activityRegularizer',
  'kernelConstraint', 'biasConstraint', 'queryShape', 'keyShape', 'valueShape', ...KERAS_315_OPTIONS, 'weightDtype',
  'name', 'trainable', 'dtype', 'inputShape', 'batchInputShape', 'batchSize', 'inputDType', 'weights', 'customObjects'];
const isTensorLike = (x) => x !== null && typeof x === 'object' && Array.isArray(x.shape) && 'dtype' in x;

// tfjs-layers' serialize/get helpers (getInitializer, ...) are not in its public index: the public
// constructors take the same { className, config } objects, so these go through them.
function getInitializer(tf, spec) {
  if (spec == null) return null;
  if (typeof spec === 'object' && typeof spec.apply === 'function') return spec;
  if (typeof spec === 'string') return tf.initializers[spec[0].toLowerCase() + spec.slice(1)]?.({}) ?? fail('initializer', spec);
  return tf.serialization.SerializationMap.getMap().classNameMap[spec.className] ? deserialize(tf, spec) : fail('initializer', spec);
}
function getRegularizer(tf, spec) {
  if (spec == null) return null;
  if (typeof spec === 'object' && typeof spec.apply === 'function') return spec;
  return deserialize(tf, spec);
}
function getConstraint(tf, spec) {
  if (spec == null) return null;
  if (typeof spec === 'object' && typeof spec.apply === 'function') return spec;
  if (typeof spec === 'string') return tf.constraints[spec[0].toLowerCase() + spec.slice(1)]?.({}) ?? fail('constraint', spec);
  return deserialize(tf, spec);
}
function deserialize(tf, { className, config }) {
  const [cls, fromConfig] = tf.serialization.SerializationMap.getMap().classNameMap[className] ?? [];
  if (!cls) throw new TypeError(`MultiHeadAttention: unknown ${className}`);
  return fromConfig(cls, config);
}
function serialize(object) {
  return object == null ? null : { className: object.getClassName(), config: object.getConfig() };
}
function fail(kind, spec) {
  throw new TypeError(`MultiHeadAttention: unknown ${kind} ${JSON.stringify(spec)}`);
}

/**
 * The constructor's arguments as tf.layers.Layer's (with activityRegularizer) and Keras' own,
 * after the checks that come before tf.layers.Layer's constructor: an object, no option that is
 * not implemented yet, no unknown key.
 */
function splitArgs(args) {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new TypeError(`MultiHeadAttention: args must be an object, got ${args === null ? 'null' : typeof args}`);
  }
  const unknown = Object.keys(args).find((key) => !ARGS.includes(key));
  if (unknown !== undefined) throw new TypeError(`MultiHeadAttention: unknown argument '${unknown}'; known: ${ARGS.join(', ')}`);
  checkDtypeOnBackend('tfjs', args.dtype);  // (tf.layers.Layer's own dtype would take 'float64', and compute in float32)
  const { numHeads, keyDim, valueDim, dropout = 0, useBias = true, outputShape, attentionAxes,
    kernelInitializer = 'glorotUniform', biasInitializer = 'zeros', kernelRegularizer, biasRegularizer,
    activityRegularizer, kernelConstraint, biasConstraint, queryShape, keyShape, valueShape,
    useGate, slidingWindow, weightDtype, ...layerArgs } = args;
  return {
    layerArgs: { ...layerArgs, activityRegularizer },
    kerasArgs: { numHeads, keyDim, valueDim, dropout, useBias, outputShape, attentionAxes, kernelInitializer, biasInitializer,
      kernelRegularizer, biasRegularizer, kernelConstraint, biasConstraint, queryShape, keyShape, valueShape, useGate, slidingWindow,
      weightDtype },
  };
}

/** Keras' arguments checked, as the layer's public fields (numHeads, ..., kernelInitializer as an object, savedShapes). */
function readKerasArgs(tf, { numHeads, keyDim, valueDim, dropout, useBias, outputShape, attentionAxes, kernelInitializer,
  biasInitializer, kernelRegularizer, biasRegularizer, kernelConstraint, biasConstraint, queryShape, keyShape, valueShape,
  useGate, slidingWindow, weightDtype }) {
  const positive = (name, value, optional) => {
    if (optional && value == null) return;
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`MultiHeadAttention: ${name} must be a positive integer, got ${value}`);
  };
  positive('numHeads', numHeads);
  positive('keyDim', keyDim);
  positive('valueDim', valueDim, true);
  // Keras' output_shape: an int, or a tuple (keras/arguments.js).
  const outputDims = readOutputDims(outputShape, 'MultiHeadAttention: ', dimsText);
  if (!outputDims) positive('outputShape', outputShape, true);
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1)) {
    throw new RangeError(`MultiHeadAttention: dropout must be a number in [0, 1), got ${dropout}`);
  }
  if (typeof useBias !== 'boolean') throw new TypeError(`MultiHeadAttention: useBias must be a boolean, got ${typeof useBias}`);
  for (const [name, shape] of Object.entries({ queryShape, keyShape, valueShape })) {
    if (shape != null && !(Array.isArray(shape) && shape.length >= 3 && shape.every((d) => d === null || Number.isInteger(d)))) {
      throw new TypeError(`MultiHeadAttention: ${name} must be a shape [batch, ..., features] (Keras writes it after build), got ${JSON.stringify(shape)}`);
    }
  }
  const axes = readAttentionAxes(attentionAxes, 'MultiHeadAttention: ');
  return {
    numHeads, keyDim, valueDim: valueDim ?? keyDim, dropout, useBias,
    ...readKeras315Options({ useGate, slidingWindow }, 'MultiHeadAttention: '),
    // Keras' quantize('int8') as an argument: the core stores the projections quantized (build).
    weightDtype: readWeightDtype(weightDtype),
    // outputShapeArg: the output's features (their product for a tuple, whose axes are outputDims).
    outputShapeArg: outputDims ? product(outputDims) : outputShape ?? null,
    outputDims: outputDims && outputDims.length > 1 ? [...outputDims] : null,
    attentionAxes: axes,
    kernelInitializer: getInitializer(tf, kernelInitializer),
    biasInitializer: getInitializer(tf, biasInitializer),
    kernelRegularizer: getRegularizer(tf, kernelRegularizer), biasRegularizer: getRegularizer(tf, biasRegularizer),
    kernelConstraint: getConstraint(tf, kernelConstraint), biasConstraint: getConstraint(tf, biasConstraint),
    // The input shapes Keras' get_config writes once built (a converted model's config carries them).
    savedShapes: queryShape || keyShape || valueShape ? { query: queryShape ?? null, key: keyShape ?? null, value: valueShape ?? null } : null,
  };
}

/** The weightDtype argument checked, its errors starting with the layer's name. */
function readWeightDtype(value) {
  try {
    return checkWeightDtype(value);
  } catch (error) {
    error.message = `MultiHeadAttention: ${error.message}`;
    throw error;
  }
}

/**
 * Attention over Keras' attention axes (`layout`, keras/attention-axes.js) of rank > 3 tfjs
 * tensors: the other axes fold into the batch, the attended ones into the sequence, `attend3d(q,
 * v, k, mask)` attends the [B', T', features] tensors, and the output (and scores) unfold to
 * Keras' shapes.
 */
function attendOverAxes(tf, { query, value, key, attentionMask }, { batch, attended, order, inverse }, numHeads, attend3d) {
  const rank = query.shape.length;
  const fold = (t) => {
    const moved = tf.transpose(t, order);
    return tf.reshape(moved, [product(batch.map((a) => t.shape[a])), product(attended.map((a) => t.shape[a])), t.shape[rank - 1]]);
  };
  for (const [role, t] of Object.entries({ value, key })) {
    if (t) checkBatchAxes(role, t.shape, query.shape, { batch }, 'MultiHeadAttention.call', dimsText);
  }
  // Keras' mask over attention axes: [batch axes..., query's attended..., key's attended...], the
  // layout the fold gives the scores: read as [B', T', S'].
  let mask = null;
  if (attentionMask) {
    const want = [...batch, ...attended].map((a) => query.shape[a]).concat(attended.map((a) => value.shape[a]));
    if (attentionMask.shape.join() !== want.join()) {
      throw new RangeError(`MultiHeadAttention.call: attentionMask must have shape [${want}] (the query's other axes, its attended axes, the key's attended axes) `
        + `for attentionAxes [${attended}] of a rank-${rank} input, got [${attentionMask.shape}]`);
    }
    mask = tf.reshape(attentionMask, [product(batch.map((a) => query.shape[a])), product(attended.map((a) => query.shape[a])), product(attended.map((a) => value.shape[a]))]);
  }
  const same = value === query;
  const q = fold(query), v = same ? q : fold(value), k = key ? (key === value ? v : fold(key)) : null;
  const result = attend3d(q, v, k, mask);
  const [output, scores] = Array.isArray(result) ? result : [result, null];
  const outFeatures = output.shape[2];
  const unfolded = tf.reshape(output, [...order.slice(0, -1).map((a) => query.shape[a]), outFeatures]);
  const restored = tf.transpose(unfolded, inverse);
  if (!scores) return restored;
  return [restored, tf.reshape(scores, scoresShapeOf(query.shape, value.shape, { batch, attended }, numHeads))];
}

// The implicit mask (Embedding maskZero, Masking) of the input with `role` among `list` (whose
// roles are `roles`): from `masks`, the list tfjs' model execution passes (one per input), or else
// the eager tensor's own kerasMask; null without one. call() and computeMask() both read it here.
function implicitMask(list, roles, masks, role) {
  const i = roles.indexOf(role);
  return i < 0 ? null : [masks].flat()[i] ?? list[i]?.kerasMask ?? null;
}

/**
 * The logic of one MultiHeadAttention tfjs layer: Keras' arguments, its weights, build, call,
 * masks and config, and the attention it runs through mha-wasm (wasm-attention.js, or
 * gpu-attention.js on tfjs' WebGPU device). `layer` is the tf.layers.Layer it serves (the class
 * defineTfjsMultiHeadAttention makes for one tf, whose methods each hand over to this one): Keras'
 * arguments are its public fields (numHeads, ..., kernelInitializer as an object, savedShapes,
 * inputSizes), its weights its tfjs variables. `tf`, `mha` (a loaded mha-wasm module) and `gpu`
 * (an mha-wasm WebGPU module on tfjs' webgpu device, or null) are those mhaTfjs was given.
 */
class MultiHeadAttentionLogic {
  #tf;
  #mha;
  #gpu;
  #layer;
  #core = null;           // the attention on mha-wasm's wasm module (wasm-attention.js), made at build (input sizes known)
  #gpuCore = null;        // its twin on tfjs' WebGPU device (gpu-attention.js), when mhaTfjs was given one
  #pending = new Set();   // forward results kept for a backward that never came (freed next call)
  #symbolicCall = null;   // how the layer was applied in a model: the layout of its inputs and its options
  #callRoles = null;      // the roles of the inputs of the apply() under way (build() gets only their shapes)
  #weightNames = [];      // Keras' names of layer.weights, in order
  #returnsScores = false; // whether the apply() under way returns the attention scores too (computeMask's outputs)

  /**
   * `kerasArgs`: the Keras arguments of the layer's constructor (splitArgs), checked and set as
   * `layer`'s fields: { numHeads, keyDim, valueDim = keyDim, dropout = 0, useBias = true,
   * outputShape, attentionAxes, kernelInitializer = 'glorotUniform', biasInitializer = 'zeros',
   * kernelRegularizer, biasRegularizer, kernelConstraint, biasConstraint, useGate, slidingWindow,
   * weightDtype, queryShape, keyShape, valueShape }.
   */
  constructor(layer, kerasArgs, { tf, mha, gpu }) {
    this.#tf = tf;
    this.#mha = mha;
    this.#gpu = gpu;
    this.#layer = layer;
    Object.assign(layer, readKerasArgs(tf, kerasArgs));
    // Keras' supports_masking: the inputs' implicit masks (Embedding(maskZero), Masking) are
    // combined as Keras' _compute_attention_mask combines them; the output carries the query's.
    layer.supportsMasking = true;
    layer.inputSizes = null;  // { query, key, value } feature sizes, inferred at build
  }

  /**
   * Keras' call: apply(query, { value, key = value, attentionMask, useCausalMask,
   * returnAttentionScores, training }). value/key/attentionMask join the layer's inputs (so a
   * functional model sees them); the list form apply([query, value, key?]) is also accepted.
   * `applyLayer(list, kwargs)`: tf.layers.Layer's own apply, which builds and calls the layer.
   */
  apply(inputs, kwargs = {}, applyLayer) {
    const { list, roles, options } = this.#arrange(inputs, kwargs);
    this.#callRoles = roles;
    this.#returnsScores = options.returnAttentionScores ?? this.#symbolicCall?.returnAttentionScores ?? false;
    try {
      return applyLayer(list, { ...options, attentionInputs: roles });
    } finally {
      this.#callRoles = null;
    }
  }

  // apply()'s arguments as the layer's input list and each input's role (query, value, key, mask).
  #arrange(inputs, kwargs) {
    if (kwargs === null || typeof kwargs !== 'object') throw new TypeError('MultiHeadAttention.apply: the second argument must be an object { value, key, attentionMask, ... }');
    for (const key of Object.keys(kwargs)) {
      if (!CALL_KEYS.includes(key)) throw new TypeError(`MultiHeadAttention.apply: unknown argument '${key}'; known: ${CALL_KEYS.slice(0, 6).join(', ')}`);
    }
    const { attentionInputs, ...rest } = kwargs;
    const { value, key, attentionMask, ...options } = this.#resolveReferences(inputs, rest);
    let list, roles;
    if (!Array.isArray(inputs) && attentionInputs?.length === 1) {
      list = [inputs];  // self-attention loaded from a model.json: the query is the value
      roles = ['query'];
    } else if (Array.isArray(inputs)) {
      list = inputs;
      roles = attentionInputs ?? this.#symbolicCall?.roles ?? INPUT_ROLES.slice(0, Math.min(inputs.length, 3));
      if (value !== undefined || key !== undefined) throw new TypeError('MultiHeadAttention.apply: give value/key either in the input list or as arguments, not both');
    } else {
      if (value == null) throw new TypeError('MultiHeadAttention.apply: value is required: apply(query, { value }) (self-attention: { value: query })');
      // A converted model's self-attention names the query itself as the value: one input, as in Keras' graph.
      const selfReference = value === inputs && isNodeReference(kwargs.value);
      list = selfReference ? [inputs] : [inputs, value];
      roles = selfReference ? ['query'] : ['query', 'value'];
      if (key != null) { list.push(key); roles.push('key'); }
      if (attentionMask != null) { list.push(attentionMask); roles.push('mask'); }
    }
    if (list.length !== roles.length || list.some((t) => !isTensorLike(t))) {
      throw new TypeError(`MultiHeadAttention.apply: expected tensors for ${roles.join(', ')}, got ${list.length} inputs`);
    }
    const symbolic = list.map((t) => t instanceof this.#tf.SymbolicTensor);
    if (symbolic.some(Boolean)) {
      if (!symbolic.every(Boolean)) throw new TypeError('MultiHeadAttention.apply: query, value, key and attentionMask must be all symbolic (tf.input) or all tensors');
      // tfjs-layers' model execution passes a layer only { training }: remember this call's layout and options.
      const call = { roles, useCausalMask: options.useCausalMask ?? false, returnAttentionScores: options.returnAttentionScores ?? false };
      if (this.#symbolicCall && JSON.stringify(this.#symbolicCall) !== JSON.stringify(call)) {
        throw new Error(`MultiHeadAttention.apply: this layer was already applied in a model as ${JSON.stringify(this.#symbolicCall)}; `
          + 'tfjs-layers runs a model without per-call arguments, so one layer takes one form: create another layer (or share weights with setWeights)');
      }
      this.#symbolicCall = call;
    }
    return { list, roles, options };
  }

  // A converted model's kwargs name tensors by node reference ([layer, node, tensor]; see
  // node-references.js): each becomes the SymbolicTensor it names, found upstream of the query.
  #resolveReferences(query, kwargs) {
    const resolved = { ...kwargs };
    for (const role of ['value', 'key', 'attentionMask']) {
      if (!isNodeReference(kwargs[role])) continue;
      if (!(query instanceof this.#tf.SymbolicTensor)) {
        throw new TypeError(`MultiHeadAttention.apply: ${role} is a node reference ${JSON.stringify(kwargs[role])}, which only a model being loaded passes (with a symbolic query)`);
      }
      resolved[role] = resolveNodeReference(kwargs[role], query);
      if (!resolved[role]) {
        throw new Error(`MultiHeadAttention.apply: the model's ${role} is the output of layer '${kwargs[role][0]}' (node ${kwargs[role][1]}, tensor ${kwargs[role][2]}; tfjs' loader camelCases the name), `
          + 'which is not upstream of the query: a converted Keras model gives the layer only its first argument as an input, and tfjs cannot '
          + 'wire another branch (another model input, say) into it. Build the model in tfjs with the same layer names and load the weights '
          + 'into it (docs/tfjs.md, "Bring your Keras model")');
      }
    }
    return resolved;
  }

  // The roles of the inputs whose shapes build() and computeOutputShape() get.
  #roles(count) {
    return this.#callRoles ?? this.#symbolicCall?.roles ?? INPUT_ROLES.slice(0, count);
  }

  /** tf.layers.Layer's build: the weights (their shapes from the inputs' features) and the attention. */
  build(inputShape) {
    const layer = this.#layer;
    const shapes = Array.isArray(inputShape[0]) ? inputShape : [inputShape];
    const roles = this.#roles(shapes.length);
    const shapeOf = (role) => shapes[roles.indexOf(role)] ?? null;
    const feature = (role) => shapeOf(role)?.[shapeOf(role).length - 1];
    const query = feature('query'), value = feature('value') ?? query, key = feature('key') ?? value;
    // A converted model's config states the sizes Keras built with: the inputs must agree.
    for (const [role, size] of Object.entries({ query, value, key })) {
      const saved = layer.savedShapes?.[role];
      if (saved && saved[saved.length - 1] !== size) {
        throw new RangeError(`MultiHeadAttention.build: the config's ${role}Shape ${JSON.stringify(saved)} has ${saved[saved.length - 1]} features, but the ${role} has ${size}`);
      }
    }
    for (const [role, size] of Object.entries({ query, value, key })) {
      if (!Number.isInteger(size)) throw new TypeError(`MultiHeadAttention.build: ${role}'s last dimension (its features) must be known, got shape [${shapeOf(role)}]`);
    }
    layer.inputSizes = { query, key, value };
    const weightShapes = kerasWeightShapes(this.#sizes());
    this.#weightNames = Object.keys(weightShapes);
    // A quantized layer's weights take no gradients (the core's quantized projections have none):
    // they are not trainable, as Keras' quantized kernels are not.
    const trainable = layer.weightDtype === 'f32';
    for (const name of this.#weightNames) {
      const kernel = name.endsWith('kernel');
      layer.addWeight(name, weightShapes[name], 'float32',
        kernel ? layer.kernelInitializer : layer.biasInitializer, kernel ? layer.kernelRegularizer : layer.biasRegularizer,
        trainable, kernel ? layer.kernelConstraint : layer.biasConstraint);
    }
    this.#core?.dispose();
    this.#gpuCore?.dispose();
    const config = { ...coreConfigFromKeras(this.#sizes()), ...(layer.dropout > 0 ? { dropout: layer.dropout } : {}) };
    // weightDtype: the tfjs variables keep the float32 weights (getWeights, setWeights); the wasm
    // layer stores the projections quantized each time it loads them, and computes with those.
    this.#core = new TfjsWasmAttention(this.#tf, this.#mha, { ...config, ...(trainable ? {} : { weightDtype: layer.weightDtype }) });
    // (After a device loss: the wasm module only. The gate's weights and quantized projections are
    // not in gpu-attention.js's GPU layout yet: a gated or quantized layer computes on the wasm module.)
    const gpu = this.#gpu;
    this.#gpuCore = gpu && !gpu.lost && !layer.useGate && trainable ? new TfjsGpuAttention(this.#tf, gpu, config) : null;
    layer.built = true;
  }

  computeOutputShape(inputShape) {
    const shapes = Array.isArray(inputShape[0]) ? inputShape : [inputShape];
    const roles = this.#roles(shapes.length);
    const query = shapes[0], value = shapes[roles.indexOf('value')] ?? query, key = shapes[roles.indexOf('key')] ?? value;
    checkKeyValue(value, key, 'MultiHeadAttention.computeOutputShape');
    const layer = this.#layer;
    const output = outputShapeOf(query, layer.outputDims ?? layer.outputShapeArg);
    if (!this.#symbolicCall?.returnAttentionScores) return output;
    return [output, scoresShapeOf(query, value, this.#axes(query.length), layer.numHeads)];
  }

  // Keras' attention axes for an input of `rank`: the attended axes and the other (batch-like) ones.
  #axes(rank) {
    return attentionLayout(rank, this.#layer.attentionAxes, 'MultiHeadAttention.apply');
  }

  /**
   * Keras' compute_mask: the output carries the query's implicit mask (null without one); the
   * attention scores (returnAttentionScores), none.
   */
  computeMask(inputs, mask) {
    // (tfjs' eager apply passes no masks: then the query tensor's own kerasMask, as call reads it.)
    const list = Array.isArray(inputs) ? inputs : [inputs];
    const queryMask = implicitMask(list, this.#roles(list.length), mask, 'query');
    return this.#returnsScores ? [queryMask, null] : queryMask;
  }

  call(inputs, kwargs = {}) {
    const list = Array.isArray(inputs) ? inputs : [inputs];
    const roles = kwargs.attentionInputs ?? this.#symbolicCall?.roles ?? INPUT_ROLES.slice(0, list.length);
    const implicit = (role) => implicitMask(list, roles, kwargs.mask, role);
    const byRole = Object.fromEntries(roles.map((r, i) => [r, list[i]]));
    const options = {
      useCausalMask: kwargs.useCausalMask ?? this.#symbolicCall?.useCausalMask ?? false,
      returnAttentionScores: kwargs.returnAttentionScores ?? this.#symbolicCall?.returnAttentionScores ?? false,
      training: kwargs.training === true,
      implicitMasks: { queryMask: implicit('query'), valueMask: implicit('value'), keyMask: implicit('key') },
    };
    this.#releasePending();
    const result = this.#attend(byRole.query, byRole.value ?? byRole.query, byRole.key ?? null, byRole.mask ?? null, options);
    const { outputDims } = this.#layer;
    if (!outputDims) return result;
    // A tuple outputShape: the output's last axis unfolded into its axes, as Keras' output dense gives them.
    const unfold = (t) => this.#tf.reshape(t, [...t.shape.slice(0, -1), ...outputDims]);
    return Array.isArray(result) ? [unfold(result[0]), result[1]] : unfold(result);
  }

  // Attention over Keras' attention axes: the other axes fold into the batch, the attended ones
  // into the sequence, and mha-wasm attends [B', T, features] tensors.
  #attend(query, value, key, attentionMask, options) {
    const rank = query.shape.length;
    if (rank < 3) throw new RangeError(`MultiHeadAttention.call: query must have rank >= 3 ([batch, ..., features]), got shape [${query.shape}]`);
    if (key) checkKeyValue(value.shape, key.shape, 'MultiHeadAttention.call');
    for (const [role, t] of Object.entries({ value, key })) {
      if (t) checkSameRank(role, t.shape, rank, 'MultiHeadAttention.call', dimsText);
    }
    const layout = this.#axes(rank);  // (checks attentionAxes against the rank)
    if (rank === 3) return this.#attend3d(query, value, key, attentionMask, options);
    const implicit = Object.entries(options.implicitMasks).find(([, m]) => m != null);
    if (implicit) throw new Error(`MultiHeadAttention.call: an implicit ${implicit[0]} is not supported on inputs of rank > 3 yet`);
    if (options.useCausalMask) checkCausalOverAxes(query.shape, value.shape, layout, 'MultiHeadAttention.call', dimsText);
    return attendOverAxes(this.#tf, { query, value, key, attentionMask }, layout, this.#layer.numHeads,
      (q, v, k, mask) => this.#attend3d(q, v, k, mask, options));
  }

  // [B, T, E] attention through mha-wasm, on tfjs' WebGPU device while tfjs runs there (gpu-attention.js),
  // else on the wasm module (wasm-attention.js); differentiable for the inputs and the weights.
  #attend3d(query, value, key, attentionMask, options) {
    const layer = this.#layer, tf = this.#tf;
    const self = key === null && value === query;
    const inputs = self ? [query] : key === null ? [query, value] : [query, value, key];
    const variables = layer.weights.map((w) => w.read());
    const masks = this.#masks({ attentionMask, ...options.implicitMasks }, query, value);
    const wantGradient = tf.engine().isTapeOn();
    // A quantized layer gives its inputs' gradients only: one of its variables made trainable
    // again would silently get none, so it is refused by name.
    const quantized = layer.weightDtype !== 'f32';
    if (wantGradient && quantized && layer.weights.some((w) => w.trainable)) {
      throw new Error(`MultiHeadAttention: a layer with weightDtype '${layer.weightDtype}' cannot train its weights (its projections are `
        + "quantized and take no gradients); train a weightDtype 'f32' layer, then copy its getWeights() into the quantized one");
    }
    const core = this.#gpuCore?.active ? this.#gpuCore : this.#core;
    let scores = null;
    const attend = tf.customGrad((...args) => {
      args.pop();  // customGrad's save(), unused: the saved state lives in mha-wasm (or on the GPU)
      core.loadWeights(variables, this.#weightNames);
      const forward = core.forward(query, self ? null : value, key, {
        ...masks, causal: options.useCausalMask, needWeights: options.returnAttentionScores, averageWeights: false,
        ...(wantGradient ? { grad: true } : {}),
        // Keras' scores are before dropout (its dropout layer follows the softmax).
        ...(options.training && layer.dropout > 0 ? { training: true, weightsBeforeDropout: true } : {}),
      });
      if (wantGradient) this.#pending.add(forward.result);
      scores = forward.scores;
      return {
        value: forward.output,
        gradFunc: (dy) => {
          this.#pending.delete(forward.result);
          const g = forward.backward(dy);
          return quantized ? g.inputs : [...g.inputs, ...this.#weightNames.map((name) => g.params[name])];
        },
      };
    });
    // (A quantized layer's variables are not the attention's inputs: no gradient goes to them.)
    const output = attend(...inputs, ...(quantized ? [] : variables));
    if (!options.returnAttentionScores) return output;
    return [output, scores()];
  }

  // The built layer's sizes, as keras/layout.js takes them.
  #sizes() {
    const layer = this.#layer;
    const { query, key, value } = layer.inputSizes;
    return {
      numHeads: layer.numHeads, keyDim: layer.keyDim, valueDim: layer.valueDim, useBias: layer.useBias,
      queryDim: query, keyInputDim: key, valueInputDim: value, outputShape: layer.outputShapeArg ?? query,
      outputDims: layer.outputDims, useGate: layer.useGate, slidingWindow: layer.slidingWindow,
    };
  }

  // Keras' attention_mask and the implicit masks (1 = attend) as mha-wasm's blocking mask (keras/layout.js).
  #masks(tensors, query, value) {
    const [B, T] = query.shape, S = value.shape[1], H = this.#layer.numHeads;
    const given = {};
    for (const [name, t] of Object.entries(tensors)) if (t) given[name] = { data: t.dataSync(), shape: t.shape };
    const { error, ...masks } = coreMasksFromKeras(given, { B, T, S, H });
    if (error) throw new RangeError(`MultiHeadAttention.call: ${maskErrorMessage(error)}`);
    return masks;
  }

  #releasePending() {
    for (const result of this.#pending) result.release();
    this.#pending.clear();
  }

  /** Keras' part of the layer's config (tf.layers.Layer's own comes before it). */
  getConfig() {
    const layer = this.#layer;
    return {
      numHeads: layer.numHeads, keyDim: layer.keyDim, valueDim: layer.valueDim, dropout: layer.dropout,
      useBias: layer.useBias, outputShape: layer.outputDims ?? layer.outputShapeArg, attentionAxes: layer.attentionAxes,
      useGate: layer.useGate, slidingWindow: layer.slidingWindow,
      ...(layer.weightDtype !== 'f32' ? { weightDtype: layer.weightDtype } : {}),
      ...(layer.savedShapes ? { queryShape: layer.savedShapes.query, keyShape: layer.savedShapes.key, valueShape: layer.savedShapes.value } : {}),
      kernelInitializer: serialize(layer.kernelInitializer),
      biasInitializer: serialize(layer.biasInitializer),
      kernelRegularizer: serialize(layer.kernelRegularizer), biasRegularizer: serialize(layer.biasRegularizer),
      kernelConstraint: serialize(layer.kernelConstraint), biasConstraint: serialize(layer.biasConstraint),
    };
  }

  /**
   * Keras' set_weights' check, before tf.layers.Layer's setWeights: one tensor per weight, in
   * getWeights()' order, each of its weight's shape; a mismatch names the weight (tfjs' own check
   * gives only the two shapes).
   */
  checkWeights(weights) {
    const layer = this.#layer;
    if (!layer.built) throw new Error(`MultiHeadAttention.setWeights: layer '${layer.name}' has no weights yet: apply it first (its input sizes decide their shapes)`);
    if (!Array.isArray(weights) || weights.length !== layer.weights.length) {
      throw new RangeError(`MultiHeadAttention.setWeights: layer '${layer.name}' expects ${layer.weights.length} weights (${this.#weightNames.join(', ')}), got ${
        Array.isArray(weights) ? weights.length : typeof weights}`);
    }
    layer.weights.forEach((variable, i) => {
      const shape = weights[i]?.shape;
      if (!Array.isArray(shape) || shape.length !== variable.shape.length || shape.some((d, j) => d !== variable.shape[j])) {
        throw new RangeError(`MultiHeadAttention.setWeights: weight ${i} '${variable.originalName}' has shape [${variable.shape}], got ${Array.isArray(shape) ? `[${shape}]` : typeof weights[i]}`);
      }
    });
  }

  /** Frees the mha-wasm layer's memory (the tfjs variables are the model's: model.dispose()). */
  dispose() {
    this.#releasePending();
    this.#core?.dispose();
    this.#core = null;
    this.#gpuCore?.dispose();
    this.#gpuCore = null;
  }
}

/**
 * The MultiHeadAttention layer class for one tfjs namespace (registered with it for
 * serialization as 'MultiHeadAttention'), computing with `mha`, a loaded mha-wasm module, and
 * `gpu`, an mha-wasm WebGPU module on tfjs' webgpu device (or null). The class must extend the
 * user's own tf.layers.Layer, which exists only once mhaTfjs is given their tf, so it is made
 * here; each of its methods hands over to MultiHeadAttentionLogic above.
 */
export function defineTfjsMultiHeadAttention(tf, mha, gpu = null) {
  const binding = { tf, mha, gpu };
  class MultiHeadAttention extends tf.layers.Layer {
    static className = 'MultiHeadAttention';
    #logic;

    /** `args`: MultiHeadAttentionLogic's constructor's and tf.layers.Layer's (splitArgs). */
    constructor(args) {
      const { layerArgs, kerasArgs } = splitArgs(args);
      super(layerArgs);
      this.#logic = new MultiHeadAttentionLogic(this, kerasArgs, binding);
    }

    apply(inputs, kwargs) { return this.#logic.apply(inputs, kwargs, (list, options) => super.apply(list, options)); }
    build(inputShape) { this.#logic.build(inputShape); }
    computeOutputShape(inputShape) { return this.#logic.computeOutputShape(inputShape); }
    computeMask(inputs, mask) { return this.#logic.computeMask(inputs, mask); }
    call(inputs, kwargs) { return this.#logic.call(inputs, kwargs); }
    getConfig() { return { ...super.getConfig(), ...this.#logic.getConfig() }; }
    setWeights(weights) { this.#logic.checkWeights(weights); super.setWeights(weights); }
    dispose() { this.#logic.dispose(); return super.dispose(); }
  }

  tf.serialization.registerClass(MultiHeadAttention);
  return MultiHeadAttention;
}
