// The worker's side of the Patching view (issue 47; web/modes/patching.js is the page's side):
// mha-wasm/models' workflows on the model the Your model mode loaded (its HookedModel), or on the
// default model's (web/demo-hooked.js). Its messages:
//   patchPrepare { clean, corrupted, answer, wrong } -> the clean run as the page's views draw it,
//     plus { patching: { clean, corrupted, answer, wrong, logitDiff, refused, attribution, scores } }
//   patchSweep { clean, corrupted, answer, wrong, over } (ids) -> { over, shape, data }, with
//     { done, total } progress messages; patchCancel stops it (it rejects with an AbortError).
// No DOM.
import { activationPatching, directLogitAttribution, headScores } from '../../bindings/js/models/index.js';
import { refuseEncoder } from '../../bindings/js/models/hooked-model.js';
import { demoHookedModel } from '../demo-hooked.js';
import { topTokens } from '../your-model/top-tokens.js';

export const SCORE_KINDS = ['previous_token', 'duplicate_token', 'induction'];

/** The last position's logits of a run ({ data, shape: [1, pos, vocab] }). */
const lastRow = ({ data, shape: [, L, V] }) => data.subarray((L - 1) * V, L * V);

/**
 * A token the user typed: '#123' is the id 123; anything else must encode to exactly one token
 * (no BOS); '' is null (the default).
 */
function tokenOf(model, what, text) {
  if (text === null || text === undefined || text === '') return null;
  const { vocabSize: V } = model.config;
  const byId = /^#(\d+)$/.exec(text.trim());
  if (byId) {
    const id = Number(byId[1]);
    if (id >= V) throw new RangeError(`${what} token #${id} is not in the vocabulary [0, ${V})`);
    return id;
  }
  const ids = model.tokenizer.encode(text, { prependBos: false });
  if (ids.length !== 1) {
    throw new RangeError(`${what} token ${JSON.stringify(text)} is ${ids.length} tokens (${model.tokenizer.toStrTokens(ids).map((t) => JSON.stringify(t)).join(', ')}); `
      + 'give one token (e.g. with its leading space), or #id');
  }
  return ids[0];
}

/** What a text encodes to, with TransformerLens' BOS default for the family. */
function encoded(model, what, text) {
  const ids = model.tokenizer.encode(text);
  if (ids.length === 0) throw new RangeError(`the ${what} text gives no tokens`);
  const max = model.config.maxPositions;
  if (ids.length > max) throw new RangeError(`the ${what} text is ${ids.length} tokens; the model takes at most ${max}`);
  return { text, ids: Array.from(ids), tokens: model.tokenizer.toStrTokens(ids) };
}

/** answer − wrong at the last position. */
const logitDiff = (logits, answer, wrong) => {
  const row = lastRow(logits);
  return row[answer] - row[wrong];
};

const plain = ({ data, shape }) => ({ data: Float32Array.from(data), shape: [...shape] });

/** A number per HookedModel (a new checkpoint, or the same one rebuilt on another backend, is a new model). */
const modelNumbers = new WeakMap();
let modelsSeen = 0;
const numberOf = (model) => {
  if (!modelNumbers.has(model)) modelNumbers.set(model, ++modelsSeen);
  return modelNumbers.get(model);
};

/**
 * The handlers. `hookedModel(source)`: the HookedModel of `source` ('model': the Your model
 * session's, on the page's backend now, or null when none is loaded; 'default': the default
 * model's), a promise or a value. `backend(source)`: the backend's name.
 */
