// A user's checkpoint as a library: loadModel() reads Hugging Face's files into a HookedModel,
// whose forward, runWithCache and runWithHooks pass TransformerLens' hook points
// (hook-points.js), and whose generate() decodes through every layer's KV cache. The attention runs
// on the module given (wasm, or WebGPU with a wasm module for the other products). No DOM: page,
// worker and Node.
import { ActivationCache } from './activation-cache.js';
import { closeCheckpoint, openCheckpoint } from './checkpoint.js';
import { HookedForward } from './hooked-forward.js';
import { hookPoints, unknownHookError } from './hook-points.js';
import { HookRun } from './hook-run.js';
import { CheckpointTokenizer } from './tokenizer.js';
import { estimateCheckpoint, tooBigError, WEIGHT_DTYPES } from './memory-estimate.js';
import { CheckpointModel } from './transformer.js';
import { checkKnownKeys, checkPlainObject } from '../core/validate.js';

/** An options object of `what` holding only `known` keys (one not implemented is refused by name). */
export function checkOptions(what, options, known) {
  checkPlainObject(`${what}: options`, options);
  checkKnownKeys(what, options, known);
  return options;
}

/** ids as an Int32Array of token ids inside the vocabulary; errors name `what`. */
export function checkIds(what, ids, vocabSize, maxPositions) {
  if (!(Array.isArray(ids) || ids instanceof Int32Array || ids instanceof Uint32Array)) {
    throw new TypeError(`${what}: ids must be an array or Int32Array of token ids, got ${ids === null ? 'null' : typeof ids === 'string' ? 'a string (encode it first: model.tokenizer.encode(text))' : typeof ids}`);
  }
  if (ids.length === 0) throw new RangeError(`${what}: ids must hold at least one token`);
  if (ids.length > maxPositions) throw new RangeError(`${what}: ${ids.length} tokens; the model takes at most ${maxPositions} (max_position_embeddings / n_positions)`);
  const out = new Int32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new RangeError(`${what}: ids[${i}] = ${id} is not a token id of the vocabulary [0, ${vocabSize})`);
    }
    out[i] = id;
  }
  return out;
}

/** runWithCache's names: undefined for all, else a list (or one name, or a predicate) of hook names. */
function namesToKeep(names, points) {
  if (names === undefined || names === null) return 'all';
  if (typeof names === 'function') return new Set([...points.keys()].filter((name) => names(name)));
  const list = typeof names === 'string' ? [names] : names;
  if (!Array.isArray(list)) throw new TypeError(`runWithCache: names must be an array of hook names, one name or a function of a name, got ${typeof names}`);
  list.forEach((name, i) => {
    if (!points.has(name)) throw unknownHookError(`runWithCache: names[${i}]`, name, points);
  });
  return new Set(list);
}

/** runWithHooks' hooks: { name: fn } as a Map, each name known and each value a function. */
function hooksMap(hooks, points) {
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) {
    throw new TypeError('runWithHooks: hooks must be an object of { hookName: function(activation, { name }) }');
  }
  const map = new Map();
  for (const [name, fn] of Object.entries(hooks)) {
    if (!points.has(name)) throw unknownHookError('runWithHooks: hooks', name, points);
    if (typeof fn !== 'function') throw new TypeError(`runWithHooks: hooks[${JSON.stringify(name)}] must be a function, got ${typeof fn}`);
    map.set(name, fn);
  }
  return map;
}

/** The model's config as the API reports it. */
function publicConfig(architecture, config) {
  const { family, numLayers, embedDim, numHeads, numKvHeads, headDim, vocabSize, maxPositions, hiddenDim } = architecture;
  return Object.freeze({
    family, modelType: config.model_type, numLayers, embedDim, numHeads, numKvHeads, headDim, vocabSize,
    maxPositions, hiddenDim, normalization: architecture.norm,
    ...(architecture.encoder ? { encoder: true, mlmHead: architecture.mlmHead, typeVocabSize: architecture.typeVocabSize } : {}),
  });
}

