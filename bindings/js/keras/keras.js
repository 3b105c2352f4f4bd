// KerasMultiHeadAttention: Keras' MultiHeadAttention layer (keras.layers.MultiHeadAttention,
// Keras 3) on the same core as MultiHeadAttention: Keras' argument order call(query, value, key),
// its weight layouts (EinsumDense kernels [in, H, keyDim], output [H, valueDim, out]), its scale
// 1/sqrt(keyDim) and its mask convention (1 = attend). A thin adapter: the layout conversion
// happens once in setWeights, the mask inversion per call; the math is the core's.
import {
  checkBatchAxes, checkCausalOverAxes, checkKeyValue, checkSameRank, maskErrorMessage, outputShapeOf, readAttentionAxes,
  readOutputDims, scoresShapeOf,
} from './arguments.js';
import { attentionLayout, foldForAttention, permute } from './attention-axes.js';
import {
  coreConfigFromKeras, coreMasksFromKeras, kerasLayoutFromStateDict, kerasWeightShapes, stateDictFromKerasLayout,
} from './layout.js';
import { readConstraint, serializeConstraint } from './constraints.js';
import { initialKerasWeights, readInitializer } from './initializers.js';
import { KERAS_315_OPTIONS, readKeras315Options } from './options.js';
import { nameErrorsByCall, withCallName } from '../api/errors.js';
import { checkFinite } from '../api/finite.js';
import { checkMask } from '../api/masks.js';
import { checkWeightDtype } from '../api/config-reader.js';
import {
  checkBoolean, checkInteger, checkKnownKeys, checkPlainObject, checkTensor, describe,
} from '../api/validate.js';

const CONFIG_KEYS = ['numHeads', 'keyDim', 'valueDim', 'useBias', 'outputShape', 'queryDim', 'keyInputDim', 'valueInputDim',
  'dropout', 'seed', 'attentionAxes', 'weightDtype', 'kernelInitializer', 'biasInitializer', 'kernelConstraint', 'biasConstraint', ...KERAS_315_OPTIONS];
// queryMask / valueMask / keyMask: Keras' implicit masks (an Embedding(mask_zero=True)'s), passed
// explicitly (plain arrays carry none): [B, T] and [B, S], 1 = a real token.
const CALL_KEYS = ['attentionMask', 'queryMask', 'valueMask', 'keyMask', 'useCausalMask', 'returnAttentionScores', 'training',
  'seed', 'checkFinite', 'capture', 'patch'];
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

// Errors start with the Keras call that failed; the PyTorch-side layer's call names become Keras'.
const KERAS_METHODS = ['setWeights', 'getWeights', 'weightShapes', 'call'];
const INNER_CALLS = ['MultiHeadAttention', 'forwardAsync', 'forward', 'loadStateDict', 'stateDict'];

/** a promise's value through `next`, or a value's at once (the same code serves sync and async layers). */
const then = (value, next) => (value instanceof Promise ? value.then(next) : next(value));

/**
 * Keras' layer over one backend's MultiHeadAttention: `backend` is { MultiHeadAttention, asyncOnly }
 * (asyncOnly: that class has forwardAsync only, WebGPU's; call() is then a TypeError naming
 * callAsync). Each loaded module binds its own with defineKerasMultiHeadAttention (below).
 */
export class KerasMultiHeadAttention {
  #backend;
  #layer = null;  // made when the input sizes are known (Keras "builds" the layer)
  #config = null;
  #args;

