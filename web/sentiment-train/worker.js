// The Sentiment tab's training worker (a classic worker: tfjs and its wasm backend load as their
// UMD bundles with importScripts, so both share one tfjs engine; the project's ES modules load
// with import()). The page starts it when the user presses Train, so the page itself never loads
// tfjs. Messages in: { type: 'train', settings } (session.js's, plus backend 'wasm' | 'cpu'),
// { type: 'stop' }. Out: { type: 'ready', backend, threads }, { type: 'progress', ... } after
// each batch (at most ~10 a second), { type: 'epoch', ... }, then { type: 'done', history,
// stopped, weights, vocab, seconds } (weights' buffers transferred) or { type: 'error', message }.
/* global importScripts, tf */
const TFJS = '/node_modules/@tensorflow/tfjs/dist/tf.min.js';
const TFJS_WASM = '/node_modules/@tensorflow/tfjs-backend-wasm/dist/';
const PROGRESS_MS = 100;

let stopRequested = false;
let running = false;

/** Lets queued messages (Stop) in between batches. */
const yieldToMessages = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = resolve;
  channel.port2.postMessage(0);
});

/**
 * tfjs on `backend`: 'wasm' (measured fastest in Chromium for this model, docs/tfjs.md) with one
 * thread less than the machine has (one core stays with the page), or 'cpu'.
 */
async function loadTfjs(backend) {
  if (!self.tf) importScripts(TFJS, `${TFJS_WASM}tf-backend-wasm.min.js`);
  if (backend === 'wasm') {
    tf.wasm.setWasmPaths(TFJS_WASM);
    tf.wasm.setThreadsCount?.(Math.max(1, (navigator.hardwareConcurrency || 1) - 1));
  }
  if (!(await tf.setBackend(backend))) throw new Error(`tfjs' ${backend} backend did not start`);
  await tf.ready();
  return tf;
}

async function train(settings) {
  const { backend = 'wasm', ...rest } = settings;
  if (backend !== 'wasm' && backend !== 'cpu') throw new TypeError(`train: backend must be 'wasm' or 'cpu', got ${JSON.stringify(backend)}`);
  const [{ mhaTfjs }, { checkTrainingSettings, trainSentiment }] = await Promise.all([import('../bindings/js/tfjs.js'), import('./session.js')]);
  checkTrainingSettings(rest);  // a bad setting fails before tfjs loads
  const corpusResponse = await fetch(new URL('corpus.json', self.location.href));
  if (!corpusResponse.ok) throw new Error(`cannot load corpus.json: HTTP ${corpusResponse.status}`);
  const corpus = await corpusResponse.json();
  await loadTfjs(backend);
  // mha-wasm in this worker: one thread, the attention layer's forward and backward.
  const api = await mhaTfjs(tf, { threads: 1 });
  self.postMessage({ type: 'ready', backend: tf.getBackend(), threads: backend === 'wasm' ? tf.wasm.getThreadsCount?.() ?? 1 : 1, tfjs: tf.version.tfjs });
  let posted = -Infinity;
  const result = await trainSentiment({
    tf, mhaTfjs: api, corpus, settings: rest, yieldToMessages,
    shouldStop: () => stopRequested,
    onProgress: (progress) => {
      const now = performance.now();
      if (now - posted < PROGRESS_MS && progress.batch < progress.batchesPerEpoch) return;
      posted = now;
      self.postMessage({ type: 'progress', ...progress });
    },
    onEpoch: (epoch) => self.postMessage({ type: 'epoch', ...epoch }),
  });
  self.postMessage({ type: 'done', ...result }, Object.values(result.weights).map((t) => t.data.buffer));
}

self.onmessage = async ({ data }) => {
  if (data.type === 'stop') {
    stopRequested = true;
    return;
  }
  if (data.type !== 'train') return;
  if (running) {
    self.postMessage({ type: 'error', message: 'train: training is already running in this worker' });
    return;
  }
  running = true;
  stopRequested = false;
  try {
    await train(data.settings ?? {});
  } catch (error) {
    self.postMessage({ type: 'error', name: error?.name ?? 'Error', message: error?.message ?? String(error) });
  } finally {
    running = false;
  }
};
