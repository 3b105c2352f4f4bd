// AdamW on the GPU: parameters updated in place from gradients on the GPU (backwardAsync's
// outputLocation 'gpu'), the moments kept on the GPU between steps (adamw.wgsl), and the sum of
// squares of gradients for a global-norm clip (sum_squares.wgsl). The formula is
// web/training/adamw.js's (PyTorch's torch.optim.AdamW), its reference twin: the per-step scalars
// (bias corrections, decay) are computed here in float64 exactly as there.
import { withCallName } from '../api/errors.js';
import { checkKnownKeys, checkPlainObject, describe } from '../api/validate.js';
import { COPY_DST, COPY_SRC, STORAGE } from './buffer-usage.js';
import { lostError } from './device.js';
import { failWithLoss, runChecked } from './gpu-work.js';
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';
import { CallBuffers, isGpuBuffer, readBack } from './tensors.js';

const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** A { buffer, shape } tensor named `name` in `what`, checked: a GPUBuffer with STORAGE usage and room for its shape. */
function checkGpuTensor(what, name, t) {
  const label = `${what}['${name}']`;
  if (t === null || typeof t !== 'object' || !isGpuBuffer(t.buffer)) {
    throw new TypeError(`${label} must be { buffer: GPUBuffer, shape } (a GPU tensor), got ${t && typeof t === 'object' ? `buffer ${describe(t.buffer)}` : describe(t)}`);
  }
  if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new TypeError(`${label}.shape must be an array of non-negative integers`);
  }
  if ((t.buffer.usage & STORAGE) === 0) throw new TypeError(`${label}.buffer: a GPUBuffer without GPUBufferUsage.STORAGE`);
  if (t.buffer.size < count(t.shape) * 4) {
    throw new RangeError(`${label}: shape [${t.shape.join(', ')}] needs ${count(t.shape) * 4} bytes, but the buffer has ${t.buffer.size}`);
  }
  return count(t.shape);
}

function checkNumber(name, value, { min = -Infinity, max = Infinity } = {}) {
  if (typeof value !== 'number' || !(value >= min && value <= max)) {
    throw new RangeError(`${name} must be a number in [${min}, ${max}], got ${describe(value)}`);
  }
}

// AdamW's GPU work, checked (gpu-work.js); a rejection most likely means a tensor's buffer is of
// another device or destroyed.
const WORDS = { rejected: 'the GPU rejected the call (a buffer of another device, or a destroyed one?)', RejectedError: TypeError };

/** The optimizer, given its device (`gpu`: { device, lost } from openDevice); defineAdamW binds it for the public class. */
export class GpuAdamW {
  #gpu;
  #device;
  #moments = new Map();  // name -> { first, second, floats }: GPUBuffers, zero at a name's first step
  #steps = 0;
  #disposed = false;

  /** @param {{ weightDecay?: number, beta2?: number, eps?: number }} options as web/training/adamw.js's */
  constructor(gpu, options = {}) {
    this.#gpu = gpu;
    this.#device = gpu.device;
    try {
      checkPlainObject('options', options);
      checkKnownKeys('options', options, ['weightDecay', 'beta2', 'eps']);
      const { weightDecay = 0.01, beta2 = 0.999, eps = 1e-8 } = options;
      checkNumber('weightDecay', weightDecay, { min: 0 });
      checkNumber('beta2', beta2, { min: 0, max: 1 });
      checkNumber('eps', eps, { min: 0 });
      Object.assign(this, { weightDecay, beta2, eps });
    } catch (error) {
      throw withCallName(error, 'AdamW');
    }
  }

  /** Updates done so far (the bias corrections' t is steps + 1 at the next). */
  get steps() { return this.#steps; }

  #live(call) {
    if (this.#disposed) throw new TypeError(`AdamW.${call}: this optimizer was disposed`);
  }

  /** `submit(buffers)`'s GPU work, its verdict awaited; a lost device is the error when it failed. */
  async #checked(call, submit) {
    const device = this.#device;
    if (this.#gpu.lost) throw lostError(`AdamW.${call}`, this.#gpu.lost);
    const buffers = new CallBuffers(device);
    try {
      return await failWithLoss(device, `AdamW.${call}`, () => runChecked(device, () => submit(buffers), WORDS));
    } finally {
      buffers.free();
    }
  }

  #moment(name, floats) {
    const device = this.#device;
    let made = this.#moments.get(name);
    if (made && made.floats !== floats) {
      throw new RangeError(`params['${name}']: ${floats} floats, but its moments hold ${made.floats} (one optimizer per set of parameters)`);
    }
    if (!made) {
      const make = (label) => device.createBuffer({ label, size: Math.max(16, floats * 4), usage: STORAGE | COPY_SRC | COPY_DST });
      made = { first: make(`${name} first moment`), second: make(`${name} second moment`), floats };
      this.#moments.set(name, made);  // (createBuffer zeroes them)
    }
    return made;
  }

