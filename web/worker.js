// The page's Web Worker: owns the mha-wasm module and every forward pass, so typing never waits
// on the computation. Messages in: { id, type: 'load' | 'run' | 'custom' | 'generate' | 'stop' | 'sentiment' | 'sentimentModel'
// | 'train' | 'trainPause' | 'trainAblate' | 'trainProbe' | 'trainExport' | 'trainUse' | 'backend' | 'testLoseDevice', ... };
// out: { id, result } or { id, error } (the error's message is shown on the page), and for a
// running 'generate' or 'train' any number of { id, progress } first; { notice: backends } when the
// WebGPU device is lost. Big arrays are transferred, not copied.
// Which backend (wasm or WebGPU) runs each mode: web/backends.js (backendFor), through onBackend below.
import { init, readSafetensors, stateDictFromSafetensors } from '../bindings/js/index.js';
import { Backends } from './backends.js';
import { DemoModel, tokenize, topK } from './model.js';
import { GenerationSession } from './generation.js';
import { SentimentModel } from './sentiment.js';
import { attentionPrefixes, LAYER_KEYS, parseEmbeddings, runCustomLayer } from './custom-layer.js';
import { TrainingSession } from './training/session.js';
import { zPatch } from './z-patch.js';
import { describeHeads } from './training/head-scores.js';
import { YourModelSession } from './your-model/session.js';

let mha;
let model;
let backends;     // web/backends.js: the wasm module, the WebGPU one where there is an adapter, the choice
let gpuModel = null;  // the default model's layers on WebGPU (same weights as `model`), while a device works
let gpuSession = null;  // Generate's session on WebGPU (its KV caches on the GPU), with gpuModel
let session;  // the generation state: one KV cache per layer, kept between Generate clicks
let sentiment = null;  // the sentiment classifier in use: the shipped one (loaded on its first use) or one trained in the page
const sentimentModels = { shipped: null, trained: null };
let training = null;  // the Train mode's session (web/training/session.js), made on its first use

/** The distinct buffers behind results' layers, to transfer (weights and output may share one). */
const buffersOf = (layers) => [...new Set(layers.flatMap((l) => [l.weights.buffer, l.output.buffer]))];

/** Lets queued messages (a Stop, a keystroke's run) in between generation steps. */
const yieldToMessages = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = resolve;
  channel.port2.postMessage(0);
});