/** A list of L integers (an array or typed array) or undefined; errors name `what`. */
function integerList(what, list, L, ok, expected) {
  if (list === undefined || list === null) return null;
  if (!(Array.isArray(list) || ArrayBuffer.isView(list))) throw new TypeError(`${what} must be an array of ${L} numbers, got ${typeof list}`);
  if (list.length !== L) throw new RangeError(`${what} must hold one number per token (${L}), got ${list.length}`);
  for (let i = 0; i < L; i++) {
    if (!ok(list[i])) throw new RangeError(`${what}[${i}] = ${list[i]}: ${expected}`);
  }
  return Array.from(list);
}

/**
 * An encoder run's inputs beside the ids: `attentionMask` (Hugging Face's: 1 a token, 0 padding,
 * whose keys no query then sees) as the key padding mask (1 = padding), and `tokenTypeIds`.
 * A decoder takes neither.
 */
function encoderInputs(what, architecture, { attentionMask, tokenTypeIds }, L) {
  if (!architecture.encoder) {
    for (const [key, value] of [['attentionMask', attentionMask], ['tokenTypeIds', tokenTypeIds]]) {
      if (value !== undefined) throw new TypeError(`${what}: ${key} is for encoders (bert, roberta, distilbert); a ${architecture.family} decoder runs one unpadded sequence causally`);
    }
    return {};
  }
  const mask = integerList(`${what}: attentionMask`, attentionMask, L, (v) => v === 0 || v === 1, 'must be 1 (a token) or 0 (padding)');
  if (mask && !mask.includes(1)) throw new RangeError(`${what}: attentionMask is 0 everywhere: no key is left to attend to`);
  const types = integerList(`${what}: tokenTypeIds`, tokenTypeIds, L,
    (v) => Number.isInteger(v) && v >= 0 && v < architecture.typeVocabSize, `must be a token type in [0, ${architecture.typeVocabSize}) (type_vocab_size)`);
  return {
    padding: mask && mask.includes(0) ? Uint8Array.from(mask, (v) => 1 - v) : null,
    tokenTypes: types,
  };
}

export class HookedModel {
  #forward;
  #points;
  #disposed = false;

  /** Use loadModel(); this takes a CheckpointModel and its tokenizer. */
  constructor(transformer, tokenizer, config) {
    /** The CheckpointModel underneath (the page's views read its forward directly). */
    this.transformer = transformer;
    this.tokenizer = tokenizer;
    this.config = publicConfig(transformer.architecture, config);
    this.#points = hookPoints(transformer.architecture);
    this.#forward = new HookedForward(transformer);
  }

  /** Every hook point's name, in the order a forward passes them. */
  get hookNames() { return [...this.#points.keys()]; }

  /** A hook point's shape for a run of `L` tokens. */
  hookShape(name, L) {
    if (!this.#points.has(name)) throw unknownHookError('hookShape', name, this.#points);
    return this.#points.get(name)(L);
  }

  #alive(what) {
    if (this.#disposed) throw new Error(`${what}: the model was disposed`);
  }

  #ids(what, ids) {
    this.#alive(what);
    return checkIds(what, ids, this.config.vocabSize, this.config.maxPositions);
  }

  #logits(data, L) {
    return { data, shape: [1, L, this.config.vocabSize] };
  }

  /** What a run gives: { logits }, or an encoder without a masked-LM head's { logits: null, lastHiddenState [1, L, E] }. */
  #outputs({ logits, residual }, L) {
    if (logits) return { logits: this.#logits(logits, L) };
    return { logits: null, lastHiddenState: { data: residual, shape: [1, L, this.config.embedDim] } };
  }

  /** The options an encoder's runs add (a decoder's refuse them by name). */
  #encoderKeys(what, options) {
    if (!this.config.encoder && options && typeof options === 'object') encoderInputs(what, this.transformer.architecture, options, 0);
    return this.config.encoder ? ['attentionMask', 'tokenTypeIds'] : [];
  }

