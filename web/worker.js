// The page's Web Worker: owns the mha-wasm module and every forward pass, so typing never waits
// on the computation. Messages in: { id, type, ... }; out: { id, result } or { id, error } (the
// error's message is shown on the page), and for a running 'generate', 'train', 'modelLoad', ...
// any number of { id, progress } first; { notice: backends } when the WebGPU device is lost. Big
// arrays are transferred, not copied.
// The worker's own messages ('load', 'backend', 'testLoseDevice') and what every mode shares (the
// module, the backends, the default model) are the context's (web/worker-context.js); each mode's
// messages are its worker side's (web/modes/*-worker.js: a function of the context returning
// { type: (args, progress) => result }), listed once below. Which backend runs each mode:
// web/backends.js (backendFor), through the context's onBackend.
import { customLayerWorker } from './modes/custom-layer-worker.js';
import { generateWorker } from './modes/generate-worker.js';
import { patchingWorker } from './modes/patching-worker.js';
import { sentimentWorker } from './modes/sentiment-worker.js';
import { trainWorker } from './modes/train-worker.js';
import { yourModelWorker } from './modes/your-model-worker.js';
import { buffersOf, WorkerContext } from './worker-context.js';

/** Every mode's worker side; a new mode is one more entry. */
const MODES = [generateWorker, sentimentWorker, customLayerWorker, trainWorker, yourModelWorker, patchingWorker];

const context = new WorkerContext();
const handlers = context.handlers();
for (const mode of MODES) {
  for (const [type, handler] of Object.entries(mode(context))) {
    if (type in handlers) throw new Error(`worker: two modes answer '${type}'`);  // (one would silently replace the other)
    handlers[type] = handler;
  }
}

self.onmessage = async ({ data: { id, type, ...args } }) => {
  try {
    const progress = (message, transfer) => self.postMessage({ id, progress: message }, transfer);
    const result = await handlers[type](args, progress);
    self.postMessage({ id, result }, buffersOf(result.layers ?? result.probe?.layers ?? []));
  } catch (error) {
    self.postMessage({ id, error: { name: error?.name ?? 'Error', message: error?.message ?? String(error) } });
  }
};
