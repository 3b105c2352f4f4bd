// The worker's side of the "Your model" mode: loads a checkpoint's files, runs a text through it
// (every head, the Steps view's steps, ablations and patches, the logit lens, the prediction) and
// generates token by token through every layer's KV cache. Each answer has the shape the page's
// views draw (as web/modes/generate-worker.js' run). Loading and generating pause between steps
// so that a cancel message can stop them. An encoder's run is encoder-run.js'. No DOM.
import { openCheckpoint } from '../../bindings/js/models/checkpoint.js';
import { checkpointEstimate, modelFromCheckpoint } from '../../bindings/js/models/hooked-model.js';
import { zPatch } from '../z-patch.js';
import { encoderRun } from './encoder-run.js';
import { topTokens } from './top-tokens.js';

export class CancelledError extends Error {
  constructor() {
    super('cancelled');
    this.name = 'CancelledError';
  }
}

export class YourModelSession {
  #context;           // () => { wasm, attention, backend }: the modules the page's backend choice gives
  #checkpoint = null;
  #model = null;
  #modelBackend = null;
  #cancelled = false;
  tokenizer = null;

  /**
   * @param context () => ({ wasm, attention, backend }): the wasm module, the module to run the
   *   heads on (the wasm one or the WebGPU one) and its name
   * @param pause () => Promise: lets queued messages (cancel) in
   */
  constructor(context, pause) {
    this.#context = context;
    this.pause = pause;
  }

  async #checkpointPoint() {
    await this.pause();
    if (this.#cancelled) throw new CancelledError();
  }

  cancel() {
    this.#cancelled = true;
    return { cancelled: true };
  }

  /**
   * files: File objects (read a tensor at a time, never whole) or { name, bytes }; weightDtype
   * ('f32' | 'f16' | 'int8' | 'q4' | 'auto', default the stored precision); progress({ phase,
   * done, total, name, estimate }): 'weights' after each header, 'estimate' (the memory the model
   * needs: refused before any weight is read when it cannot fit), 'layers' after each layer.
   */
  async load({ files, weightDtype }, progress = () => {}) {
    this.#cancelled = false;
    // encoders: BERT and RoBERTa load too (their views come from runWithCache: #runEncoder).
    const checkpoint = await openCheckpoint(files, { encoders: true, onProgress: (done, total, name) => progress({ phase: 'weights', done, total, name }) });
    if (!checkpoint.tokenizerJson) throw new TypeError('loadModel: tokenizer.json is missing');
    const estimate = checkpointEstimate('loadModel', checkpoint, this.#context().wasm, { weightDtype });
    checkpoint.weightDtype = estimate.weightDtype;
    progress({ phase: 'estimate', done: 1, total: 1, name: estimate.weightDtype, estimate });
    await this.#checkpointPoint();
    // The model it had is freed before the new one is built (both would crowd a tab's memory), but
    // its checkpoint is kept until the new one stands: a refusal or a cancel while building goes
    // back to it (rebuilt on the next run).
    const previous = this.#checkpoint;
    this.dispose();
    this.#checkpoint = checkpoint;
    try {
      await this.#modelOnBackend(async (done, total) => {
        progress({ phase: 'layers', done, total, name: `layer ${done}` });
        await this.#checkpointPoint();
      });
    } catch (error) {
      this.#checkpoint = previous;
      throw error;
    }
    return { model: this.#summary(), config: this.#config(), backend: this.#modelBackend };
  }