  /** The run's options the encoders add (attentionMask, tokenTypeIds), checked. */
  #inputs(what, options, L) {
    return encoderInputs(what, this.transformer.architecture, options, L);
  }

  /**
   * The logits of one sequence: { logits: { data, shape: [1, pos, vocab] } } (an encoder's
   * masked-LM logits; an encoder without the head gives { logits: null, lastHiddenState }).
   * Encoders take `attentionMask` and `tokenTypeIds`.
   */
  async forward(ids, options = {}) {
    checkOptions('forward', options, this.#encoderKeys('forward', options));
    const checked = this.#ids('forward', ids);
    const inputs = this.#inputs('forward', options, checked.length);
    const out = await this.#forward.run(checked, new HookRun(this.#points, checked.length, { what: 'forward' }), inputs);
    return this.#outputs(out, checked.length);
  }

  /**
   * The logits and the activations at `names` (every hook point when left out):
   * { logits, cache }, cache.get(name) -> { data, shape }.
   */
  async runWithCache(ids, options = {}) {
    const { names } = checkOptions('runWithCache', options, ['names', ...this.#encoderKeys('runWithCache', options)]);
    const checked = this.#ids('runWithCache', ids);
    const inputs = this.#inputs('runWithCache', options, checked.length);
    const run = new HookRun(this.#points, checked.length, { keep: namesToKeep(names, this.#points), what: 'runWithCache' });
    const out = await this.#forward.run(checked, run, inputs);
    return { ...this.#outputs(out, checked.length), cache: new ActivationCache(run.kept, checked) };
  }

  /**
   * The logits with `hooks` ({ hookName: (activation, { name }) => replacement | undefined }) run
   * at their points: { logits }. A hook may also keep a cache: `names` as runWithCache's.
   */
  async runWithHooks(ids, options = {}) {
    const { hooks = {}, names = null } = checkOptions('runWithHooks', options, ['hooks', 'names', ...this.#encoderKeys('runWithHooks', options)]);
    const checked = this.#ids('runWithHooks', ids);
    const inputs = this.#inputs('runWithHooks', options, checked.length);
    const run = new HookRun(this.#points, checked.length, {
      hooks: hooksMap(hooks, this.#points), keep: names === null ? null : namesToKeep(names, this.#points), what: 'runWithHooks',
    });
    const out = await this.#forward.run(checked, run, inputs);
    return { ...this.#outputs(out, checked.length), ...(names === null ? {} : { cache: new ActivationCache(run.kept, checked) }) };
  }

  /**
   * Internal to the workflows (patching.js): a run that starts inside the model, with a HookRun.
   * `from`: { layer, stage: 'pre' | 'mid', resid }; output 'logits' | 'residual' | 'both'.
   */
  async runFrom(ids, run, options) {
    this.#alive('activationPatching');
    refuseEncoder('activationPatching', this.config, 'its sweeps start the forward inside a pre-LN residual stream');
    return this.#forward.run(ids, run, options);
  }

  /** A HookRun over this model's points (for the workflows). */
  hookRun(L, options) { return new HookRun(this.#points, L, options); }

  /**
   * Greedy decoding of up to `maxNewTokens` tokens after `ids`, one token a step through every
   * layer's KV cache. `onToken(id, { index, text })` after each (returning false stops);
   * `stopAtEos` (default true) stops after the EOS token. Resolves to { ids: the new ids, text }.
   */
  async generate(ids, options = {}) {
    const { maxNewTokens = 20, onToken = null, stopAtEos = true, signal = null } = checkOptions('generate', options, ['maxNewTokens', 'onToken', 'stopAtEos', 'signal']);
    refuseEncoder('generate', this.config, 'an encoder predicts the tokens at its [MASK] positions (forward), it does not decode left to right');
    const prompt = this.#ids('generate', ids);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 0) {
      throw new RangeError(`generate: maxNewTokens must be a non-negative integer, got ${maxNewTokens}`);
    }
    const total = Math.min(prompt.length + maxNewTokens, this.config.maxPositions);
    const model = this.transformer;
    const caches = model.createCaches(total);
    const generated = [];
    try {
      let { logits } = await model.forward(Array.from(prompt), { caches, logits: 'last', lens: false });
      while (prompt.length + generated.length < total) {
        if (signal?.aborted) throw abortError('generate');
        let next = 0;
        for (let v = 1; v < logits.length; v++) if (logits[v] > logits[next]) next = v;
        generated.push(next);
        const keepGoing = await onToken?.(next, { index: generated.length - 1, text: this.tokenizer.decodeOne(next) });
        if (keepGoing === false || (stopAtEos && next === this.tokenizer.eosTokenId)) break;
        if (prompt.length + generated.length >= total) break;
        ({ logits } = await model.forward([next], { caches, logits: 'last', lens: false }));
      }
    } finally {
      for (const cache of caches) cache.dispose();
    }
    return { ids: generated, text: this.tokenizer.decode(generated) };
  }

  /** Frees the model's wasm (and GPU) memory. */
  dispose() {
    this.transformer.dispose();
    this.#disposed = true;
  }
}

/** The TypeError of a workflow that makes no sense on an encoder (BERT, RoBERTa), naming it and why. */
export function refuseEncoder(what, config, why) {
  if (config.encoder) throw new TypeError(`${what}: not supported on an encoder (${config.modelType}): ${why}`);
}

/** An Error named AbortError, as fetch() rejects with on an aborted signal. */
export function abortError(what) {
  const error = new Error(`${what}: aborted`);
  error.name = 'AbortError';
  return error;
}

/** The two modules a model runs on: attention on `mha`, the other products on wasm. */
function modulesOf(mha, wasm) {
  if (!mha || typeof mha.MultiHeadAttention !== 'function') {
    throw new TypeError('loadModel: mha must be the module init() resolved to (wasm or WebGPU)');
  }
  if (mha.backend === 'webgpu') {
    if (!wasm || typeof wasm.Linear !== 'function') {
      throw new TypeError("loadModel: options.wasm: a WebGPU module runs the attention; the model's other products need the wasm module (await init()) as options.wasm");
    }
    return { attention: mha, wasm };
  }
  if (typeof mha.Linear !== 'function') throw new TypeError('loadModel: mha must be the module init() resolved to (wasm or WebGPU)');
  return { attention: mha, wasm: mha };
}

/** The KV caches' length the estimate counts unless `contextLength` says: 2048 tokens, or the model's positions if fewer. */
const DEFAULT_CONTEXT = 2048;

/** loadModel's and estimateModelMemory's weightDtype and contextLength, checked; errors name `what`. */
function precisionOptions(what, { weightDtype, contextLength }, architecture) {
  if (weightDtype !== undefined && weightDtype !== 'auto' && !WEIGHT_DTYPES.includes(weightDtype)) {
    throw new TypeError(`${what}: weightDtype must be one of 'f32', 'f16', 'int8', 'q4', 'auto' (the precision every matrix is held in), got ${JSON.stringify(weightDtype)}`);
  }
  if (contextLength !== undefined && (!Number.isInteger(contextLength) || contextLength < 1)) {
    throw new RangeError(`${what}: contextLength must be a positive integer (the tokens the KV caches are sized for), got ${JSON.stringify(contextLength)}`);
  }
  return { weightDtype, contextLength: contextLength ?? Math.min(DEFAULT_CONTEXT, architecture.maxPositions) };
}

/** The wasm heap a module can still give: { available, inUse } (4 GiB, nothing in use, without one). */
function heapRoom(wasm) {
  const limit = wasm?.heapLimitBytes?.() ?? 2 ** 32;
  const inUse = wasm?.heapAllocatedBytes?.() ?? 0;
  return { available: Math.max(0, limit - inUse), inUse };
}

/**
 * The checkpoint's estimate (memory-estimate.js) against the module's heap; throws, before any
 * weight is read, when the chosen precision cannot fit.
 */
export function checkpointEstimate(what, checkpoint, wasm, options) {
  const { weightDtype, contextLength } = precisionOptions(what, options, checkpoint.architecture);
  const { available, inUse } = heapRoom(wasm);
  const estimate = estimateCheckpoint(checkpoint, { weightDtype, contextLength, available });
  if (!estimate.fits) throw tooBigError(what, estimate, inUse);
  return estimate;
}

/**
 * A HookedModel from a checkpoint already opened (openCheckpoint()): `onProgress({ phase: 'layers',
 * done, total })` after each layer; `signal` (an AbortSignal) stops between layers; `tokenizer`
 * stands in for tokenizer.json's (the page's default model has its own characters); `weightDtype`
 * ('f32' | 'f16' | 'int8' | 'q4'; default the stored precision) is what every matrix is held in.
 */
export async function modelFromCheckpoint(mha, checkpoint, { wasm = null, onProgress = null, signal = null, tokenizer = null, weightDtype = null } = {}) {
  const modules = modulesOf(mha, wasm);
  if (!tokenizer && !checkpoint.tokenizerJson) throw new TypeError('loadModel: tokenizer.json is missing');
  tokenizer ??= new CheckpointTokenizer(checkpoint.tokenizerJson, checkpoint.config);
  const transformer = await CheckpointModel.create(modules.attention, modules.wasm, checkpoint, {
    weightDtype,
    afterLayer: async (done, total) => {
      await onProgress?.({ phase: 'layers', done, total, name: `layer ${done}` });
      if (signal?.aborted) throw abortError('loadModel');
    },
  });
  return new HookedModel(transformer, tokenizer, checkpoint.config);
}

/**
 * Loads a Hugging Face checkpoint's files (config.json, model.safetensors or the index with its
 * shards, tokenizer.json) as a HookedModel, reading each tensor when its layer is built. files:
 * File / Blob objects, { name, bytes } or (Node) { name, path }. options: { wasm (with a WebGPU
 * mha), weightDtype ('f32' | 'f16' | 'int8' | 'q4' | 'auto'), contextLength (the estimate's KV
 * caches), onProgress({ phase, done, total, name }), signal }. A model that cannot fit the wasm
 * heap at weightDtype is refused before any weight is read.
 */
export async function loadModel(mha, files, options = {}) {
  checkOptions('loadModel', options, ['wasm', 'onProgress', 'signal', 'weightDtype', 'contextLength']);
  const modules = modulesOf(mha, options.wasm);
  const checkpoint = await openCheckpoint(files, {
    encoders: true,
    onProgress: (done, total, name) => options.onProgress?.({ phase: 'weights', done, total, name }),
  });
  try {
    const { weightDtype } = checkpointEstimate('loadModel', checkpoint, modules.wasm, options);
    await options.onProgress?.({ phase: 'estimate', done: 1, total: 1, name: weightDtype });
    const model = await modelFromCheckpoint(mha, checkpoint, { ...options, weightDtype });
    // The files stay open while the model lives: what it reads again later (the q/k projections
    // before a q/k norm, on first use of hook_q / hook_k) comes from them.
    model.transformer.closeWith(() => closeCheckpoint(checkpoint));
    return model;
  } catch (error) {
    await closeCheckpoint(checkpoint);
    throw error;
  }
}

/**
 * What loading `files` would need of the wasm heap, from their headers alone: { weightDtype (the
 * one 'auto' picks, or the one given), storedDtype, parameters, contextLength, bytes: { weights,
 * caches, work, total }, available, fits, byDtype }. options: { weightDtype, contextLength, wasm
 * (the module whose heap is asked; without it, an empty 4 GiB heap) }.
 */
export async function estimateModelMemory(files, options = {}) {
  checkOptions('estimateModelMemory', options, ['wasm', 'weightDtype', 'contextLength']);
  const checkpoint = await openCheckpoint(files, { encoders: true });
  try {
    const { weightDtype, contextLength } = precisionOptions('estimateModelMemory', options, checkpoint.architecture);
    return estimateCheckpoint(checkpoint, { weightDtype, contextLength, available: heapRoom(options.wasm).available });
  } finally {
    await closeCheckpoint(checkpoint);
  }
}
