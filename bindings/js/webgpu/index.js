// The WebGPU backend: init({ backend: 'webgpu', gpu?, device? }) resolves to this room's module
// object: the device it runs on, a MultiHeadAttention with forwardAsync, scaledDotProductAttentionAsync
// and an AdamW optimizer.
import { defineAdamW } from './adamw.js';
import { defineWebGpuAttentionFunction } from './attention-function.js';
import { openDevice } from './device.js';
import { defineKerasMultiHeadAttention } from '../keras/keras.js';
import { defineWebGpuMultiHeadAttention } from './layer.js';

/** The WebGPU module object, given the loaded wasm module (config, weights and shape checks). */
export async function initWebGpu({ gpu, device }, wasm) {
  const state = await openDevice({ gpu, device });
  const MultiHeadAttention = defineWebGpuMultiHeadAttention(state, wasm);
  return Object.freeze({
    backend: 'webgpu',
    device: state.device,
    adapterInfo: Object.freeze(state.adapterInfo),
    features: Object.freeze(state.features),
    /** null while the device works; { reason, message } once it was lost. */
    get lost() { return state.lost; },
    MultiHeadAttention,
    // The attention function on the layer's GPU kernels (attention-function.js).
    ...defineWebGpuAttentionFunction(state, wasm),
    // AdamW on the GPU: parameters and moments stay there between steps (adamw.js).
    AdamW: defineAdamW(state),
    // Keras' layer over the WebGPU one: callAsync only (keras/keras.js).
    KerasMultiHeadAttention: defineKerasMultiHeadAttention(MultiHeadAttention, { asyncOnly: true }),
  });
}
