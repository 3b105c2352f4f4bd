// scaledDotProductAttention(query, key, value, options): the attention function on queries, keys
// and values that are already projected (PyTorch's F.scaled_dot_product_attention, ONNX's
// Attention, Keras' ops.dot_product_attention), on the layer's kernels (src/mha/function/attention_function.hpp,
// which checks every shape). This file reads a call in one place: option names and types, masks,
// the typed arrays, then the core's plan, the heap, and the result. docs/attention-function.md.
import { withCallName } from '../api/errors.js';
import { widenTensor } from '../api/float16-io.js';
import { copyOutFloats, HeapScope } from './heap.js';
import { checkMask } from '../api/masks.js';
import { checkDOut } from './training.js';
import {
  checkBoolean, checkInteger, checkKnownKeys, checkPlainObject, checkTensor, describe,
} from '../api/validate.js';

const CALL = 'scaledDotProductAttention';

/**
 * (No public API.) A module's planner of attention calls, for the WebGPU backend: the call read
 * and checked as here, and the core's plan: its shapes and sizes. [PLAN_ATTENTION](query, key, value,
 * options) -> { tensors, scalars, grad, plan }.
 */
export const PLAN_ATTENTION = Symbol('mha-wasm: plan an attention call');
/** The options the function reads (a backend adds its own: WebGPU's outputLocation). */
export const OPTION_KEYS = [
  'attnMask', 'causal', 'causalOffset', 'kvSeqLens', 'scale', 'softcap', 'dropout', 'seed', 'pastKey', 'pastValue',
  'numHeads', 'kvNumHeads', 'needWeights', 'capture', 'slidingWindow', 'alibiSlopes', 'sinks', 'grad',
];
/**
 * (No public API.) The core's causal modes, named once for JS (src/mha/function/attention_function.hpp,
 * CausalMode, whose numbers the plan's `causal` carries): the WebGPU backend asks this table.
 */
export const CAUSAL_MODES = Object.freeze({ none: 0, topLeft: 1, bottomRight: 2, offset: 3 });
// The option's string values (its public spelling) and the modes they name.
const CAUSAL_OPTIONS = { 'top-left': CAUSAL_MODES.topLeft, 'bottom-right': CAUSAL_MODES.bottomRight };
const ERROR_CLASSES = [Error, TypeError, RangeError, Error];

/** A float input: Float32Array, or Float16Array where the runtime has it (widened: the math is float32). */
function checkFloats(name, tensor, expected, optional = false) {
  return checkTensor(name, widenTensor(tensor), { expected, optional });
}

function checkInt32s(name, value, expected) {
  if (value === undefined || value === null) return null;
  if (!(value instanceof Int32Array)) throw new TypeError(`${name} must be an Int32Array (${expected}), got ${describe(value)}`);
  return { data: value, shape: [value.length] };
}

/** causal and causalOffset -> { mode, offsets: Int32Array | null }. */
function checkCausal(causal, causalOffset) {
  if (causal !== undefined && typeof causal !== 'boolean' && !(typeof causal === 'string' && Object.hasOwn(CAUSAL_OPTIONS, causal))) {
    const names = Object.keys(CAUSAL_OPTIONS).map((name) => `'${name}'`).join(' or ');
    throw new TypeError(`causal must be true, false, ${names}, got ${describe(causal)}`);
  }
  if (causalOffset === undefined || causalOffset === null) {
    return { mode: causal === true ? CAUSAL_MODES.topLeft : causal ? CAUSAL_OPTIONS[causal] : CAUSAL_MODES.none, offsets: null };
  }
  if (causal === false || typeof causal === 'string') {
    throw new TypeError(`causalOffset: implies causal (query i sees keys j <= i + offset); omit causal or pass true, got causal: ${describe(causal)}`);
  }
  if (typeof causalOffset === 'number') {
    if (!Number.isInteger(causalOffset) || Math.abs(causalOffset) > 0x7fffffff) {
      throw new RangeError(`causalOffset must be an integer (or an Int32Array with one per batch row), got ${causalOffset}`);
    }
    return { mode: CAUSAL_MODES.offset, offsets: Int32Array.of(causalOffset) };
  }
  if (!(causalOffset instanceof Int32Array)) {
    throw new TypeError(`causalOffset must be an integer or an Int32Array [B], got ${describe(causalOffset)}`);
  }
  return { mode: CAUSAL_MODES.offset, offsets: causalOffset };
}

/** A number option: finite, and > 0 or in [0, 1) where asked. */
function checkNumber(name, value, rule) {
  if (value === undefined) return;
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  const ok = rule === 'positive' ? value > 0 && Number.isFinite(value)
    : rule === 'probability' ? value >= 0 && value < 1 : Number.isFinite(value);
  if (!ok) {
    const expected = rule === 'positive' ? 'a finite number > 0' : rule === 'probability' ? 'a number in [0, 1)' : 'a finite number';
    throw new RangeError(`${name} must be ${expected}, got ${value}`);
  }
}

