// What the page's worker (web/worker.js) holds for every mode: the mha-wasm module, the backends
// (web/backends.js: wasm, WebGPU where there is an adapter, which one runs each mode), the
// default model with its generation sessions on each backend, and the Your model session (whose
// model the Patching view also runs). Each mode's worker side
// (web/modes/*-worker.js) is given this one object and keeps its own state itself. The worker's
// own messages ('load', 'backend', 'testLoseDevice') are answered here. No DOM.
import { init, readSafetensors } from '../bindings/js/index.js';
import { Backends } from './backends.js';
import { GenerationSession } from './generation.js';
import { DemoModel, tokenize } from './model.js';
import { YourModelSession } from './your-model/session.js';

/** The distinct buffers behind results' layers, to transfer (weights and output may share one). */
export const buffersOf = (layers) => [...new Set(layers.flatMap((l) => [l.weights.buffer, l.output.buffer]))];

/** Lets queued messages (a Stop, a keystroke's run) in between generation steps. */
export const yieldToMessages = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = resolve;
  channel.port2.postMessage(0);
});

export async function fetchOk(url, kind) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load ${url}: HTTP ${response.status}`);
  return kind === 'json' ? response.json() : new Uint8Array(await response.arrayBuffer());
}

/** A device-lost error's own reason, from its message. */
export const lostReason = (error) => error.message.replace(/^.*device was lost \(([^)]*)\).*$/s, '$1');

export class WorkerContext {
  mha = null;          // the mha-wasm module (init())
  backends = null;     // web/backends.js
  model = null;        // the default model (web/model.js): the shipped weights, or the Train mode's once used
  session = null;      // its generation state on wasm: one KV cache per layer, kept between Generate clicks
  gpuModel = null;     // the default model's layers on WebGPU (the same weights), while a device works
  gpuSession = null;   // Generate's session on WebGPU (its KV caches on the GPU), with gpuModel
  // The Your model mode's checkpoint (web/your-model/session.js), on the backend that runs 'model'.
  yourModel = new YourModelSession(() => {
    const backend = this.backends.backendFor('model');
    return { wasm: this.mha, attention: backend === 'webgpu' ? this.backends.gpu : this.mha, backend };
  }, yieldToMessages);

  /** 'load': the module, the default model and the backends; WebGPU made the default where it ran the model faster. */
  async load({ text = '' } = {}) {
    // One core stays with the page (drawing, typing, Stop): with 2 cores the worker runs one thread.
    const wasmOptions = { threads: Math.max(1, (navigator.hardwareConcurrency || 1) - 1) };
    this.mha = await init(wasmOptions);
    const [bytes, vocab, heads] = await Promise.all([
      fetchOk('model/demo-model.safetensors'), fetchOk('model/vocab.json', 'json'), fetchOk('model/heads.json', 'json'),
    ]);
    this.model = new DemoModel(this.mha, readSafetensors(bytes), vocab);
    this.session = new GenerationSession(this.model);
    const backends = this.backends = new Backends(this.mha, wasmOptions);
    backends.onLost = (info) => {
      this.dropGpuModel();
      self.postMessage({ notice: info });
    };
    if (await backends.openWebGpu()) {
      try {
        this.makeGpuModel();
        // A hardware adapter: WebGPU is the default if it ran the default model on the page's text faster.
        const ids = tokenize(text, vocab).ids;
        await backends.chooseDefault(async (backend) => {
          const started = performance.now();
          await (backend === 'webgpu' ? this.gpuModel : this.model).forwardAsync(ids);
          return performance.now() - started;
        });
      } catch (error) {  // a device that cannot run the model: the page runs on wasm and says why
        backends.refuse(`WebGPU could not run the model (${error.message}); running on wasm`);
        this.dropGpuModel();
      }
    }
    return {
      build: { ...this.mha.build },
      backends: backends.info(),
      vocab,
      heads,
      config: this.modelConfig(),
    };
  }

  /** The default model's shape, as the page's views take it. */
  modelConfig() {
    const m = this.model;
    return { embedDim: m.dModel, numHeads: m.numHeads, numKvHeads: m.numHeads, numLayers: m.numLayers };
  }

  /** The default model's layers on the WebGPU device, with the weights of `model` (the shipped or trained ones). */
  makeGpuModel() {
    this.dropGpuModel();
    this.gpuModel = this.model.copyOn(this.backends.gpu);
    this.gpuSession = new GenerationSession(this.gpuModel);
  }

  dropGpuModel() {
    this.gpuSession?.dispose();
    this.gpuModel?.dispose();
    this.gpuSession = this.gpuModel = null;
  }

  /** `trained` becomes the default model (the Train mode's "Use these weights"), on every backend. */
  replaceModel(trained) {
    this.stopGenerating();
    this.model.dispose();
    this.model = trained;
    this.session = new GenerationSession(trained);
    if (this.backends.gpu) this.makeGpuModel();
  }

  /** The generation session (model and KV caches) that runs `mode` ('generate', or 'steps' with the Steps view's capture). */
  sessionFor(mode) {
    return this.backends.backendFor(mode) === 'webgpu' && this.gpuSession ? this.gpuSession : this.session;
  }

  /** Ends any generation; every session's caches keep the prefix they share with `ids` (see run). */
  stopGenerating(ids = null) {
    for (const s of [this.session, this.gpuSession]) {
      s?.stop();
      if (ids) s?.keepPrefix(ids);
    }
    return this.sessionFor('generate').cacheLength;
  }

  /**
   * Runs `call(backend)` on the backend that runs `mode`; a WebGPU device lost during the call
   * (GPUDevice.destroy(), a driver reset) moves every mode to wasm and runs it again there.
   */
  async onBackend(mode, call) {
    const backend = this.backends.backendFor(mode);
    try {
      return { ...(await call(backend)), backend };
    } catch (error) {
      if (backend !== 'webgpu' || !/device was lost/.test(error.message)) throw error;
      this.backends.lose(`the WebGPU device was lost during a run (${lostReason(error)})`);
      return { ...(await call('wasm')), backend: 'wasm' };
    }
  }

  /** The worker's own messages (not a mode's). */
  handlers() {
    return {
      load: (args) => this.load(args),
      // 'backend': the page's switch. Resolves with the new backends.info().
      backend: async ({ backend }) => {
        await this.backends.choose(backend);
        if (backend === 'webgpu' && !this.gpuModel) this.makeGpuModel();
        return this.backends.info();
      },
      // Test-only: destroys the WebGPU device as a driver reset would, to test the fallback.
      testLoseDevice: () => {
        if (!this.backends.gpu) throw new Error('testLoseDevice: no WebGPU device is open');
        this.backends.gpu.device.destroy();
        return {};
      },
    };
  }
}
