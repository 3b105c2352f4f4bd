// forwardAsync's result with grad: true on WebGPU: the output, plus what the backward pass needs
// kept on the GPU (the call's buffers: inputs, projected q / k / v, attended values, log-sum-exps,
// masks) until backwardAsync() or release(). The same surface and errors as the wasm layer's
// TrainingResult (core/training.js), asynchronous only.
import { withCallName } from '../api/errors.js';
import { leakRegistry } from '../core/leak-warning.js';
import { checkDOut, TrainingResultBase } from '../core/training.js';
import { checkKnownKeys, checkPlainObject, describe } from '../api/validate.js';
import { checkInput } from './tensors.js';

/** The synchronous backward of a result (mha-wasm/tfjs); not public API. */
export const SUBMIT_BACKWARD = Symbol('mha-wasm webgpu: submit backward now');

/** A result garbage-collected with its GPU buffers still held: free them, and say so once (as the wasm layer). */
const leakedResults = leakRegistry('mha-wasm: a WebGPU forward result with grad: true was garbage-collected before backwardAsync() or '
  + 'release(); its GPU buffers were freed late. Call r.backwardAsync(dOut) or r.release() for every such result.',
(record) => freeGpuRecord(record, 'collected'), (record) => record.state === 'ready');

const sameShape = (a, b) => Array.isArray(a) && a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * What a result and its layer share: the saved state and where it stands ('ready', 'running'
 * while its backward runs, then 'done', 'released', 'disposed' with its layer, or 'collected'). `owner` is the
 * layer's private side: { backward(saved, dOut) -> Promise<Gradients>, backwardNow(saved, dOut) (SUBMIT_BACKWARD's), onFree(record) }.
 */
export function gpuTrainingRecord(saved, owner) {
  return { saved, owner, state: 'ready' };
}

/**
 * What a forward call with grad keeps for its backward pass (backward.js reads it): `call` the
 * layer's prepared call, `c` the resolved config, `buffers` its CallBuffers (kept), `submitted`
 * what it encoded (weights w, inputs x, xk, xv and encodeForward's buffers in `made`).
 */
export function savedForward(c, call, buffers, { w, made, x, xk, xv }) {
  const { B, L, S, self } = call.sizes;
  return {
    buffers, c, B, L, S, self, w, ...made, x, xk, xv, appended: call.appended, sequenceFirst: call.sequenceFirst,
    positions: call.positions && Int32Array.from(call.positions.data),
    inputShapes: { query: [...call.query.shape], key: call.key && [...call.key.shape], value: call.value && [...call.value.shape] },
  };
}

/** Frees a record's GPU buffers once; `state` says why. */
export function freeGpuRecord(record, state) {
  if (record.state !== 'ready' && record.state !== 'running') return;
  record.state = state;
  record.saved.buffers.free();
  record.saved = null;
  record.owner.onFree(record);
}

export class GpuTrainingResult extends TrainingResultBase {
  #record;

  constructor(record, output, weights) {
    super(record, output, weights, leakedResults);
    this.#record = record;
  }

  /**
   * dLoss/d(inputs and parameters) for dLoss/dOutput = dOut ({ data: Float32Array, shape } or
   * { buffer: GPUBuffer, shape } of the output's shape), as the wasm layer's. Call once.
   * options.outputLocation: 'gpu' (every gradient a GPU tensor { buffer, shape, read(), dispose() }
   * the caller owns; nothing read back) or 'cpu' (Float32Arrays read back); by default where the
   * forward put its output (the rule: outputLocation 'gpu' keeps outputs and gradients there).
   */
  async backwardAsync(dOut, options = {}) {
    try {
      return await this.#backward(dOut, options);
    } catch (error) {
      throw withCallName(error, 'backwardAsync');
    }
  }

  async #backward(dOut, options) {
    const record = this.#record;
    // The one place that checks backwardAsync's options (layer.js applies them).
    checkPlainObject('options', options);
    checkKnownKeys('options', options, ['outputLocation']);
    if (options.outputLocation !== undefined && options.outputLocation !== 'cpu' && options.outputLocation !== 'gpu') {
      throw new TypeError(`outputLocation must be 'cpu' or 'gpu', got ${describe(options.outputLocation)}`);
    }
    if (record.state === 'done' || record.state === 'running') throw new Error('already called for this forward pass (call forward again)');
    if (record.state === 'disposed') throw new Error('the layer that made this forward pass was disposed');
    if (record.state === 'released') throw new Error('this forward pass was released (release() frees what backward needs)');
    const { shape } = this.output;
    const count = shape.reduce((n, d) => n * d, 1);
    const onGpu = checkDOut(dOut, shape, count, { gpu: true });
    if (onGpu) checkInput('dOut', dOut, { expected: `[${shape.join(', ')}]` });
    record.state = 'running';
    try {
      const gradients = await record.owner.backward(record.saved, onGpu ? { buffer: dOut.buffer } : { data: dOut.data },
        { onGpu: (options.outputLocation ?? (this.output.buffer ? 'gpu' : 'cpu')) === 'gpu' });
      leakedResults.unregister(this);
      freeGpuRecord(record, 'done');
      return gradients;
    } catch (error) {
      // A failed backward (weights changed since, a lost device) leaves the result as it was, as
      // the wasm layer's: release() still frees it.
      if (record.state === 'running') record.state = 'ready';
      throw error;
    }
  }

  /**
   * backwardAsync's work for a dOut on the GPU ({ buffer, shape }), submitted now (mha-wasm/tfjs:
   * tfjs' gradient functions are synchronous). Returns { gradients (backward.js's GPUBuffers:
   * query, key, value, qW, kW, vW, outW, qB, kB, vB, outB, ...), verdict, free() }; free() once the
   * gradients were read on the GPU.
   */
  [SUBMIT_BACKWARD](dOut) {
    const record = this.#record;
    if (record.state !== 'ready') throw new Error(`backwardAsync: this forward pass is ${record.state}, not ready for a backward`);
    const { shape } = this.output;
    if (!sameShape(dOut?.shape, shape)) throw new RangeError(`dOut: expected the output's shape [${shape.join(', ')}]`);
    checkInput('dOut', dOut, { expected: `[${shape.join(', ')}]` });
    record.state = 'running';
    try {
      const submitted = record.owner.backwardNow(record.saved, { buffer: dOut.buffer });
      leakedResults.unregister(this);
      return { ...submitted, free: () => { submitted.free(); freeGpuRecord(record, 'done'); } };
    } catch (error) {
      if (record.state === 'running') record.state = 'ready';
      throw withCallName(error, 'backwardAsync');
    }
  }

  /** Frees what forward kept on the GPU, without a backward (a no-op after backward or a release). */
  release() {
    if (this.#record.state === 'running') return;  // the running backward frees it when it ends
    leakedResults.unregister(this);
    freeGpuRecord(this.#record, 'released');
  }
}
