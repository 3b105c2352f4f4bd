// The Sentiment tab's training worker (a classic worker: tfjs and its wasm and webgpu backends
// load as their UMD bundles with importScripts, so all share one tfjs engine; the project's ES
// modules load with import()). The page starts it when the user presses Train, so the page itself
// never loads tfjs. Messages in: { type: 'train', settings } (session.js's, plus backend 'wasm' |
// 'cpu' | 'webgpu'), { type: 'stop' }, { type: 'testLoseDevice' } (destroys tfjs' GPU device, as a
// driver reset would). Out: { type: 'ready', backend, threads, note }, { type: 'progress', ... }
// after each batch (at most ~10 a second), { type: 'epoch', ... }, { type: 'restart', backend, note }
// (the WebGPU device was lost: the run starts again on wasm), then { type: 'done', history,
// stopped, weights, vocab, seconds } (weights' buffers transferred) or { type: 'error', message }.
//
// On 'webgpu' tfjs trains on its WebGPU backend and mha-wasm/tfjs runs the attention on mha-wasm's
// WebGPU backend on tfjs' device (mhaTfjs(tf, { webgpu: true }): tfjs' GPU tensors in and out).
/* global importScripts, tf */
const TFJS = '/node_modules/@tensorflow/tfjs/dist/tf.min.js';
const TFJS_WASM = '/node_modules/@tensorflow/tfjs-backend-wasm/dist/';
const TFJS_WEBGPU = '/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js';
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
 * tfjs on `backend`: 'wasm' (measured fastest in Chromium for this model without a GPU, docs/tfjs.md)
 * with one thread less than the machine has (one core stays with the page), 'cpu', or 'webgpu'.
 * Returns the backend it runs on and a note when WebGPU could not start (tfjs then runs on wasm).
 */
async function loadTfjs(backend) {
  if (!self.tf) importScripts(TFJS, `${TFJS_WASM}tf-backend-wasm.min.js`);
  let note = null;
  if (backend === 'webgpu') {
    try {
      if (!self.navigator?.gpu) throw new Error('this browser has no WebGPU in workers');
      if (!tf.findBackendFactory('webgpu')) importScripts(TFJS_WEBGPU);
      if (await tf.setBackend('webgpu')) return { backend: 'webgpu', note };
      throw new Error('tfjs\' webgpu backend did not start (no adapter?)');
    } catch (error) {
      note = `WebGPU: ${error.message}; training on wasm`;
      backend = 'wasm';
    }
  }
  if (backend === 'wasm') {
    tf.wasm.setWasmPaths(TFJS_WASM);
    tf.wasm.setThreadsCount?.(Math.max(1, (navigator.hardwareConcurrency || 1) - 1));
  }
  if (!(await tf.setBackend(backend))) throw new Error(`tfjs' ${backend} backend did not start`);
  await tf.ready();
  return { backend, note };
}

let deviceLost = null;  // why tfjs' WebGPU device was lost, once it was

async function train(settings, restartedBecause = null) {
  const { backend: asked = 'wasm', ...rest } = settings;
  if (!['wasm', 'cpu', 'webgpu'].includes(asked)) throw new TypeError(`train: backend must be 'wasm', 'cpu' or 'webgpu', got ${JSON.stringify(asked)}`);
  const [{ mhaTfjs }, { checkTrainingSettings, trainSentiment }] = await Promise.all([import('../bindings/js/tfjs.js'), import('./session.js')]);
  checkTrainingSettings(rest);  // a bad setting fails before tfjs loads
  const corpusResponse = await fetch(new URL('corpus.json', self.location.href));
  if (!corpusResponse.ok) throw new Error(`cannot load corpus.json: HTTP ${corpusResponse.status}`);
  const corpus = await corpusResponse.json();
  const { backend, note } = await loadTfjs(asked);
  const device = backend === 'webgpu' ? tf.backend().device : null;
  deviceLost = null;
  device?.lost.then((info) => { deviceLost = `the WebGPU device was lost (${info.reason}${info.message ? `: ${info.message}` : ''})`; });
  // mha-wasm in this worker: one thread, the attention layer's forward and backward (on tfjs' GPU device on 'webgpu').
  const api = await mhaTfjs(tf, { threads: 1, webgpu: backend === 'webgpu' });
  self.postMessage({ type: restartedBecause ? 'restart' : 'ready', backend: tf.getBackend(), threads: backend === 'wasm' ? tf.wasm.getThreadsCount?.() ?? 1 : 1,
    tfjs: tf.version.tfjs, note: restartedBecause ?? note });
  let posted = -Infinity;
  let result;
  try {
    result = await trainSentiment({
      tf, mhaTfjs: api, corpus, settings: rest, yieldToMessages,
      shouldStop: () => stopRequested || deviceLost !== null,
      onProgress: (progress) => {
        const now = performance.now();
        if (now - posted < PROGRESS_MS && progress.batch < progress.batchesPerEpoch) return;
        posted = now;
        self.postMessage({ type: 'progress', ...progress });
      },
      onEpoch: (epoch) => self.postMessage({ type: 'epoch', ...epoch }),
    });
    if (deviceLost) throw new Error(deviceLost);
  } catch (error) {
    // A read on the lost device can fail before device.lost resolves: give it a moment.
    if (device && !deviceLost) await Promise.race([device.lost, new Promise((resolve) => { setTimeout(resolve, 1000); })]);
    // The device is gone with the weights on it: the run starts again on wasm, with the same settings.
    if (deviceLost && !stopRequested) return train({ ...settings, backend: 'wasm' }, `${deviceLost}; training restarted on wasm`);
    throw error;
  }
  self.postMessage({ type: 'done', ...result }, Object.values(result.weights).map((t) => t.data.buffer));
}

self.onmessage = async ({ data }) => {
  if (data.type === 'stop') {
    stopRequested = true;
    return;
  }
  if (data.type === 'testLoseDevice') {
    if (self.tf?.getBackend() === 'webgpu') tf.backend().device.destroy();
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