  /**
   * { numHeads, keyDim, valueDim = keyDim, useBias = true, outputShape = queryDim, queryDim,
   *   keyInputDim = valueInputDim, valueInputDim = queryDim, weightDtype = 'f32' }: Keras' arguments
   * (weightDtype: how the projection weights are stored, as MultiHeadAttention's); the input
   * feature sizes (which Keras infers when the layer is built) size the layer up front.
   */
  constructor(config, backend) {
    this.#backend = backend;
    checkPlainObject('KerasMultiHeadAttention: config', config);
    checkKnownKeys('config', config, CONFIG_KEYS);
    for (const name of ['numHeads', 'keyDim']) checkInteger(name, config[name]);
    for (const name of ['valueDim', 'queryDim', 'keyInputDim', 'valueInputDim']) {
      checkInteger(name, config[name], { optional: true });
    }
    // Keras' output_shape: an int, or a tuple (arguments.js).
    if (!readOutputDims(config.outputShape)) checkInteger('outputShape', config.outputShape, { optional: true });
    checkBoolean('useBias', config.useBias);
    checkWeightDtype(config.weightDtype);  // here, not when the layer is built on its first call
    this.#args = {
      ...config, ...readKeras315Options(config), attentionAxes: Object.freeze(readAttentionAxes(config.attentionAxes)),
      kernelInitializer: readInitializer('kernelInitializer', config.kernelInitializer, 'GlorotUniform'),
      biasInitializer: readInitializer('biasInitializer', config.biasInitializer, 'Zeros'),
      kernelConstraint: readConstraint('kernelConstraint', config.kernelConstraint),
      biasConstraint: readConstraint('biasConstraint', config.biasConstraint),
    };
    if (config.queryDim !== undefined) this.#build({ queryDim: config.queryDim });
  }

  /**
   * Sizes the layer, as Keras builds one: the input sizes given to the constructor win, the
   * others come from the first call's inputs or the weights' shapes (`inferred`).
   */
  #build(inferred) {
    const a = this.#args;
    const queryDim = a.queryDim ?? inferred.queryDim;
    const valueInputDim = a.valueInputDim ?? inferred.valueInputDim ?? queryDim;
    this.#config = Object.freeze({
      numHeads: a.numHeads,
      keyDim: a.keyDim,
      valueDim: a.valueDim ?? a.keyDim,
      useBias: a.useBias ?? true,
      outputShape: a.outputShape ?? queryDim,
      queryDim,
      keyInputDim: a.keyInputDim ?? inferred.keyInputDim ?? valueInputDim,
      valueInputDim,
      dropout: a.dropout ?? 0,
      attentionAxes: a.attentionAxes,
      weightDtype: a.weightDtype ?? 'f32',
      useGate: a.useGate,
      slidingWindow: a.slidingWindow,
    });
    const c = this.#sizes();
    this.#layer = new this.#backend.MultiHeadAttention({
      ...coreConfigFromKeras(c),
      ...(a.dropout !== undefined ? { dropout: a.dropout } : {}),
      ...(a.seed !== undefined ? { seed: a.seed } : {}),
      ...(a.weightDtype !== undefined ? { weightDtype: a.weightDtype } : {}),
    });
    // Usable once built, as Keras' layer: its initializers' weights (seeded by `seed`), until setWeights.
    const seed = a.seed ?? Math.floor(Math.random() * 2 ** 32);
    const fresh = initialKerasWeights(kerasWeightShapes(c), a.kernelInitializer, a.biasInitializer, seed);
    this.#layer.loadStateDict(stateDictFromKerasLayout(fresh, c));
  }

  // The built layer's sizes as keras/layout.js takes them: a tuple outputShape as its product
  // (the core's outputDim) and its axes (outputDims).
  #sizes() {
    const c = this.#config, dims = Array.isArray(c.outputShape) ? [...c.outputShape] : null;
    return { ...c, outputShape: dims ? dims.reduce((a, b) => a * b, 1) : c.outputShape, outputDims: dims };
  }

  // A call's result with a tuple outputShape: the output's last axis unfolded into its axes.
  #withOutputDims(result) {
    const dims = Array.isArray(this.#config.outputShape) ? this.#config.outputShape : null;
    if (!dims) return result;
    const { output } = result;
    return { ...result, output: { data: output.data, shape: [...output.shape.slice(0, -1), ...dims] } };
  }

  #built(what) {
    if (!this.#layer) {
      throw new TypeError(`${what}: the layer is not built yet: its input sizes come from the first call() or from `
        + 'setWeights() with { data, shape } tensors, or pass queryDim (and keyInputDim, valueInputDim) to the constructor');
    }
    return this.#layer;
  }

  /** False until the input sizes are known (given, or taken from the first call or setWeights). */
  get built() { return this.#layer !== null; }

  /** Every argument resolved. */
  get config() { this.#built('KerasMultiHeadAttention.config'); return this.#config; }

  /** Keras' supports_masking: the layer takes the inputs' implicit masks (queryMask, valueMask, keyMask). */
  get supportsMasking() { return true; }

  /** Keras' from_config: a layer made from getConfig()'s arguments. */
  static fromConfig(config) { return new this(config); }

  /** Keras' get_config: the constructor's arguments, so fromConfig(getConfig()) makes the same layer. */
  getConfig() {
    const { seed, weightDtype, queryDim, keyInputDim, valueInputDim, ...rest } = this.#args;
    return {
      numHeads: rest.numHeads, keyDim: rest.keyDim, valueDim: rest.valueDim ?? rest.keyDim, dropout: rest.dropout ?? 0,
      useBias: rest.useBias ?? true, useGate: rest.useGate, ...(rest.outputShape !== undefined ? { outputShape: rest.outputShape } : {}),
      attentionAxes: rest.attentionAxes ? [...rest.attentionAxes] : null, slidingWindow: rest.slidingWindow,
      kernelInitializer: rest.kernelInitializer, biasInitializer: rest.biasInitializer,
      ...(seed !== undefined ? { seed } : {}), ...(weightDtype !== undefined ? { weightDtype } : {}),
      ...(rest.kernelConstraint ? { kernelConstraint: serializeConstraint(rest.kernelConstraint) } : {}),
      ...(rest.biasConstraint ? { biasConstraint: serializeConstraint(rest.biasConstraint) } : {}),
      ...(queryDim !== undefined ? { queryDim } : {}), ...(keyInputDim !== undefined ? { keyInputDim } : {}),
      ...(valueInputDim !== undefined ? { valueInputDim } : {}),
    };
  }

  /**
   * Keras' compute_output_shape(query_shape, value_shape, key_shape = value_shape): the query's shape
   * with the last axis the output's; key and value must agree in every axis but the last.
   */
  computeOutputShape(queryShape, valueShape, keyShape = null) {
    checkKeyValue(valueShape, keyShape ?? valueShape, 'computeOutputShape');
    return outputShapeOf(queryShape, this.#args.outputShape);
  }

  /** The underlying PyTorch-style layer (its stateDictShapes(), forward(), caches). */
  get layer() { return this.#built('KerasMultiHeadAttention.layer'); }

  /** Keras' weight names and shapes, in the order of get_weights(). */
  weightShapes() {
    this.#built('weightShapes');
    return kerasWeightShapes(this.#sizes());
  }

  /**
   * Keras' layer.weights, described: { name ('multi_head_attention/query/kernel', Keras' variable
   * path), shape, constraint (the kernelConstraint / biasConstraint that applies to it, or null) }
   * in get_weights() order. The values are getWeights()'.
   */
  get weights() {
    if (!this.#layer) return [];  // (Keras' unbuilt layer has none yet)
    const a = this.#args;
    return Object.entries(this.weightShapes()).map(([name, shape]) => ({
      name: `multi_head_attention/${name}`, shape,
      constraint: (name.endsWith('/kernel') ? a.kernelConstraint : a.biasConstraint) ?? null,
    }));
  }

  /**
   * Keras weights: the list get_weights() returns ([{ data, shape }] or plain Float32Arrays, in
   * its order: query kernel, bias, key kernel, bias, value kernel, bias, output kernel, bias;
   * no biases with useBias: false), or a map { 'query/kernel': ..., ... }. The layer has no
   * optimizer: setWeights is its weight update, so kernelConstraint / biasConstraint project the
   * weights given here, as Keras' optimizer projects them after each step.
   */
  setWeights(weights) {
    if (!this.#layer) this.#build(inputSizesOf(weights));
    const expected = this.weightShapes();
    const names = Object.keys(expected);
    let byName;
    if (Array.isArray(weights)) {
      if (weights.length !== names.length) {
        throw new RangeError(`setWeights: expected ${names.length} arrays (${names.join(', ')}), got ${weights.length}`);
      }
      byName = Object.fromEntries(names.map((name, i) => [name, weights[i]]));
    } else {
      checkPlainObject('setWeights: weights', weights);
      checkKnownKeys('weights', weights, names);
      byName = weights;
    }
    const data = {};
    for (const name of names) {
      const entry = byName[name];
      if (entry === undefined) throw new TypeError(`setWeights: missing '${name}' (shape [${expected[name].join(', ')}])`);
      const array = entry instanceof Float32Array ? entry : entry?.data;
      if (!(array instanceof Float32Array)) throw new TypeError(`setWeights: '${name}' must be a Float32Array or { data, shape }, got ${describe(entry)}`);
      const want = expected[name];
      if (entry.shape && entry.shape.join(',') !== want.join(',')) {
        throw new RangeError(`setWeights: '${name}' must have shape [${want.join(', ')}], got [${entry.shape.join(', ')}]`);
      }
      const count = want.reduce((a, b) => a * b, 1);
      if (array.length !== count) throw new RangeError(`setWeights: '${name}' needs ${count} floats (shape [${want.join(', ')}]), got ${array.length}`);
      const constraint = name.endsWith('/kernel') ? this.#args.kernelConstraint : this.#args.biasConstraint;
      data[name] = constraint ? constraint.apply(array, want) : array;
    }
    this.#layer.loadStateDict(stateDictFromKerasLayout(data, this.#sizes()));
    return this;
  }

  /**
   * The weights as Keras' get_weights() returns them: [{ data, shape }] in its order (query
   * kernel, bias, key kernel, bias, value kernel, bias, output kernel, bias; no biases with
   * useBias: false) and layouts, fresh copies. setWeights(getWeights()) changes nothing.
   */
  getWeights() {
    const weights = kerasLayoutFromStateDict(this.#built('getWeights').stateDict(), this.#sizes());
    return Object.entries(this.weightShapes()).map(([name, shape]) => ({ data: weights[name], shape }));
  }

  /**
   * call(query [B, T, queryDim], value [B, S, valueInputDim], key = value [B, S, keyInputDim],
   * { attentionMask: [B, T, S] (or [T, S], or [B, S] per batch row), 1 / true = attend;
   *   useCausalMask; returnAttentionScores; training (dropout on, with the constructor's dropout);
   *   seed (dropout's); capture, patch (the steps, as forward's: docs/steps.md) })
   *   -> { output [B, T, outputShape], scores [B, H, T, S] | null, captured? } (scores before dropout, as Keras').
   * A query row that may attend to nothing gives zeros (as Keras 3; the tfjs-layers port differs).
   */
  call(query, value, key = null, options = {}) {
    if (this.#backend.asyncOnly) {
      throw new TypeError('a WebGPU layer runs asynchronously (no hidden synchronous readback); '
        + 'use await layer.callAsync(query, value, key, options)');
    }
    return this.#call(query, value, key, options);
  }

  /** call as a promise (the layers' forwardAsync): the same result, or call's error named 'callAsync: ...'. */
  async callAsync(query, value, key = null, options = {}) {
    try {
      return await this.#call(query, value, key, options);
    } catch (error) {
      throw withCallName(error, 'callAsync', ['call', ...INNER_CALLS]);
    }
  }

  // call's work: a result, or (asyncOnly) a promise of it.
  #call(query, value, key, options) {
    checkTensor('query', query, { expected: '[B, T, queryDim]' });
    checkTensor('value', value, { expected: '[B, S, valueInputDim]' });
    checkTensor('key', key, { expected: '[B, S, keyInputDim]', optional: true });
    if (key) checkKeyValue(value.shape, key.shape, 'call');
    checkPlainObject('call: options', options);
    checkKnownKeys('options', options, CALL_KEYS);
    checkBoolean('useCausalMask', options.useCausalMask);
    checkBoolean('returnAttentionScores', options.returnAttentionScores);
    checkBoolean('checkFinite', options.checkFinite);
    if (!this.#layer) {
      const last = (t) => t?.shape[t.shape.length - 1];
      this.#build({ queryDim: last(query), valueInputDim: last(value), keyInputDim: last(key) });
    }
    if (options.checkFinite) checkFinite({ query, value, key });
    if (query.shape.length > 3 || this.#config.attentionAxes) {
      const layout = attentionLayout(query.shape.length, this.#config.attentionAxes, 'call');
      if (query.shape.length > 3) {
        if (options.capture || options.patch) {
          throw new TypeError(`call: ${options.capture ? 'capture' : 'patch'}: not with inputs of rank > 3 (attentionAxes); pass [B, T, features]`);
        }
        return then(this.#callOverAxes(query, value, key, options, layout), (r) => this.#withOutputDims(r));
      }
    }
    return then(this.#call3d(query, value, key, options), (r) => this.#withOutputDims(r));
  }

  #call3d(query, value, key, options) {
    const mask = this.#masks(options, query, value);
    // Keras returns the scores before dropout (its _dropout_layer follows the softmax).
    const forward = (...args) => (this.#backend.asyncOnly ? this.#layer.forwardAsync(...args) : this.#layer.forward(...args));
    const result = inKerasWords(() => forward(query, key ?? value, value, {
      ...mask, causal: options.useCausalMask ?? false,
      needWeights: options.returnAttentionScores ?? false, averageWeights: false,
      training: options.training ?? false, weightsBeforeDropout: true,
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.capture !== undefined ? { capture: options.capture } : {}),
      ...(options.patch !== undefined ? { patch: options.patch } : {}),
    }));
    // The output carries the query's implicit mask, as Keras' does.
    const queryMask = options.queryMask ? { mask: { data: Uint8Array.from(options.queryMask.data, Boolean), shape: [...options.queryMask.shape] } } : {};
    return then(result, ({ output, weights, captured }) => ({ output, scores: weights, ...(captured ? { captured } : {}), ...queryMask }));
  }

  // attentionAxes (or an input of rank > 3): the other inner axes fold into the batch, the
  // attended ones into the sequence; output and scores are unfolded to Keras' shapes.
  #callOverAxes(query, value, key, options, layout) {
    const rank = query.shape.length;
    for (const [name, t] of Object.entries({ value, key })) {
      if (!t) continue;
      checkSameRank(name, t.shape, rank, 'call');
      checkBatchAxes(name, t.shape, query.shape, layout, 'call');
    }
    for (const name of ['attentionMask', 'queryMask', 'valueMask', 'keyMask']) {
      if (options[name] != null) throw new Error(`call: ${name} is not supported with attentionAxes on inputs of rank > 3 yet`);
    }
    if (options.useCausalMask) checkCausalOverAxes(query.shape, value.shape, layout, 'call');
    const fold = (t) => (t ? foldForAttention(t, layout) : null);
    return then(this.#call3d(fold(query), fold(value), fold(key), options), (result) => this.#unfold(result, query, value, layout));
  }

  #unfold({ output, scores }, query, value, layout) {
    const kept = layout.order.slice(0, -1).map((a) => query.shape[a]);
    const unfolded = permute(output.data, [...kept, output.shape[2]], layout.inverse);
    return {
      output: unfolded,
      scores: scores && { data: scores.data, shape: scoresShapeOf(query.shape, value.shape, layout, this.#config.numHeads) },
    };
  }

  // Keras' attention_mask and implicit masks (1 = attend) as the core's blocking mask (layout.js).
  #masks(options, query, value) {
    const given = {};
    for (const [name, expected] of [['attentionMask', '[T, S], [B, T, S] or [B, H, T, S]'], ['queryMask', '[B, T]'],
      ['valueMask', '[B, S]'], ['keyMask', '[B, S]']]) {
      if (options[name] != null) given[name] = checkMask(name, options[name], { expected });
    }
    const [B, T] = query.shape, S = value.shape[value.shape.length - 2], H = this.#config.numHeads;
    const { error, ...masks } = coreMasksFromKeras(given, { B, T, S, H });
    if (error) throw new RangeError(maskErrorMessage(error));
    return masks;
  }

  /** Frees the layer's wasm memory. */
  dispose() { this.#layer?.dispose(); }

  [disposeSymbol]() { this.dispose(); }
}

// Every error of the constructor and of the Keras calls starts with the call's name.
const NamedKerasMultiHeadAttention = nameErrorsByCall(KerasMultiHeadAttention, 'KerasMultiHeadAttention', KERAS_METHODS, INNER_CALLS);

/**
 * The KerasMultiHeadAttention class of one loaded module, over its MultiHeadAttention. `asyncOnly`:
 * that class has forwardAsync only (WebGPU's).
 */
export function defineKerasMultiHeadAttention(MultiHeadAttention, { asyncOnly = false } = {}) {
  const backend = Object.freeze({ MultiHeadAttention, asyncOnly });
  return class KerasMultiHeadAttention extends NamedKerasMultiHeadAttention {
    constructor(config) { super(config, backend); }
  };
}

/** The input sizes an unbuilt layer takes from get_weights()-style tensors' shapes (Keras layouts). */
function inputSizesOf(weights) {
  const shapes = Array.isArray(weights)
    ? weights.map((w) => w?.shape).filter((shape) => shape?.length === 3)  // the kernels, in get_weights() order
    : ['query/kernel', 'key/kernel', 'value/kernel'].map((name) => weights?.[name]?.shape);
  const [query, key, value] = shapes;
  if (!Array.isArray(query)) {
    throw new TypeError('the layer is not built yet and the query kernel has no shape: pass { data, shape } tensors '
      + '(as get_weights() gives), call call() first, or pass queryDim (and keyInputDim, valueInputDim) to the constructor');
  }
  return { queryDim: query[0], keyInputDim: key?.[0], valueInputDim: value?.[0] };
}

// PyTorch's names in the core's messages, and Keras' for the same things.
const KERAS_WORDS = [['loadStateDict()', 'setWeights()'], [/\bembedDim\b/g, 'queryDim'], [/\bkdim\b/g, 'keyInputDim'],
  [/\bvdim\b/g, 'valueInputDim']];

/** Runs the PyTorch-side layer (or awaits it), its errors worded for Keras (setWeights, queryDim). */
function inKerasWords(run) {
  const reword = (error) => {
    if (error instanceof Error) {
      for (const [pytorch, keras] of KERAS_WORDS) error.message = error.message.replace(pytorch, keras);
    }
    return error;
  };
  try {
    const result = run();
    return result instanceof Promise ? result.catch((error) => { throw reword(error); }) : result;
  } catch (error) {
    throw reword(error);
  }
}