/** Every argument checked and converted, before anything touches the heap. */
function readCall(query, key, value, options) {
  checkPlainObject(`${CALL}: options`, options);
  checkKnownKeys('options', options, OPTION_KEYS);
  checkInteger('numHeads', options.numHeads, { optional: true });
  checkInteger('kvNumHeads', options.kvNumHeads, { optional: true });
  const packed = options.numHeads !== undefined;
  const q = checkFloats('query', query, packed ? '[B, L, numHeads*E]' : '[B, Hq, L, E] or [Hq, L, E]');
  const k = checkFloats('key', key, packed ? '[B, S, kvNumHeads*E]' : '[B, Hkv, S, E]');
  const v = checkFloats('value', value, packed ? '[B, S, kvNumHeads*Ev]' : '[B, Hkv, S, Ev]');
  const pastKey = checkFloats('pastKey', options.pastKey, '[B, Hkv, P, E]', true);
  const pastValue = checkFloats('pastValue', options.pastValue, '[B, Hkv, P, Ev]', true);
  const attnMask = checkMask('attnMask', options.attnMask,
    { expected: 'broadcasting to [B, Hq, L, P+S] (bool: 1 = attend)' });
  const causal = checkCausal(options.causal, options.causalOffset);
  const kvSeqLens = checkInt32s('kvSeqLens', options.kvSeqLens, 'one key count per batch row, [B]');
  checkNumber('scale', options.scale);
  checkNumber('softcap', options.softcap, 'positive');
  checkNumber('dropout', options.dropout, 'probability');
  if (options.seed !== undefined && typeof options.seed !== 'number') throw new TypeError(`seed must be a number, got ${describe(options.seed)}`);
  if (options.seed !== undefined && (!Number.isSafeInteger(options.seed) || options.seed < 0)) {
    throw new RangeError(`seed must be an integer from 0 to 2^53 - 1, got ${options.seed}`);
  }
  checkInteger('slidingWindow', options.slidingWindow, { optional: true });
  let alibiSlopes;
  if (options.alibiSlopes !== undefined) {
    if (!(options.alibiSlopes instanceof Float32Array) && !Array.isArray(options.alibiSlopes)) {
      throw new TypeError(`alibiSlopes must be a Float32Array or an array of numbers (one per query head), got ${describe(options.alibiSlopes)}`);
    }
    alibiSlopes = [...options.alibiSlopes];
    if (!alibiSlopes.every((x) => typeof x === 'number')) throw new TypeError('alibiSlopes must hold numbers');
  }
  let sinks = null;
  if (options.sinks !== undefined && options.sinks !== null) {
    if (!(options.sinks instanceof Float32Array)) throw new TypeError(`sinks must be a Float32Array [Hq], got ${describe(options.sinks)}`);
    sinks = { data: options.sinks, shape: [options.sinks.length] };
  }
  checkBoolean('needWeights', options.needWeights);
  checkBoolean('capture', options.capture);
  checkBoolean('grad', options.grad);
  return {
    tensors: {
      query: q, key: k, value: v, pastKey, pastValue, attnMask, kvSeqLens, sinks, causalOffsets: causal.offsets && { data: causal.offsets, shape: [causal.offsets.length] },
    },
    scalars: {
      numHeads: options.numHeads ?? 0,
      kvNumHeads: options.kvNumHeads ?? 0,
      causal: causal.mode,
      ...(options.scale !== undefined ? { scale: options.scale } : {}),
      softcap: options.softcap ?? 0,
      dropout: options.dropout ?? 0,
      // PyTorch draws a fresh dropout mask each call; a seed makes it repeatable.
      seed: options.seed ?? (options.dropout ? Math.floor(Math.random() * 2 ** 32) : 0),
      slidingWindow: options.slidingWindow ?? 0,
      ...(alibiSlopes ? { alibiSlopes } : {}),
      needWeights: options.needWeights ?? false,
      capture: options.capture ?? false,
    },
    grad: options.grad ?? false,
  };
}

/** B * Hq * L: the rows of the output (its last dimension is Ev, or Hq * Ev in the 3-D form). */
function lseCount({ sizes }) {
  return sizes.B * sizes.Hq * sizes.L;
}

function throwHandleError(handle) {
  const ErrorClass = ERROR_CLASSES[handle.lastErrorKind()] ?? Error;
  throw new ErrorClass(handle.takeError());
}