export function patchingHandlers({ hookedModel, backend = () => null }) {
  let sweep = null;  // the running sweep's AbortController
  // Prepares and sweeps run one at a time (a sweep yields between its runs: a prepare arriving
  // then waits for it instead of running the model in between); patchCancel does not wait.
  let queue = Promise.resolve();
  const serial = (job) => {
    const done = queue.then(job, job);
    queue = done.catch(() => {});
    return done;
  };

  const model = async (source) => {
    const m = await hookedModel(source);
    if (!m) throw new Error('no model loaded: load a checkpoint in the Your model tab first');
    return m;
  };

  /** The clean run (the page's views), the token defaults, the attribution and the head scores. */
  async function prepare({ source = 'model', clean, corrupted, answer = '', wrong = '' }) {
    const m = await model(source);
    refuseEncoder('Patching', m.config, "activation patching and the direct logit attribution read a decoder's next-token logit "
      + "difference at the last position; on an encoder, patch with mha-wasm/models' runWithHooks and read the logits at the mask");
    const started = performance.now();
    const cleanRun = encoded(m, 'clean', clean);
    const corruptedRun = encoded(m, 'corrupted', corrupted);
    const { logits, cache } = await m.runWithCache(cleanRun.ids);
    const totalMs = performance.now() - started;
    const other = await m.forward(corruptedRun.ids);
    const cleanTop = topTokens(lastRow(logits), m.tokenizer);
    const corruptedTop = topTokens(lastRow(other.logits), m.tokenizer);
    // Defaults: the clean run's top next token, and the corrupted run's (its best other than the answer).
    const answerId = tokenOf(m, 'answer', answer) ?? cleanTop[0].id;
    const wrongId = tokenOf(m, 'wrong', wrong) ?? (corruptedTop.find((t) => t.id !== answerId) ?? cleanTop[1]).id;
    const refused = cleanRun.ids.length === corruptedRun.ids.length ? null
      : `the clean text is ${cleanRun.ids.length} tokens and the corrupted text ${corruptedRun.ids.length}: patching needs two of the same length`;
    const attribution = directLogitAttribution(m, cache, { answer: answerId, wrong: wrongId });
    const { numLayers, numHeads, numKvHeads, embedDim, headDim } = m.config;
    const L = cleanRun.ids.length;
    // The clean run as the page's views draw it: every head's pattern, each layer's attention output.
    const layers = Array.from({ length: numLayers }, (_, l) => ({
      weights: Float32Array.from(cache.get(`blocks.${l}.attn.hook_pattern`).data),
      output: Float32Array.from(cache.get(`blocks.${l}.hook_attn_out`).data),
    }));
    return {
      source: 'model', text: clean, ids: cleanRun.ids, labels: cleanRun.tokens, layers,
      wasmMs: totalMs, totalMs, backend: backend(source), padding: null, causal: true,
      config: { embedDim, numHeads, numKvHeads, numLayers, headDim },
      prediction: cleanTop,
      patching: {
        model: numberOf(m), family: m.config.family,
        clean: cleanRun, corrupted: corruptedRun, refused, length: L,
        answer: { id: answerId, token: m.tokenizer.decodeOne(answerId), chosen: Boolean(answer) },
        wrong: { id: wrongId, token: m.tokenizer.decodeOne(wrongId), chosen: Boolean(wrong) },
        logitDiff: {
          clean: logitDiff(logits, answerId, wrongId),
          corrupted: refused ? null : logitDiff(other.logits, answerId, wrongId),
        },
        cleanTop, corruptedTop,
        attribution: {
          heads: plain(attribution.heads), mlps: plain(attribution.mlps), accumulated: plain(attribution.accumulated),
        },
        scores: Object.fromEntries(SCORE_KINDS.map((kind) => [kind, plain(headScores(m, cache, kind))])),
      },
    };
  }

  /** One sweep (activationPatching); progress({ done, total }) at most every 50 ms, and at the end. */
  async function runSweep({ source = 'model', clean, corrupted, answer, wrong, over }, progress) {
    const controller = new AbortController();
    sweep = controller;
    let posted = 0;
    try {
      const m = await model(source);
      const started = performance.now();
      const { data, shape } = await activationPatching(m, {
        clean, corrupted, answer, wrong, over, signal: controller.signal,
        onProgress: (done, total) => {
          const now = performance.now();
          if (done === total || now - posted > 50) {
            posted = now;
            progress({ done, total });
          }
        },
      });
      return { over, shape: [...shape], data, ms: performance.now() - started };
    } finally {
      if (sweep === controller) sweep = null;
    }
  }

  return {
    patchPrepare: (args) => serial(() => prepare(args)),
    patchSweep: (args, progress) => serial(() => runSweep(args, progress)),
    patchCancel: () => {
      const running = Boolean(sweep);
      sweep?.abort();
      return { cancelled: running };
    },
  };
}

/**
 * The Patching view's messages in the page's worker, on `context` (a WorkerContext): source
 * 'model' is the Your model session's model (on the backend that runs 'model'), 'default' the
 * default model's HookedModel (wasm), made again when the default model changes (Train's weights).
 */
export function patchingWorker(context) {
  let defaultHooked = null;  // { of: the DemoModel it was made from, model: its HookedModel }
  async function defaultHookedModel() {
    if (defaultHooked?.of !== context.model) {
      defaultHooked?.model.dispose();
      defaultHooked = { of: context.model, model: await demoHookedModel(context.mha, context.model.weights(), context.model.vocab) };
    }
    return defaultHooked.model;
  }
  return patchingHandlers({
    hookedModel: (source) => (source === 'default' ? defaultHookedModel() : context.yourModel.hookedModel()),
    backend: (source) => (source === 'default' ? 'wasm' : context.backends.backendFor('model')),
  });
}