  /** The page's line on the model: CheckpointModel's summary, plus encoder: true for BERT / RoBERTa. */
  #summary() {
    const summary = this.#model.transformer.summary;
    return this.#checkpoint.architecture.encoder ? { ...summary, encoder: true, mlmHead: Boolean(this.#model.config.mlmHead) } : summary;
  }

  /** True when the loaded model is an encoder (BERT, RoBERTa). */
  get encoder() { return Boolean(this.#checkpoint?.architecture.encoder); }

  /** The loaded model (mha-wasm/models' HookedModel) on the backend it was last run on, or null. */
  get model() { return this.#model; }

  /** The model on the page's backend now (rebuilt from the kept tensors after a switch). */
  async #hookedOnBackend(afterLayer = null) {
    if (!this.#checkpoint) throw new Error('no model loaded: drop its files first');
    const { wasm, attention, backend } = this.#context();
    if (this.#model && this.#modelBackend === backend) return this.#model;
    this.#model?.dispose();
    this.#model = null;
    this.#model = await modelFromCheckpoint(attention, this.#checkpoint, {
      wasm, weightDtype: this.#checkpoint.weightDtype, onProgress: afterLayer && (({ done, total }) => afterLayer(done, total)),
    });
    this.tokenizer = this.#model.tokenizer;
    this.#modelBackend = backend;
    return this.#model;
  }

  /** The page's forward (every head's steps, the logit lens): the HookedModel's CheckpointModel. */
  async #modelOnBackend(afterLayer = null) {
    return (await this.#hookedOnBackend(afterLayer)).transformer;
  }

  /** The HookedModel on the page's backend now (the Patching view's workflows run on it). */
  async hookedModel() {
    return this.#hookedOnBackend();
  }

  #config() {
    const a = this.#checkpoint.architecture;
    return { embedDim: a.embedDim, numHeads: a.numHeads, numKvHeads: a.numKvHeads, numLayers: a.numLayers, headDim: a.headDim };
  }

  #encode(text) {
    const { ids, labels } = this.tokenizer.encodeWithTemplate(text);
    if (ids.length === 0) throw new RangeError('the text gives no tokens');
    const max = this.#checkpoint.architecture.maxPositions;
    if (ids.length > max) throw new RangeError(`the text is ${ids.length} tokens; the model takes at most ${max}`);
    return { ids, labels };
  }

  /** Per layer the Steps view's z patch: zeros for `ablated` heads, `patchText`'s z for `patched` ones. */
  async #patches(model, steps, L) {
    if (!steps || (!steps.ablated.length && !steps.patched.length)) return [];
    const { numHeads: H, headDim: D, numLayers } = this.#checkpoint.architecture;
    let other = null;
    if (steps.patched.length) {
      const { ids } = this.#encode(steps.patchText);
      if (ids.length !== L) {
        throw new RangeError(`patching needs a second text of the same length: '${steps.patchText}' is ${ids.length} tokens, the text ${L}`);
      }
      other = (await model.forward(ids, { capture: ['z'], logits: 'last', lens: false })).layers;
    }
    const of = (pairs, l) => pairs.filter(([layer]) => layer === l).map(([, head]) => head);
    return Array.from({ length: numLayers }, (_, l) => zPatch(of(steps.ablated, l), of(steps.patched, l), other?.[l].z, L, H, D));
  }

  /** The page's result for `text`: every head of every layer with its steps, the prediction and the logit lens. */
  async run({ text, steps = null }) {
    if (this.encoder) {
      const model = await this.#hookedOnBackend();
      return {
        ...(await encoderRun(model, this.#encode(text), steps, this.#checkpoint)),
        text, backend: this.#modelBackend, config: this.#config(), model: this.#summary(), steps,
      };
    }
    const model = await this.#modelOnBackend();
    const { ids, labels } = this.#encode(text);
    const started = performance.now();
    const patches = await this.#patches(model, steps, ids.length);
    // Every step of the Steps view's layer alone, and only while it is open (steps.layer): all
    // layers' steps are ~L × H × E floats each (a 3B model's: 8 MB a token), and the view asks for
    // a run again when it shows a layer without them (web/modes/steps.js).
    const captureLayers = Number.isInteger(steps?.layer) && steps.layer < this.#checkpoint.architecture.numLayers ? [steps.layer] : [];
    const { layers, logits, lens, attentionMs } = await model.forward(ids, { capture: captureLayers.length > 0, captureLayers, patches, logits: 'last' });
    return {
      source: 'model', text, ids, labels, layers, wasmMs: attentionMs, totalMs: performance.now() - started,
      backend: this.#modelBackend, padding: null, causal: true, config: this.#config(), model: model.summary, steps,
      prediction: topTokens(logits, this.tokenizer),
      lens: lens.map((row, layer) => ({ layer, top: topTokens(row, this.tokenizer, 3) })),
    };
  }

  /**
   * Greedy generation of `count` tokens after `text`, each a one-token step through every layer's
   * KV cache; progress({ generated, text, tokensPerSecond }) after each. Resolves with run() of the
   * final text plus { generation: { generated, tokensPerSecond, cancelled } }.
   */
  async generate({ text, count, steps = null }, progress = () => {}) {
    this.#cancelled = false;
    if (this.encoder) {
      throw new TypeError(`generate: not supported on an encoder (${this.#checkpoint.architecture.family}): `
        + 'it predicts the tokens at its [MASK] / <mask> positions (fill-mask), it does not decode left to right');
    }
    const model = await this.#modelOnBackend();
    const { ids } = this.#encode(text);
    const total = Math.min(ids.length + count, this.#checkpoint.architecture.maxPositions);
    const caches = model.createCaches(total);
    const generated = [];
    let cancelled = false;
    const started = performance.now();
    try {
      const patches = await this.#patches(model, steps, ids.length);
      if (patches.length) throw new TypeError('generate: ablated or patched heads apply to the text shown, not to generation; clear them first');
      let { logits } = await model.forward(ids, { caches, logits: 'last', lens: false });
      while (ids.length + generated.length < total) {
        const next = topTokens(logits, this.tokenizer, 1)[0].id;
        generated.push(next);
        progress({ generated: generated.length, text: this.tokenizer.decode([...ids, ...generated], { skipSpecial: true }),
          tokensPerSecond: generated.length / ((performance.now() - started) / 1000) });
        try {
          await this.#checkpointPoint();
        } catch (error) {
          if (!(error instanceof CancelledError)) throw error;
          cancelled = true;
          break;
        }
        if (ids.length + generated.length >= total) break;
        ({ logits } = await model.forward([next], { caches, logits: 'last', lens: false }));
      }
    } finally {
      for (const cache of caches) cache.dispose();
    }
    const seconds = (performance.now() - started) / 1000;
    // The text as the page shows it: without the special tokens tokenizer.json adds (Llama's <s>).
    const result = await this.run({ text: this.tokenizer.decode([...ids, ...generated], { skipSpecial: true }) });
    return { ...result, generation: { generated: generated.length, ids: generated, tokensPerSecond: generated.length / seconds, cancelled } };
  }

  dispose() {
    this.#model?.dispose();
    this.#model = null;
    this.#modelBackend = null;
  }
}
