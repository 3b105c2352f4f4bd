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

/** tfjs' WebGPU device: tfjs must be on its webgpu backend (the layer's attention then runs there too). */
function tfjsWebGpuDevice(tf) {
  const device = tf.getBackend() === 'webgpu' ? tf.backend().device : undefined;
  if (!device) {
    throw new Error(`mhaTfjs: webgpu: true runs the attention on tfjs' WebGPU device, but tfjs' backend is '${tf.getBackend()}': `
      + "await tf.setBackend('webgpu') first (and import '@tensorflow/tfjs-backend-webgpu')");
  }
  return device;
}

/**
 * Binds mha-wasm to a tfjs namespace (default: import('@tensorflow/tfjs')) and loads the wasm
 * module with `initOptions` (init()'s: simd, threads, wasmUrl, locateFile; and `webgpu: true`: the
 * layer's attention runs on mha-wasm's WebGPU backend on tfjs' own device whenever tfjs is on its
 * webgpu backend, tfjs' tensors read and written on the GPU; tfjs must be on 'webgpu' now). Returns
 * { MultiHeadAttention (a tf.layers.Layer, registered for serialization), multiHeadAttention(args)
 * (its factory, as tf.layers.* are), registerFastGradients(options) (the opt-in kernels for this tf), module,
 * gpu (the WebGPU module, or null) }.
 * The same tf gets the same class.
 */
export async function mhaTfjs(tf, initOptions = {}) {
  const namespace = tf ?? await importTfjs();
  if (typeof namespace?.layers?.Layer !== 'function' || typeof namespace.customGrad !== 'function') {
    throw new TypeError(`mhaTfjs: tf must be the ${PACKAGE} namespace (import * as tf from '${PACKAGE}'), got ${
      namespace === null ? 'null' : typeof namespace}`);
  }
  const { webgpu = false, ...wasmOptions } = initOptions ?? {};
  if (typeof webgpu !== 'boolean') throw new TypeError(`mhaTfjs: webgpu must be a boolean, got ${typeof webgpu}`);
  const device = webgpu ? tfjsWebGpuDevice(namespace) : null;
  const module = await init(wasmOptions);
  const known = bound.get(namespace);
  if (known) {
    if (known.module !== module) throw new Error('mhaTfjs: this tf is already bound to another mha-wasm build; call mhaTfjs with the same init options');
    // Without webgpu (or on the same device) the binding made stands: its layers run the wasm
    // module whenever tfjs is not on that device's backend (after a device loss, say).
    if (!device || known.device === device) return known.api;
  }
  const gpu = device ? await init({ backend: 'webgpu', device }) : null;
  const MultiHeadAttention = defineTfjsMultiHeadAttention(namespace, module, gpu);
  const api = Object.freeze({
    MultiHeadAttention,
    multiHeadAttention: (args) => new MultiHeadAttention(args),
    registerFastGradients: (options) => registerFastGradients(namespace, options),
    module,
    gpu,
  });
  bound.set(namespace, { module, device, api });
  return api;
}
