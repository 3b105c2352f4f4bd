// The worker's compute backends: mha-wasm's wasm build, and its WebGPU backend where the browser
// has an adapter. Every mode asks `backendFor(mode)` which one runs it: the page's one switch point.
// No DOM: it runs in the worker.
import { init } from '../bindings/js/index.js';

/**
 * Why a mode stays on wasm while WebGPU is chosen. Every mode runs on WebGPU today; a mode whose
 * code cannot await the WebGPU calls gets a line here (the header says why it stays on wasm).
 */
export const WEBGPU_LACKS = {
};

/** Forward passes of each backend timed at start; WebGPU is the default where it was faster. */
const TIMED_RUNS = 3;

export class Backends {
  /** @param wasm the loaded wasm module; wasmOptions: the init() options it was loaded with */
  constructor(wasm, wasmOptions) {
    this.wasm = wasm;
    this.wasmOptions = wasmOptions;
    this.gpu = null;        // the WebGPU module (init({ backend: 'webgpu' })) while its device works
    this.adapter = null;    // its adapterInfo (kept after a loss, for the header)
    this.chosen = 'wasm';   // the backend the page chose: 'webgpu' | 'wasm'
    this.note = null;       // one line: why WebGPU is absent, refused, lost or not the default
    this.timings = null;    // { wasm, webgpu } ms per forward pass at start (hardware adapters)
    this.onLost = () => {};  // (info) => the worker tells the page
  }

  /** Asks for an adapter and a device; on failure says why in `note` and stays on wasm. */
  async openWebGpu() {
    if (!globalThis.navigator?.gpu) {
      this.note = 'WebGPU: this browser has none (no navigator.gpu in the worker); running on wasm';
      return false;
    }
    try {
      const gpu = await init({ ...this.wasmOptions, backend: 'webgpu' });
      this.gpu = gpu;
      this.adapter = gpu.adapterInfo;
      this.note = null;
      gpu.device.lost.then((info) => {
        if (this.gpu !== gpu) return;  // (an older device)
        this.lose(`the WebGPU device was lost (${info.reason}${info.message ? `: ${info.message}` : ''})`);
      });
      return true;
    } catch (error) {
      this.note = `WebGPU is not available here: ${error.message.replace(/^init: /, '')}; running on wasm`;
      return false;
    }
  }

  /** The device is gone: everything runs on wasm from now on (the switch may open a new device). */
  lose(why) {
    if (!this.gpu) return;
    this.gpu = null;
    this.chosen = 'wasm';
    this.note = `${why}; continuing on wasm`;
    this.onLost(this.info());
  }

  /** WebGPU opened but cannot run the page's work: wasm from now on, and `note` says why. */
  refuse(why) {
    this.gpu = null;
    this.adapter = null;
    this.chosen = 'wasm';
    this.note = why;
  }

  /** 'webgpu' or 'wasm': the backend that runs `mode` ('default', 'custom', 'generate', 'train', 'steps', 'sentiment'). */
  backendFor(mode) {
    return this.chosen === 'webgpu' && this.gpu && !WEBGPU_LACKS[mode] ? 'webgpu' : 'wasm';
  }

  /**
   * The default at start: WebGPU on a hardware adapter where `time(backend)` (one forward pass of
   * the default model, ms) measured it faster; never on a software (fallback) adapter.
   */
  async chooseDefault(time) {
    if (!this.gpu) return;
    if (this.adapter.isFallbackAdapter) {
      this.note = 'WebGPU\'s adapter here is a software one (not the default: wasm is faster); the switch reaches it';
      return;
    }
    const median = async (backend) => {
      await time(backend);  // (compiles the pipelines, uploads the weights)
      const ms = [];
      for (let i = 0; i < TIMED_RUNS; i++) ms.push(await time(backend));
      return ms.sort((a, b) => a - b)[TIMED_RUNS >> 1];
    };
    this.timings = { wasm: await median('wasm'), webgpu: await median('webgpu') };
    this.chosen = this.timings.webgpu < this.timings.wasm ? 'webgpu' : 'wasm';
    if (this.chosen === 'wasm') {
      this.note = `wasm is the default: it ran the default model faster here (${this.timings.wasm.toFixed(1)} ms vs `
        + `WebGPU's ${this.timings.webgpu.toFixed(1)} ms)`;
    }
  }

  /** Switches to `backend`; WebGPU after a loss asks for a new device first. Throws when it cannot. */
  async choose(backend) {
    if (backend !== 'webgpu' && backend !== 'wasm') throw new TypeError(`backend must be 'webgpu' or 'wasm', got ${String(backend)}`);
    if (backend === 'webgpu' && !this.gpu && !(await this.openWebGpu())) throw new Error(this.note);
    this.chosen = backend;
  }

  /** What the page's header shows: { chosen, available, adapter, note, timings, modes: { mode: { backend, why } } }. */
  info() {
    const modes = Object.fromEntries(['default', 'custom', 'generate', 'train', 'steps', 'sentiment'].map((mode) => [mode, {
      backend: this.backendFor(mode),
      why: this.chosen === 'webgpu' && this.gpu ? WEBGPU_LACKS[mode] ?? null : null,
    }]));
    return {
      chosen: this.chosen,
      available: Boolean(this.gpu),
      // name: the description, or vendor and architecture where the browser gives no description (Chromium's SwiftShader).
      adapter: this.adapter && { ...this.adapter, name: this.adapter.description || [this.adapter.vendor, this.adapter.architecture].filter(Boolean).join(' ') || 'unnamed adapter' },
      note: this.note,
      timings: this.timings,
      build: { simd: this.wasm.build.simd, threads: this.wasm.build.threads ? this.wasm.build.numThreads ?? 1 : 1 },
      modes,
    };
  }
}
