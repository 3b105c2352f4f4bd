// mha-wasm: multi-head attention (PyTorch nn.MultiheadAttention semantics) in WebAssembly.
import createMhaModule from '../../dist/mha-simd.mjs';
import { defineMultiHeadAttention } from './layer.js';

const isNode = typeof process !== 'undefined' && process.versions?.node !== undefined;
const DEFAULT_WASM_URL = new URL('../../dist/mha-simd.wasm', import.meta.url);

async function instantiate(options) {
  const wasmUrl = options.wasmUrl ? new URL(options.wasmUrl, isNode ? DEFAULT_WASM_URL : globalThis.location?.href)
    : DEFAULT_WASM_URL;
  const moduleArgs = {};
  if (isNode && wasmUrl.protocol === 'file:') {
    // Emscripten 3.1.6 would fetch() a file path in Node; hand it the bytes instead.
    const { readFile } = await import('node:fs/promises');
    moduleArgs.wasmBinary = await readFile(wasmUrl);
  } else {
    moduleArgs.locateFile = () => wasmUrl.href;
  }
  let module;
  try {
    module = await createMhaModule(moduleArgs);
  } catch (cause) {
    throw new Error(`mha-wasm: could not load the WebAssembly module from ${wasmUrl.href}: ${cause?.message ?? cause}`,
      { cause });
  }
  return Object.freeze({
    MultiHeadAttention: defineMultiHeadAttention(module),
    /** Bytes of wasm heap currently allocated (for leak checks). */
    heapAllocatedBytes: () => module.heapAllocatedBytes(),
    /** Total size of the wasm memory, in bytes. */
    memoryBytes: () => module.HEAP8.length,
    build: Object.freeze({ simd: true, threads: false, name: 'mha-simd' }),
  });
}

let loading = null;

/**
 * Loads the WebAssembly module once; later calls return the same promise.
 * @param {{ wasmUrl?: string | URL }} [options]
 */
export function init(options = {}) {
  if (!loading) {
    loading = instantiate(options).catch((error) => {
      loading = null; // a failed load may be retried
      throw error;
    });
  }
  return loading;
}

export { readSafetensors, stateDictFromSafetensors, writeSafetensors } from './safetensors.js';