  /**
   * One update of every tensor of `params` (a record of { buffer, shape } GPU tensors, updated in
   * place) from `grads` (the same names and shapes, e.g. backwardAsync's GpuGradients.params),
   * with learning rate `lr`, momentum `beta1` and each gradient multiplied by `gradScale` first.
   * Resolves once the GPU accepted the work.
   */
  async step(params, grads, { lr, beta1 = 0.9, gradScale = 1 } = {}) {
    try {
      this.#live('step');
      checkPlainObject('params', params);
      checkPlainObject('grads', grads);
      checkNumber('lr', lr, { min: 0 });
      checkNumber('beta1', beta1, { min: 0, max: 1 });
      checkNumber('gradScale', gradScale, { min: 0 });
      const jobs = [];
      for (const [name, p] of Object.entries(params)) {
        const floats = checkGpuTensor('params', name, p);
        if (!(name in grads)) throw new TypeError(`grads: no gradient for '${name}'`);
        checkGpuTensor('grads', name, grads[name]);
        if (count(grads[name].shape) !== floats || grads[name].shape.length !== p.shape.length
          || grads[name].shape.some((d, i) => d !== p.shape[i])) {
          throw new RangeError(`grads['${name}']: expected the parameter's shape [${p.shape.join(', ')}], got [${grads[name].shape.join(', ')}]`);
        }
        jobs.push({ name, p, g: grads[name], floats });
      }
      const device = this.#device;
      const t = this.#steps + 1;
      const { beta2, eps } = this;
      // (adamw.js's scalars, in float64, then rounded to float32 for the kernel)
      const scalars = { beta1, oneMinusBeta1: 1 - beta1, beta2, oneMinusBeta2: 1 - beta2, stepSize: lr / (1 - beta1 ** t),
        decay: 1 - lr * this.weightDecay, correction2Root: Math.sqrt(1 - beta2 ** t), eps, gradScale };
      await this.#checked('step', (buffers) => {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        for (const { name, p, g, floats } of jobs) {
          if (floats === 0) continue;
          const m = this.#moment(name, floats);
          dispatch(device, pass, pipeline(device, 'adamw'), {
            0: p.buffer, 1: g.buffer, 2: m.first, 3: m.second, 4: buffers.uniform(uniformData('adamw', { n: floats, ...scalars }), 'adamw step'),
          }, flatWorkgroups('adamw', floats));
        }
        pass.end();
        device.queue.submit([encoder.finish()]);
      });
      this.#steps = t;
    } catch (error) {
      throw withCallName(error, 'AdamW.step');
    }
  }

  /** The sum of the squares of every element of `tensors` (a record of GPU tensors): one float per tensor read back. */
  async squaredNorm(tensors) {
    try {
      this.#live('squaredNorm');
      checkPlainObject('tensors', tensors);
      const device = this.#device;
      const entries = Object.entries(tensors).map(([name, x]) => [x, checkGpuTensor('tensors', name, x)]);
      const sums = await this.#checked('squaredNorm', (buffers) => {
        const out = buffers.storage(entries.length, 'sums of squares');
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        entries.forEach(([x, floats], slot) => {
          dispatch(device, pass, pipeline(device, 'sum_squares'), {
            0: x.buffer, 1: out, 2: buffers.uniform(uniformData('sum_squares', { n: floats, slot }), 'sum of squares dims'),
          }, [1, 1, 1]);
        });
        pass.end();
        device.queue.submit([encoder.finish()]);
        return readBack(device, out, entries.length);
      });
      let total = 0;
      for (const s of sums) total += s;
      return total;
    } catch (error) {
      throw withCallName(error, 'AdamW.squaredNorm');
    }
  }

  /**
   * The optimizer's state read back: { steps, firstMoment, secondMoment } (records of
   * Float32Arrays by parameter name), as web/training/adamw.js holds it.
   */
  async state() {
    try {
      this.#live('state');
      const device = this.#device;
      const names = [...this.#moments.keys()];
      const read = await this.#checked('state', () => Promise.all(names.flatMap((name) => {
        const m = this.#moments.get(name);
        return [readBack(device, m.first, m.floats), readBack(device, m.second, m.floats)];
      })));
      return {
        steps: this.#steps,
        firstMoment: Object.fromEntries(names.map((name, i) => [name, read[2 * i]])),
        secondMoment: Object.fromEntries(names.map((name, i) => [name, read[2 * i + 1]])),
      };
    } catch (error) {
      throw withCallName(error, 'AdamW.state');
    }
  }

  /** Replaces the state with `state` ({ steps, firstMoment, secondMoment } of Float32Arrays, as state() gives). */
  loadState(state) {
    try {
      this.#live('loadState');
      checkPlainObject('state', state);
      if (!Number.isSafeInteger(state.steps) || state.steps < 0) throw new RangeError(`state.steps must be an integer >= 0, got ${describe(state.steps)}`);
      for (const which of ['firstMoment', 'secondMoment']) checkPlainObject(`state.${which}`, state[which]);
      for (const [name, first] of Object.entries(state.firstMoment)) {
        const second = state.secondMoment[name];
        if (!(first instanceof Float32Array) || !(second instanceof Float32Array) || first.length !== second.length) {
          throw new TypeError(`state: '${name}' needs Float32Arrays of one length in firstMoment and secondMoment`);
        }
      }
      this.#freeMoments();
      const device = this.#device;
      for (const [name, first] of Object.entries(state.firstMoment)) {
        const m = this.#moment(name, first.length);
        if (first.length) {
          device.queue.writeBuffer(m.first, 0, first);
          device.queue.writeBuffer(m.second, 0, state.secondMoment[name]);
        }
      }
      this.#steps = state.steps;
      return this;
    } catch (error) {
      throw withCallName(error, 'AdamW.loadState');
    }
  }

  #freeMoments() {
    for (const m of this.#moments.values()) {
      m.first.destroy();
      m.second.destroy();
    }
    this.#moments.clear();
  }

  /** Frees the moments. Safe to call more than once. */
  dispose() {
    this.#disposed = true;
    this.#freeMoments();
  }
}

/** The public AdamW class, bound to `gpu` ({ device, lost } from openDevice). */
export function defineAdamW(gpu) {
  return class AdamW extends GpuAdamW {
    constructor(options = {}) { super(gpu, options); }
  };
}
