// tfjs' WebGPU tensors as mha-wasm's GPU tensors ({ buffer, shape }) and back, for an mha-wasm
// WebGPU module made on tfjs' own device: init({ backend: 'webgpu', device: tf.backend().device }).
// No CPU round trip either way: tfjs copies a tensor into a new GPUBuffer on the GPU
// (dataToGPU, which also submits tfjs' pending work, so our commands run after it), and wraps a
// GPUBuffer as a tensor either without a copy (zeroCopy) or with one GPU-side copy.
//
// Lifetimes: tfjsToGpu's result holds tfjs' copy until its dispose(); gpuToTfjs with
// zeroCopy: true reads the caller's buffer, so the caller destroys that buffer (gpuTensor.dispose())
// only after disposing the tfjs tensor; without zeroCopy tfjs owns its copy and the caller may
// dispose its GPU tensor at once.

import { COPY_SRC, STORAGE } from '../webgpu/buffer-usage.js';

function webgpuBackendOf(tf, what) {
  if (tf === null || typeof tf !== 'object' || typeof tf.backend !== 'function') {
    throw new TypeError(`${what}: tf must be the tfjs module (import * as tf from '@tensorflow/tfjs'), got ${tf === null ? 'null' : typeof tf}`);
  }
  const backend = tf.backend();
  if (tf.getBackend() !== 'webgpu' || !backend?.device) {
    throw new Error(`${what}: tfjs' backend is '${tf.getBackend()}'; GPU tensors pass between tfjs and mha-wasm only on tfjs' 'webgpu' backend `
      + "(await tf.setBackend('webgpu'), then init({ backend: 'webgpu', device: tf.backend().device }))");
  }
  return backend;
}

/**
 * A float32 tfjs tensor as { buffer, shape, dispose() }: a GPU copy of its values
 * (tensor.dataToGPU()) for a WebGPU layer on tfjs' device. dispose() gives the copy back to tfjs.
 */
export function tfjsToGpu(tf, tensor) {
  const backend = webgpuBackendOf(tf, 'tfjsToGpu');
  if (tensor === null || typeof tensor !== 'object' || typeof tensor.dataToGPU !== 'function' || !Array.isArray(tensor.shape)) {
    throw new TypeError(`tfjsToGpu: tensor must be a tfjs Tensor, got ${tensor === null ? 'null' : typeof tensor}`);
  }
  if (tensor.dtype !== 'float32') throw new TypeError(`tfjsToGpu: tensor must be float32 (the kernels read float32), got ${tensor.dtype}`);
  let gpu;
  try {
    gpu = tensor.dataToGPU();
  } catch {
    // Values made from JS (tf.tensor) stay on the CPU until a kernel needs them on the GPU (tfjs
    // runs small kernels of CPU values on the CPU), or live on another backend; dataToGPU needs
    // them on the GPU: a copy on this backend, uploaded.
    const moved = tf.add(tensor, 0);
    try {
      backend.uploadToGPU(moved.dataId);
      gpu = moved.dataToGPU();
    } finally {
      moved.dispose();
    }
  }
  const { buffer, tensorRef } = gpu;
  return { buffer, shape: [...tensor.shape], dispose: () => tensorRef.dispose() };
}

/**
 * A GPU tensor ({ buffer, shape }: an mha-wasm WebGPU result with outputLocation 'gpu', or any
 * float32 buffer with STORAGE | COPY_SRC usage on tfjs' device) as a float32 tfjs tensor. zeroCopy:
 * the tensor reads the buffer itself (dispose the tensor before the buffer; the buffer must be exactly
 * the shape's size); else tfjs copies it on the GPU.
 */
export function gpuToTfjs(tf, gpuTensor, { zeroCopy = false } = {}) {
  webgpuBackendOf(tf, 'gpuToTfjs');
  const { buffer, shape } = gpuTensor ?? {};
  if (buffer === null || typeof buffer !== 'object' || typeof buffer.usage !== 'number' || !Array.isArray(shape)) {
    throw new TypeError('gpuToTfjs: expected a GPU tensor { buffer: GPUBuffer, shape } (a result of outputLocation \'gpu\')');
  }
  if ((buffer.usage & (STORAGE | COPY_SRC)) !== (STORAGE | COPY_SRC)) {
    throw new TypeError('gpuToTfjs: tfjs needs a buffer with GPUBufferUsage.STORAGE | COPY_SRC');
  }
  // tfjs reads a tensor back as its whole buffer (tfjs-backend-webgpu 4.22), so a buffer longer
  // than the shape (mha-wasm pads its buffers to 16 bytes) becomes one of the shape's size: one
  // copy kernel on tfjs' own copy. zeroCopy cannot do that without a copy: refused.
  const bytes = shape.reduce((n, d) => n * d, 1) * 4;
  if (buffer.size !== bytes && zeroCopy) {
    throw new RangeError(`gpuToTfjs: zeroCopy needs a buffer of exactly the shape's ${bytes} bytes (tfjs reads a tensor back as its whole buffer), `
      + `got ${buffer.size}: pass zeroCopy: false (tfjs then copies it on the GPU)`);
  }
  const tensor = tf.tensor({ buffer, zeroCopy: Boolean(zeroCopy) }, shape, 'float32');
  if (buffer.size === bytes) return tensor;
  try {
    return tf.mul(tensor, 1);
  } finally {
    tensor.dispose();
  }
}