async function fetchOk(url, kind) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load ${url}: HTTP ${response.status}`);
  return kind === 'json' ? response.json() : new Uint8Array(await response.arrayBuffer());
}

async function load({ text = '' } = {}) {
  // One core stays with the page (drawing, typing, Stop): with 2 cores the worker runs one thread.
  const wasmOptions = { threads: Math.max(1, (navigator.hardwareConcurrency || 1) - 1) };
  mha = await init(wasmOptions);
  const [bytes, vocab, heads] = await Promise.all([
    fetchOk('model/demo-model.safetensors'), fetchOk('model/vocab.json', 'json'), fetchOk('model/heads.json', 'json'),
  ]);
  model = new DemoModel(mha, readSafetensors(bytes), vocab);
  session = new GenerationSession(model);
  backends = new Backends(mha, wasmOptions);
  backends.onLost = (info) => {
    dropGpuModel();
    self.postMessage({ notice: info });
  };
  if (await backends.openWebGpu()) {
    try {
      makeGpuModel();
      // A hardware adapter: WebGPU is the default if it ran the default model on the page's text faster.
      const ids = tokenize(text, vocab).ids;
      await backends.chooseDefault(async (backend) => {
        const started = performance.now();
        await (backend === 'webgpu' ? gpuModel : model).forwardAsync(ids);
        return performance.now() - started;
      });
    } catch (error) {  // a device that cannot run the model: the page runs on wasm and says why
      backends.refuse(`WebGPU could not run the model (${error.message}); running on wasm`);
      dropGpuModel();
    }
  }
  return {
    build: { ...mha.build },
    backends: backends.info(),
    vocab,
    heads,
    config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads, numLayers: model.numLayers },
  };
}

/** The default model's layers on the WebGPU device, with the weights of `model` (the shipped or trained ones). */
function makeGpuModel() {
  dropGpuModel();
  gpuModel = model.copyOn(backends.gpu);
  gpuSession = new GenerationSession(gpuModel);
}

function dropGpuModel() {
  gpuSession?.dispose();
  gpuModel?.dispose();
  gpuSession = gpuModel = null;
}

/** The generation session (model and KV caches) that runs `mode` ('generate', or 'steps' with the Steps view's capture). */
function sessionFor(mode) {
  return backends.backendFor(mode) === 'webgpu' && gpuSession ? gpuSession : session;
}

/** Ends any generation; every session's caches keep the prefix they share with `ids` (see run). */
function stopGenerating(ids = null) {
  for (const s of [session, gpuSession]) {
    s?.stop();
    if (ids) s?.keepPrefix(ids);
  }
  return sessionFor('generate').cacheLength;
}

/**
 * Runs `call(backend)` on the backend that runs `mode`; a WebGPU device lost during the call
 * (GPUDevice.destroy(), a driver reset) moves every mode to wasm and runs it again there.
 */
async function onBackend(mode, call) {
  const backend = backends.backendFor(mode);
  try {
    return { ...(await call(backend)), backend };
  } catch (error) {
    if (backend !== 'webgpu' || !/device was lost/.test(error.message)) throw error;
    backends.lose(`the WebGPU device was lost during a run (${error.message.replace(/^.*device was lost \(([^)]*)\).*$/s, '$1')})`);
    return { ...(await call('wasm')), backend: 'wasm' };
  }
}

/** 'backend': the page's switch. Resolves with the new backends.info(). */
async function chooseBackend({ backend }) {
  await backends.choose(backend);
  if (backend === 'webgpu' && !gpuModel) makeGpuModel();
  return backends.info();
}

/** Test-only ('testLoseDevice'): destroys the WebGPU device as a driver reset would, to test the fallback. */
function loseDevice() {
  if (!backends.gpu) throw new Error('testLoseDevice: no WebGPU device is open');
  backends.gpu.device.destroy();
  return {};
}

/** A sentiment result's steps without the batch of one: [1, ...] shapes lose their 1. */
function unbatched(captured) {
  return Object.fromEntries(Object.entries(captured).map(([name, t]) => [name, { data: t.data, shape: t.shape.slice(1) }]));
}

/**
 * The Steps view's z patches (docs/steps.md), per layer: zeros for the `ablated` heads, and for the
 * `patched` heads their z on `patchText` (as many tokens as the text shown: activation patching).
 * Heads are [layer, head] pairs. `generated`: the token ids Generate added after the text; the
 * second text is followed by the same tokens, so its z covers every position.
 */
async function zPatches({ ablated = [], patched = [], patchText = '' }, L, keyPaddingMask, generated = [], on = model) {
  if (ablated.length === 0 && patched.length === 0) return [];
  let other = null;
  if (patched.length > 0) {
    const ids = [...tokenize(patchText, model.vocab).ids, ...generated];
    const padding = keyPaddingMask ? keyPaddingMask.reduce((n, p) => n + p, 0) : 0;
    if (ids.length !== L - padding) {
      const n = generated.length;
      throw new RangeError(`patch: the second text has ${ids.length - 1 - n} characters; patching needs as many as the text shown (${L - padding - 1 - n})`);
    }
    for (let i = 0; i < padding; i++) ids.push(model.vocab.bos);
    other = (await on.forwardAsync(ids, { keyPaddingMask, capture: true })).layers;  // (on the backend that runs the view)
  }
  const H = model.numHeads, Dv = model.dModel / H;
  const of = (pairs, l) => pairs.filter(([layer]) => layer === l).map(([, h]) => h);
  return Array.from({ length: model.numLayers }, (_, l) => zPatch(of(ablated, l), of(patched, l), other?.[l].captured.z.data, L, H, Dv));
}

/**
 * steps: the Steps view is open: capture every layer's steps, and apply its ablations and patches.
 * mode: 'default', or 'generate' for Generate's prompt.
 */
async function run({ text, padding = 0, steps = null }, mode = 'default') {
  const { ids, labels } = tokenize(text, model.vocab);
  // New text ends a generation; the caches keep what it shares with the text they hold.
  const cacheLength = stopGenerating(ids);
  // Padding positions: <bos> tokens the keyPaddingMask hides, to show how padded keys look.
  const paddingMask = padding > 0 ? new Uint8Array(ids.length + padding).fill(1, ids.length) : null;
  for (let i = 0; i < padding; i++) {
    ids.push(model.vocab.bos);
    labels.push('<pad>');
  }
  const started = performance.now();
  const { layers, logits, wasmMs, backend } = await onBackend(steps ? 'steps' : mode, async (on) => {
    const running = on === 'webgpu' ? gpuModel : model;
    const patches = steps ? await zPatches(steps, ids.length, paddingMask, [], running) : [];
    return running.forwardAsync(ids, { keyPaddingMask: paddingMask, capture: Boolean(steps), patches });
  });
  const V = model.vocab.tokens.length;
  const last = ids.length - padding - 1;
  return {
    text, ids, labels, layers, wasmMs, totalMs: performance.now() - started, backend,
    padding: paddingMask,
    prediction: topK(Array.from(logits.subarray(last * V, (last + 1) * V)), model.vocab.tokens, 5),
    causal: true,
    config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads },
    cacheLength,
    steps,
  };
}

/**
 * Continues `text` by `count` tokens (GenerationSession.generate). Progress goes to the page in
 * batches, at most ~30 a second: first { prompt } (the prompt's full forward, for the views), then
 * { tokens: [{ id, label, layers, attentionMs, stepMs }], prediction, cacheLength }.
 */
async function generate({ text, changes = null, ...options }, progress) {
  // The Steps view's ablated and patched heads (`changes`, as run's `steps`): the prompt and every
  // step run the whole text with them, without the cache (its keys and values are the unchanged
  // model's); a patch's second text is followed by the same generated tokens.
  const changed = Boolean(changes && (changes.ablated.length || changes.patched.length));
  const mode = changed || options.steps ? 'steps' : 'generate';
  const prompt = await run({ text, steps: changed ? changes : null }, mode);
  const generating = sessionFor(mode);
  const patches = changed ? (ids) => zPatches(changes, ids.length, null, ids.slice(prompt.ids.length), generating.model) : null;
  const steps = generating.generate(prompt.ids, { ...options, patches });  // options: { count, temperature, topK, seed, useCache, steps }
  progress({ prompt }, buffersOf(prompt.layers));
  let batch = [];
  let last = null;
  let posted = performance.now();
  const flush = () => {
    if (batch.length === 0) return;
    // The Steps view draws the newest token: only the batch's last one keeps its steps.
    for (const token of batch.slice(0, -1)) for (const layer of token.layers) delete layer.captured;
    progress({
      tokens: batch,
      prediction: topK(Array.from(last.logits), model.vocab.tokens, 5),
      cacheLength: last.cacheLength,
    }, batch.flatMap((t) => buffersOf(t.layers)));
    batch = [];
    posted = performance.now();
  };
  for (;;) {
    let next;
    try {
      next = await steps.next();
    } catch (error) {
      // A device lost mid-run: the tokens so far stay; the page says so and the next run is on wasm.
      if (generating === session || !/device was lost/.test(error.message)) throw error;
      backends.lose(`the WebGPU device was lost while generating (${error.message.replace(/^.*device was lost \(([^)]*)\).*$/s, '$1')})`);
      flush();
      return { reused: 0, cacheLength: 0, changed, lost: true };
    }
    const { value, done } = next;
    if (done) {
      flush();
      return { reused: value.reused, cacheLength: generating.cacheLength, changed };
    }
    last = value;
    batch.push({
      id: value.id, label: model.vocab.tokens[value.id], layers: value.layers,
      attentionMs: value.attentionMs, stepMs: value.stepMs,
    });
    if (performance.now() - posted >= 33) {
      flush();
      await yieldToMessages();
    }
  }
}

/** The Sentiment mode: the classifier on one sentence, as a result the page's views can draw. */
async function classify({ text, capture = false, steps = null }) {
  if (!sentiment) {
    const [bytes, vocab] = await Promise.all([fetchOk('sentiment/sentiment.safetensors'), fetchOk('sentiment/vocab.json', 'json')]);
    sentiment = sentimentModels.shipped = new SentimentModel(mha, readSafetensors(bytes), vocab);
  }
  const started = performance.now();
  // The Steps view's ablated and patched heads (layer 0: the classifier's one attention layer); a
  // patch's second sentence pads to the same 32 tokens, so any sentence fits.
  let patch = null;
  if (steps && (steps.ablated.length || steps.patched.length)) {
    const heads = (pairs) => pairs.filter(([l]) => l === 0).map(([, h]) => h);
    const [, T, H, Dv] = sentiment.zShape;
    // (the second sentence's z on the backend that runs the view)
    patch = async (on) => {
      const other = !steps.patched.length ? null : on === 'webgpu'
        ? (await sentiment.predictAsync(steps.patchText, backends.gpu, { capture: true })).captured.z
        : sentiment.predict(steps.patchText, { capture: true }).captured.z;
      return zPatch(heads(steps.ablated), heads(steps.patched), other?.data, T, H, Dv, true);
    };
  }
  const { backend, ...p } = await onBackend(capture || patch ? 'steps' : 'sentiment', async (on) => {
    const changes = patch && await patch(on);
    return on === 'webgpu' ? sentiment.predictAsync(text, backends.gpu, { capture, patch: changes })
      : sentiment.predict(text, { capture, patch: changes });
  });
  return {
    text, ids: Array.from(p.ids), labels: p.labels, wasmMs: p.wasmMs, totalMs: performance.now() - started, backend,
    layers: [{ weights: p.weights, output: p.output, ...(capture && { input: p.input, captured: unbatched(p.captured) }) }],
    padding: null,  // the tutorial's model has no mask: its words attend to the padding too
    prediction: [{ token: 'positive', probability: p.probability }, { token: 'negative', probability: 1 - p.probability }],
    causal: false,
    config: { embedDim: 100, numHeads: 4, numKvHeads: 4 },
    description: 'The classifier\'s attention layer: Keras\' MultiHeadAttention(num_heads=4, key_dim=128) over the '
      + 'Conv1D features of the words (padded to 32 tokens; no mask, as in the tutorial).',
    sentiment: { text, label: p.label, probability: p.probability, words: p.words, model: sentiment === sentimentModels.trained ? 'trained' : 'shipped' },
  };
}

/**
 * The Sentiment tab's model: 'trained' with { tensors, vocab } (the training worker's weights under
 * Keras' names and its tokenizer) replaces the one trained before; 'shipped' goes back to web/sentiment/.
 */
async function useSentimentModel({ which, tensors, vocab }) {
  if (which === 'trained' && tensors) {
    const trained = new SentimentModel(mha, { tensors }, vocab);
    sentimentModels.trained?.dispose();
    sentimentModels.trained = trained;
  }
  if (which === 'shipped') {
    sentiment = sentimentModels.shipped;  // null: loaded by the next classify
    return { which };
  }
  if (which !== 'trained' || !sentimentModels.trained) throw new Error(`sentiment model: ${which === 'trained' ? 'nothing trained yet' : `unknown model '${which}'`}`);
  sentiment = sentimentModels.trained;
  return { which };
}

function stop() {
  return { cacheLength: stopGenerating() };
}

async function custom({ embeddingsFile, weightsFile, numHeads, prefix, causal, variants, capture = false, steps = null }) {
  const embeddings = parseEmbeddings(embeddingsFile.name, embeddingsFile.bytes);
  let names;
  try {
    names = Object.keys(readSafetensors(weightsFile.bytes).tensors);
  } catch (error) {
    throw new error.constructor(`${weightsFile.name}: ${error.message}`);
  }
  const prefixes = attentionPrefixes(names);
  if (prefixes.length === 0) {
    throw new TypeError(`${weightsFile.name}: no nn.MultiheadAttention weights (in_proj_weight or q_proj_weight) among `
      + `${names.length} tensors: ${names.slice(0, 8).join(', ')}${names.length > 8 ? ', ...' : ''}`);
  }
  const chosen = prefixes.includes(prefix) ? prefix : prefixes[0];
  const stateDict = stateDictFromSafetensors(weightsFile.bytes, { prefix: chosen });
  // Keep only this layer's own keys (a deeper prefix could also match, e.g. "attn." inside "attn.sub.").
  const own = Object.fromEntries(Object.entries(stateDict).filter(([k]) => LAYER_KEYS.includes(k)));
  const started = performance.now();
  const heads = (pairs) => (steps ? pairs.filter(([l]) => l === 0).map(([, h]) => h) : []);
  // The Steps view's patch: its second embeddings file ({ name, bytes }), read like the first.
  const patchFrom = steps?.patchFile && heads(steps.patched).length ? parseEmbeddings(steps.patchFile.name, steps.patchFile.bytes) : null;
  const ablated = heads(steps?.ablated ?? []), patched = heads(steps?.patched ?? []);
  const mode = capture || ablated.length || patched.length ? 'steps' : 'custom';
  const result = await onBackend(mode, (on) => runCustomLayer(on === 'webgpu' ? backends.gpu : mha, {
    embeddings, stateDict: own, numHeads, causal, variants, capture, ablated, patched, patchFrom,
  }));
  const L = embeddings.shape[0];
  return {
    ...result,
    totalMs: performance.now() - started,
    ids: null,
    labels: embeddings.labels ?? Array.from({ length: L }, (_, i) => String(i)),
    padding: embeddings.padding ?? null,
    prediction: null,
    causal,
    prefixes,
    prefix: chosen,
  };
}

/** The Train mode: the session owns the trainer; its loop yields to these messages between steps. */
// Each step asks which backend runs Train (the switch may move it mid-run); a device lost mid-step
// moves the page to wasm, and the step runs again there from the unchanged training state.
const trainingSession = () => (training ??= new TrainingSession({
  mha, vocab: model.vocab,
  gpu: () => (backends.backendFor('train') === 'webgpu' ? backends.gpu : null),
  lose: (why) => backends.lose(why),
}));
const probeBuffers = (message) => (message.probe ? buffersOf(message.probe.layers) : []);

/** "Use these weights": the trained model becomes the default model (the text box, Generate). */
function useTrainedWeights() {
  const { evaluation, trainer } = trainingSession();
  if (!trainer) throw new Error('use weights: nothing trained yet');
  const trained = new DemoModel(mha, readSafetensors(trainingSession().exportWeights()), model.vocab);
  stopGenerating();
  model.dispose();
  model = trained;
  session = new GenerationSession(model);
  if (backends.gpu) makeGpuModel();
  return {
    step: trainer.step,
    config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads, numLayers: model.numLayers },
    heads: { heads: evaluation ? describeHeads(evaluation.headScores) : [] },
  };
}

const handlers = {
  load, run: (args) => run(args), custom, generate, stop, sentiment: classify, sentimentModel: useSentimentModel,  // (run's second parameter is its mode, not progress)
  train: (args, progress) => trainingSession().train(args, (message) => progress(message, probeBuffers(message)), yieldToMessages),
  trainPause: () => trainingSession().pause(),
  trainAblate: (args) => trainingSession().ablate(args),
  trainProbe: ({ text }) => trainingSession().probe(text),
  trainExport: () => ({ bytes: trainingSession().exportWeights() }),
  trainUse: useTrainedWeights,
  backend: chooseBackend,
  testLoseDevice: loseDevice,
};

self.onmessage = async ({ data: { id, type, ...args } }) => {
  try {
    const progress = (message, transfer) => self.postMessage({ id, progress: message }, transfer);
    const result = await handlers[type](args, progress);
    self.postMessage({ id, result }, buffersOf(result.layers ?? result.probe?.layers ?? []));
  } catch (error) {
    self.postMessage({ id, error: { name: error?.name ?? 'Error', message: error?.message ?? String(error) } });
  }
};

// ---- "Your model" mode (issue 43): its messages, answered by web/your-model/session.js ----

const yourModel = new YourModelSession(() => {
  const backend = backends.backendFor('model');
  return { wasm: mha, attention: backend === 'webgpu' ? backends.gpu : mha, backend };
}, yieldToMessages);
Object.assign(handlers, {
  modelLoad: (args, progress) => yourModel.load(args, progress),
  modelRun: (args) => yourModel.run(args),
  modelGenerate: (args, progress) => yourModel.generate(args, progress),
  modelCancel: () => yourModel.cancel(),
});

// ---- the Patching view (issue 47): web/patching-worker.js's handlers, on a HookedModel: the Your
// model session's, or the default model's (web/demo-hooked.js, rebuilt when the default model changes) ----
import { patchingHandlers } from './patching-worker.js';
import { demoHookedModel } from './demo-hooked.js';

let defaultHooked = null;  // { of: the DemoModel it was made from, model: its HookedModel (wasm) }
async function defaultHookedModel() {
  if (defaultHooked?.of !== model) {
    defaultHooked?.model.dispose();
    defaultHooked = { of: model, model: await demoHookedModel(mha, model.weights(), model.vocab) };
  }
  return defaultHooked.model;
}

Object.assign(handlers, patchingHandlers({
  hookedModel: (source) => (source === 'default' ? defaultHookedModel() : yourModel.hookedModel()),
  backend: (source) => (source === 'default' ? 'wasm' : backends.backendFor('model')),
}));
