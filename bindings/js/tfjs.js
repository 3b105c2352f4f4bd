// mha-wasm/tfjs: mha-wasm's attention as a trainable tfjs-layers layer, and the fast gradient
// kernels that let tfjs train the layers around it (Embedding, Conv1D). The user passes in their
// own tfjs, so the layer registers with the tfjs instance their model uses; the package's main
// entry never loads tfjs.
//
//   import * as tf from '@tensorflow/tfjs';
//   import { mhaTfjs } from 'mha-wasm/tfjs';
//   const { multiHeadAttention, MultiHeadAttention, registerFastGradients } = await mhaTfjs(tf, { threads: 1 });
import { init } from './index.js';
import { registerFastGradients } from './tfjs/kernels.js';
import { defineTfjsMultiHeadAttention } from './tfjs/layer.js';

export { registerFastGradients, FAST_GRADIENT_KERNELS } from './tfjs/kernels.js';
export { tfjsToGpu, gpuToTfjs } from './tfjs/gpu-tensors.js';

const PACKAGE = '@tensorflow/tfjs';
const bound = new WeakMap();  // tf namespace -> { module: init options key, api }

async function importTfjs() {
  try {
    return await import(PACKAGE);
  } catch (error) {
    throw new Error(`mhaTfjs: ${PACKAGE} is not installed; mha-wasm/tfjs needs it (npm install ${PACKAGE}), `
      + `or pass your tfjs namespace: mhaTfjs(tf) (${error.message})`);
  }
}

/**
 * Binds mha-wasm to a tfjs namespace (default: import('@tensorflow/tfjs')) and loads the wasm
 * module with `initOptions` (init()'s: simd, threads, wasmUrl, locateFile). Returns
 * { MultiHeadAttention (a tf.layers.Layer, registered for serialization), multiHeadAttention(args)
 * (its factory, as tf.layers.* are), registerFastGradients(options) (the opt-in kernels for this tf), module }.
 * The same tf gets the same class.
 */
export async function mhaTfjs(tf, initOptions = {}) {
  const namespace = tf ?? await importTfjs();
  if (typeof namespace?.layers?.Layer !== 'function' || typeof namespace.customGrad !== 'function') {
    throw new TypeError(`mhaTfjs: tf must be the ${PACKAGE} namespace (import * as tf from '${PACKAGE}'), got ${
      namespace === null ? 'null' : typeof namespace}`);
  }
  const module = await init(initOptions);
  const known = bound.get(namespace);
  if (known) {
    if (known.module !== module) throw new Error('mhaTfjs: this tf is already bound to another mha-wasm build; call mhaTfjs with the same init options');
    return known.api;
  }
  const MultiHeadAttention = defineTfjsMultiHeadAttention(namespace, module);
  const api = Object.freeze({
    MultiHeadAttention,
    multiHeadAttention: (args) => new MultiHeadAttention(args),
    registerFastGradients: (options) => registerFastGradients(namespace, options),
    module,
  });
  bound.set(namespace, { module, api });
  return api;
}
