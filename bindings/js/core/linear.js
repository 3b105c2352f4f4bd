// linear() and linearBackward(): nn.Linear's forward and backward on the module's GEMM
// (src/mha/kernels/linear.hpp; the attention layers' projections run on the same kernel), for the
// layers a model puts around attention: an embedding's transpose, an unembedding, a classifier.
// Stateless: the caller keeps the weights and may pass its own output and gradient buffers, which
// are written whole (not added to), so a training loop allocates nothing per step.
import { withCallName } from '../api/errors.js';
import { copyOutFloats, copyOutFloatsInto, HeapScope, viewsHeap } from './heap.js';
import {
  checkKnownKeys, checkPlainObject, checkTensor, describe,
} from '../api/validate.js';

const FORWARD_OPTIONS = ['out'];
const BACKWARD_OPTIONS = ['dInput', 'dWeight', 'dBias'];

const shapeText = (shape) => `[${shape.join(', ')}]`;

/** weight { data, shape [outFeatures, inFeatures] } -> [outFeatures, inFeatures]. */
function checkWeight(call, weight) {
  checkTensor(`${call}: weight`, weight, { expected: '[outFeatures, inFeatures]' });
  if (weight.shape.length !== 2 || weight.shape[0] < 1 || weight.shape[1] < 1) {
    throw new RangeError(`${call}: weight must have shape [outFeatures, inFeatures], both at least 1, got ${shapeText(weight.shape)}`);
  }
  return weight.shape;
}

/** A tensor whose last dimension is `features` (at least one dimension): its row count. */
function checkRows(call, name, tensor, features, expected) {
  checkTensor(`${call}: ${name}`, tensor, { expected });
  const { shape } = tensor;
  if (shape.length < 1 || shape[shape.length - 1] !== features) {
    throw new RangeError(`${call}: ${name} must have shape ${expected} with ${expected.includes('inFeatures') ? 'inFeatures' : 'outFeatures'} = ${features} (the weight's), got ${shapeText(shape)}`);
  }
  return tensor.data.length / features;
}

/** An optional caller-owned Float32Array of exactly `count` floats, not a view of wasm memory. */
function checkBuffer(module, call, name, buffer, count, what) {
  if (buffer === undefined || buffer === null) return null;
  if (!(buffer instanceof Float32Array)) throw new TypeError(`${call}: ${name} must be a Float32Array, got ${describe(buffer)}`);
  if (viewsHeap(module, buffer)) {
    throw new TypeError(`${call}: ${name} must be the caller's own Float32Array, not a view of the module's WebAssembly memory`);
  }
  if (buffer.length !== count) throw new RangeError(`${call}: ${name}: expected ${count} floats (${what}), got ${buffer.length}`);
  return buffer;
}

function checkBias(call, bias, outFeatures) {
  if (bias === undefined || bias === null) return null;
  if (!(bias instanceof Float32Array)) throw new TypeError(`${call}: bias must be a Float32Array or null, got ${describe(bias)}`);
  if (bias.length !== outFeatures) throw new RangeError(`${call}: bias: expected ${outFeatures} floats (outFeatures), got ${bias.length}`);
  return bias;
}

function checkOptions(call, options, known) {
  checkPlainObject(`${call}: options`, options);
  checkKnownKeys(`${call}: options`, options, known);
}

/** The module's linear() and linearBackward(). */
export function defineLinear(module) {
  /**
   * y = x W^T + b (PyTorch's nn.Linear): input { data, shape [..., inFeatures] }, weight
   * { data, shape [outFeatures, inFeatures] }, bias Float32Array [outFeatures] or null.
   * Returns { data, shape [..., outFeatures] } (data: options.out when given).
   */
  function linear(input, weight, bias = null, options = {}) {
    const call = 'linear';
    const [outFeatures, inFeatures] = checkWeight(call, weight);
    const rows = checkRows(call, 'input', input, inFeatures, '[..., inFeatures]');
    const b = checkBias(call, bias, outFeatures);
    checkOptions(call, options, FORWARD_OPTIONS);
    const outputShape = [...input.shape.slice(0, -1), outFeatures];
    const out = checkBuffer(module, call, 'options.out', options.out, rows * outFeatures, `shape ${shapeText(outputShape)}`);
    const scope = new HeapScope(module);
    try {
      const x = scope.copyIn(input.data);
      const w = scope.copyIn(weight.data);
      const bp = b ? scope.copyIn(b) : 0;
      const y = scope.allocate(4 * rows * outFeatures);
      module.linearForward(x, w, bp, y, rows, inFeatures, outFeatures);
      return { data: out ? copyOutFloatsInto(module, y, out) : copyOutFloats(module, y, rows * outFeatures), shape: outputShape };
    } catch (error) {
      throw withCallName(error, call);
    } finally {
      scope.free();
    }
  }

  /**
   * The gradients of y = x W^T + b given dOutput = dLoss/dy ({ data, shape [..., outFeatures] },
   * the input's rows): { input: { data, shape } (dLoss/dx), weight: Float32Array [outFeatures *
   * inFeatures], bias: Float32Array [outFeatures] }. options.dInput / dWeight / dBias: the
   * caller's Float32Arrays to write them into.
   */
  function linearBackward(dOutput, input, weight, options = {}) {
    const call = 'linearBackward';
    const [outFeatures, inFeatures] = checkWeight(call, weight);
    const rows = checkRows(call, 'input', input, inFeatures, '[..., inFeatures]');
    const dRows = checkRows(call, 'dOutput', dOutput, outFeatures, '[..., outFeatures]');
    if (dRows !== rows) {
      throw new RangeError(`${call}: dOutput must have the input's rows: shape ${shapeText([...input.shape.slice(0, -1), outFeatures])}, got ${shapeText(dOutput.shape)}`);
    }
    checkOptions(call, options, BACKWARD_OPTIONS);
    const dInput = checkBuffer(module, call, 'options.dInput', options.dInput, rows * inFeatures, `the input's shape ${shapeText(input.shape)}`);
    const dWeight = checkBuffer(module, call, 'options.dWeight', options.dWeight, outFeatures * inFeatures, `the weight's shape ${shapeText(weight.shape)}`);
    const dBias = checkBuffer(module, call, 'options.dBias', options.dBias, outFeatures, 'outFeatures');
    const scope = new HeapScope(module);
    try {
      const dy = scope.copyIn(dOutput.data);
      const x = scope.copyIn(input.data);
      const w = scope.copyIn(weight.data);
      const dx = scope.allocate(4 * rows * inFeatures);
      const dw = scope.allocate(4 * outFeatures * inFeatures);
      const db = scope.allocate(4 * outFeatures);
      module.linearBackward(dy, x, w, dx, dw, db, rows, inFeatures, outFeatures);
      const take = (ptr, count, buffer) => (buffer ? copyOutFloatsInto(module, ptr, buffer) : copyOutFloats(module, ptr, count));
      return {
        input: { data: take(dx, rows * inFeatures, dInput), shape: [...input.shape] },
        weight: take(dw, outFeatures * inFeatures, dWeight),
        bias: take(db, outFeatures, dBias),
      };
    } catch (error) {
      throw withCallName(error, call);
    } finally {
      scope.free();
    }
  }

  return { linear, linearBackward };
}
