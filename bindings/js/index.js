// mha-wasm: multi-head attention (PyTorch nn.MultiheadAttention semantics) in WebAssembly.
import { kernelSpec } from './core/kernel-choice.js';
import { FORCE_KERNELS, instantiate } from './core/loader.js';
import { chooseVariant } from './core/variants.js';
import { defineKerasMultiHeadAttention } from './keras/keras.js';
import { initWebGpu } from './webgpu/index.js';

const INIT_OPTIONS = ['wasmUrl', 'locateFile', 'simd', 'relaxedSimd', 'threads', 'backend', 'gpu', 'device', 'kernels'];
const BACKENDS = ['wasm', 'webgpu'];

/** One loading or loaded module per build and file location; a failed load is forgotten. */
const modules = new Map();
const locateFileIds = new WeakMap();
let nextLocateFileId = 1;

function checkOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`init: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!INIT_OPTIONS.includes(key)) throw new TypeError(`init: unknown option '${key}'; known options: ${INIT_OPTIONS.join(', ')}`);
  }
  if (options.locateFile !== undefined && typeof options.locateFile !== 'function') {
    throw new TypeError(`init: locateFile must be a function, got ${typeof options.locateFile}`);
  }
  if (options.wasmUrl !== undefined && typeof options.wasmUrl !== 'string' && !(options.wasmUrl instanceof URL)) {
    throw new TypeError(`init: wasmUrl must be a string or a URL, got ${typeof options.wasmUrl}`);
  }
  if (options.backend !== undefined && !BACKENDS.includes(options.backend)) {
    throw new TypeError(`init: backend must be one of ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${String(options.backend)}`);
  }
  kernelSpec(options.kernels);  // (the variants' names are checked once the module is loaded)
  for (const key of ['gpu', 'device']) {
    if (options[key] !== undefined && options.backend !== 'webgpu') {
      throw new TypeError(`init: ${key} is an option of backend: 'webgpu'`);
    }
  }
}

function cacheKey(name, { wasmUrl, locateFile }) {
  if (locateFile && !locateFileIds.has(locateFile)) locateFileIds.set(locateFile, nextLocateFileId++);
  return JSON.stringify([name, wasmUrl === undefined ? null : String(wasmUrl), locateFile ? locateFileIds.get(locateFile) : 0]);
}

/** The public module object: the core layers and, built over them, the Keras layer. */
function withKeras(core) {
  return Object.freeze({
    MultiHeadAttention: core.MultiHeadAttention,
    KerasMultiHeadAttention: defineKerasMultiHeadAttention(core.MultiHeadAttention),
    ...core,
  });
}

/**
 * Loads the WebAssembly module. Single-flight: every call that resolves to the same build (and
 * file location) gets the same module, loaded once. See index.d.ts for the options.
 */
export async function init(options = {}) {
  checkOptions(options);
  // WebGPU: the wasm module still validates configs and inputs and holds the weights.
  const { backend, gpu, device, ...wasmOptions } = options;
  if (backend === 'webgpu') return initWebGpu({ gpu, device }, await init(wasmOptions));
  const { name, numThreads, warning } = await chooseVariant(options);
  if (warning) console.warn(warning);
  const key = cacheKey(name, options);
  let loading = modules.get(key);
  if (!loading) {
    loading = instantiate(name, numThreads, options).then(withKeras);
    modules.set(key, loading);
    loading.catch(() => modules.delete(key)); // a failed load may be retried
  }
  const module = await loading;
  // Forcing variants is process-wide: on a module already loaded, the latest init's `kernels` wins.
  if (options.kernels !== undefined) module[FORCE_KERNELS](options.kernels);
  if (module.build.threads && options.threads !== undefined && options.threads !== module.build.numThreads) {
    console.warn(`mha-wasm: the threaded build is already loaded with ${module.build.numThreads} threads; `
      + `ignoring threads: ${options.threads}`);
  }
  return module;
}

export { readSafetensors, stateDictFromSafetensors, writeSafetensors } from './formats/safetensors.js';
export { stateDictFromKeras, stateDictFromOnnxAttention } from './formats/interop.js';
export { readOnnx } from './formats/onnx.js';
