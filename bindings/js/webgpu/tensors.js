// Tensors on the GPU: the buffers a call makes (freed when it ends unless handed to the caller),
// uploads, readbacks, the caller's { buffer, shape } inputs checked, and a call's results shaped
// as the caller gets them: { data, shape } read back, or { buffer, shape, read, dispose } left on
// the GPU (outputLocation: 'gpu').
import { checkFinite } from '../api/finite.js';
import { checkTensor, describe } from '../api/validate.js';
import { COPY_DST, COPY_SRC, MAP_READ, STORAGE, UNIFORM } from './buffer-usage.js';
import { runChecked } from './gpu-work.js';
import { dispatch, pipeline } from './pipelines.js';

const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** Whether `x` is a GPUBuffer (by its surface, so buffers of any WebGPU implementation pass). */
export const isGpuBuffer = (x) => x !== null && typeof x === 'object' && typeof x.mapAsync === 'function'
  && typeof x.usage === 'number' && typeof x.size === 'number';

/**
 * An input tensor: { data: Float32Array, shape } (checked as the wasm layer checks it) or
 * { buffer: GPUBuffer, shape } holding float32 values, usable as a storage buffer.
 */
export function checkInput(name, tensor, { expected, optional = false }) {
  if (tensor !== null && typeof tensor === 'object' && 'buffer' in tensor && !ArrayBuffer.isView(tensor)) {
    const { buffer, shape } = tensor;
    if (!isGpuBuffer(buffer)) throw new TypeError(`${name}.buffer must be a GPUBuffer, got ${describe(buffer)}`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new TypeError(`${name}.shape must be an array of non-negative integers${expected ? ` (${expected})` : ''}`);
    }
    if ((buffer.usage & STORAGE) === 0) {
      throw new TypeError(`${name}.buffer: a GPUBuffer without GPUBufferUsage.STORAGE; the kernels read it as a storage buffer`);
    }
    if (buffer.size < count(shape) * 4) {
      throw new RangeError(`${name}: shape [${shape.join(', ')}] needs ${count(shape) * 4} bytes, but the buffer has ${buffer.size}`);
    }
    return { buffer, shape, onGpu: true };
  }
  return checkTensor(name, tensor, { expected, optional });
}

/**
 * Throws a TypeError naming `name` when `device` cannot use `buffer` (made by another GPUDevice,
 * or destroyed): WebGPU has no query for either, so a no-op kernel reads it in an error scope.
 */
export async function checkUsableOn(device, name, buffer) {
  await runChecked(device, () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    dispatch(device, pass, pipeline(device, 'buffer_probe'), { 0: buffer }, [1, 1, 1]);
    pass.end();
    device.queue.submit([encoder.finish()]);
  }, {
    rejected: `${name}.buffer cannot be used on this layer's device (a buffer of another GPUDevice, or a destroyed one)`,
    RejectedError: TypeError,
  });
}

/** Each GPU tensor of `tensors` ([name, checked tensor or null] pairs) checked usable on `device` (checkUsableOn). */
export async function checkGpuInputs(device, tensors) {
  for (const [name, t] of tensors) {
    if (t?.onGpu) await checkUsableOn(device, name, t.buffer);
  }
}

/**
 * checkFinite for the GPU tensors of `tensors` ([name, checked tensor or null] pairs): each is read
 * back (a copy of its shape's floats to the CPU: the price of the opt-in check) and checked as a
 * CPU tensor, named `name.buffer[i]`.
 */
export async function checkFiniteOnGpu(device, tensors) {
  for (const [name, t] of tensors) {
    if (!t?.onGpu) continue;
    const data = await readBack(device, t.buffer, count(t.shape));
    try {
      checkFinite({ [name]: { data, shape: t.shape } });
    } catch (error) {
      error.message = error.message.replace(`${name}.data[`, `${name}.buffer[`);
      throw error;
    }
  }
}

/** The buffers of one call: made here, destroyed by free() except those kept for the caller. */
export class CallBuffers {
  #device;
  #made = [];