/** The module's scaledDotProductAttention and scaledDotProductAttentionAsync. */
export function defineAttentionFunction(module) {
  // One per module, made with it (so no call allocates it) and never freed: it holds only the
  // last error, until it is read.
  const handle = new module.AttentionFunctionHandle();

  /** The request the core reads, its tensors copied into `scope`. */
  function requestIn(scope, tensors, scalars) {
    const request = { ...scalars };
    for (const [name, tensor] of Object.entries(tensors)) {
      if (tensor) request[name] = { ptr: scope.copyIn(tensor.data), shape: tensor.shape, isBool: tensor.data instanceof Uint8Array };
    }
    return request;
  }

  /**
   * backward(dOut) of a call with grad: the gradients of its query, key and value (and pasts), from
   * copies of its inputs, its output and each row's log-sum-exp (no L x T buffer is kept).
   */
  function backwardOf(tensors, scalars, output, lse) {
    return function backward(dOut) {
      try {
        checkDOut(dOut, output.shape, output.data.length);
        const scope = new HeapScope(module);
        try {
          const request = requestIn(scope, tensors, { ...scalars, needWeights: false, capture: false });
          const room = (tensor) => (tensor ? scope.allocate(4 * tensor.data.length, 'a gradient') : 0);
          const buffers = {
            output: scope.copyIn(output.data), lse: scope.copyIn(lse), dOutput: scope.copyIn(dOut.data),
            dQuery: room(tensors.query), dKey: room(tensors.key), dValue: room(tensors.value),
            dPastKey: room(tensors.pastKey), dPastValue: room(tensors.pastValue),
          };
          if (!handle.backward(request, buffers)) throwHandleError(handle);
          const take = (ptr, tensor) => ({ data: copyOutFloats(module, ptr, tensor.data.length), shape: [...tensor.shape] });
          const grads = { query: take(buffers.dQuery, tensors.query), key: take(buffers.dKey, tensors.key), value: take(buffers.dValue, tensors.value) };
          if (tensors.pastKey) {
            grads.pastKey = take(buffers.dPastKey, tensors.pastKey);
            grads.pastValue = take(buffers.dPastValue, tensors.pastValue);
          }
          return grads;
        } finally {
          scope.free();
        }
      } catch (error) {
        throw withCallName(error, 'backward');
      }
    };
  }

  /** The call read, checked and planned by the core (which checks every shape); nothing is kept. */
  function planCall(query, key, value, options = {}) {
    const call = readCall(query, key, value, options);
    const scope = new HeapScope(module);
    try {
      const plan = handle.plan(requestIn(scope, call.tensors, call.scalars));
      if (plan === null) throwHandleError(handle);
      return { ...call, plan };
    } finally {
      scope.free();
    }
  }

  function scaledDotProductAttention(query, key, value, options = {}) {
    try {
      const { tensors, scalars, grad } = readCall(query, key, value, options);
      const scope = new HeapScope(module);
      try {
        const request = requestIn(scope, tensors, scalars);
        const plan = handle.plan(request);
        if (plan === null) throwHandleError(handle);
        const count = (shape) => shape.reduce((n, d) => n * d, 1);
        const room = (shape, what) => (shape ? scope.allocate(4 * count(shape), what) : 0);
        const steps = plan.steps;
        const outputs = {
          output: room(plan.output, 'the output'),
          presentKey: room(plan.presentKey, 'presentKey'),
          presentValue: room(plan.presentValue, 'presentValue'),
          weights: room(plan.weights, 'the weights'),
          scores: room(steps, 'the captured scores'),
          capped: plan.capped ? room(steps, 'the captured capped scores') : 0,
          logits: room(steps, 'the captured logits'),
          pattern: room(steps, 'the captured pattern'),
          lse: grad ? scope.allocate(4 * lseCount(plan), 'the log-sum-exps') : 0,
        };
        if (!handle.run(request, outputs)) throwHandleError(handle);
        const take = (ptr, shape) => ({ data: copyOutFloats(module, ptr, count(shape)), shape });
        const result = { output: take(outputs.output, plan.output) };
        if (plan.presentKey) {
          result.presentKey = take(outputs.presentKey, plan.presentKey);
          result.presentValue = take(outputs.presentValue, plan.presentValue);
        }
        if (plan.weights) result.weights = take(outputs.weights, plan.weights);
        if (steps) {
          result.steps = { scores: take(outputs.scores, steps) };
          if (plan.capped) result.steps.capped = take(outputs.capped, steps);
          result.steps.logits = take(outputs.logits, steps);
          result.steps.pattern = take(outputs.pattern, steps);
        }
        if (grad) {
          // The backward pass reads its own copies: the caller may reuse its arrays meanwhile.
          const kept = Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, t && { data: t.data.slice(), shape: [...t.shape] }]));
          const lse = copyOutFloats(module, outputs.lse, lseCount(plan));
          const backward = backwardOf(kept, scalars, result.output, lse);
          result.backward = backward;
          result.backwardAsync = async (dOut) => {
            try {
              return backward(dOut);
            } catch (error) {
              throw withCallName(error, 'backwardAsync', ['backward']);
            }
          };
        }
        return result;
      } finally {
        scope.free();
      }
    } catch (error) {
      throw withCallName(error, CALL);
    }
  }

  /**
   * The same call as a promise, for code written once for every backend. On wasm the work runs
   * now, on the calling thread; errors reject, named 'scaledDotProductAttentionAsync: ...'.
   */
  async function scaledDotProductAttentionAsync(query, key, value, options = {}) {
    try {
      return scaledDotProductAttention(query, key, value, options);
    } catch (error) {
      throw withCallName(error, 'scaledDotProductAttentionAsync', [CALL]);
    }
  }

  return { scaledDotProductAttention, scaledDotProductAttentionAsync, [PLAN_ATTENTION]: planCall };
}