  constructor(device) {
    this.#device = device;
  }

  /** A storage buffer of `floats` floats (at least one, so an empty tensor still binds). */
  storage(floats, label) {
    const buffer = this.#device.createBuffer({
      label, size: Math.max(16, Math.ceil(floats * 4 / 16) * 16), usage: STORAGE | COPY_SRC | COPY_DST,
    });
    this.#made.push(buffer);
    return buffer;
  }

  /** A storage buffer holding `array` (a Float32Array or Uint32Array). */
  upload(array, label) {
    const buffer = this.storage(array.length, label);
    this.#device.queue.writeBuffer(buffer, 0, array);
    return buffer;
  }

  /** A uniform buffer holding `array`. */
  uniform(array, label) {
    const buffer = this.#device.createBuffer({ label, size: Math.ceil(array.byteLength / 16) * 16, usage: UNIFORM | COPY_DST });
    this.#device.queue.writeBuffer(buffer, 0, array);
    this.#made.push(buffer);
    return buffer;
  }

  /** A buffer the caller keeps (not destroyed by free()). */
  keep(buffer) {
    this.#made = this.#made.filter((b) => b !== buffer);
    return buffer;
  }

  free() {
    for (const buffer of this.#made) buffer.destroy();
    this.#made = [];
  }
}

/** The first `floats` floats of `buffer`, read back to the CPU (into `target`, a Float32Array of `floats`, when given). */
export async function readBack(device, buffer, floats, target = null) {
  const bytes = floats * 4;
  if (bytes === 0) return target ?? new Float32Array(0);
  const staging = device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
  try {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 0, staging, 0, bytes);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(MAP_READ);
    if (target) {
      target.set(new Float32Array(staging.getMappedRange()));
      return target;
    }
    return new Float32Array(staging.getMappedRange().slice(0));
  } finally {
    staging.destroy();
  }
}

/** A result left on the GPU: { buffer, shape, read(), dispose() }; the caller owns the buffer. */
export function gpuTensor(device, buffer, shape) {
  return {
    buffer,
    shape,
    read: () => readBack(device, buffer, count(shape)),
    dispose: () => buffer.destroy(),
  };
}

/**
 * A call's result tensors as the caller gets them. `tensors`: { name: { buffer, shape, target? }
 * or null }. With `onGpu` each becomes a GPU tensor (gpuTensor; its buffer kept out of `buffers`:
 * the caller's), else { data, shape } read back (into `target`, a Float32Array, when given).
 * Returns the same names, null for null.
 */
export async function resultTensors(device, buffers, tensors, onGpu) {
  const entries = Object.entries(tensors);
  const shaped = await Promise.all(entries.map(async ([, t]) => {
    if (!t) return null;
    if (onGpu) return gpuTensor(device, buffers.keep(t.buffer), t.shape);
    return { data: await readBack(device, t.buffer, count(t.shape), t.target ?? null), shape: t.shape };
  }));
  return Object.fromEntries(entries.map(([name], i) => [name, shaped[i]]));
}

/**
 * A forward call's results as the caller gets them (resultTensors): { output, weights, captured }
 * from what it submitted ({ output, weights, captured: GPUBuffers by step name }); captured steps
 * go where the output goes (GPU tensors with outputLocation 'gpu'), undefined when none were asked.
 */
export async function callResults(device, buffers, call, submitted) {
  const steps = Object.fromEntries((call.planned?.captured ?? []).map(({ name, shape }) => [name, { buffer: submitted.captured[name], shape }]));
  const [{ output, weights }, captured] = await Promise.all([
    resultTensors(device, buffers, {
      output: { buffer: submitted.output, shape: call.outputShape, target: call.out },
      weights: submitted.weights && { buffer: submitted.weights, shape: call.weightsShape, target: call.weightsOut },
    }, call.gpuOutput),
    call.capture ? resultTensors(device, buffers, steps, call.gpuOutput) : undefined,
  ]);
  return { output, weights, captured };
}
