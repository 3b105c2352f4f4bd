// Masks as callers have them, converted once to what the core reads: a bool mask to a Uint8Array
// (nonzero = true), a float mask to a Float32Array. Both layers take the same kinds (docs/api.md,
// "Masks"); what true means is each layer's business (PyTorch's: blocked; Keras': may attend).
import { isHalf } from './float16-io.js';
import { checkTensor, describe } from './validate.js';

const BOOL_KINDS = [Uint8Array, Uint8ClampedArray, Int8Array, Uint16Array, Int16Array, Uint32Array, Int32Array,
  BigInt64Array, BigUint64Array];

const KINDS_TEXT = 'a bool mask (Uint8Array or any integer typed array, or boolean[]) '
  + 'or a float mask (Float32Array or Float64Array)';

/**
 * The mask's data as the core takes it: Uint8Array (bool) or `Float` (float: Float32Array, a
 * float64 layer's Float64Array); null if none fits.
 */
function coreData(data, Float) {
  if (data instanceof Uint8Array || data instanceof Float) return data;
  if (data instanceof Float32Array || data instanceof Float64Array || isHalf(data)) return Float.from(data);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Uint8Array.from(data, (x) => (x !== 0n ? 1 : 0));
  if (BOOL_KINDS.some((Kind) => data instanceof Kind)) return Uint8Array.from(data, (x) => (x !== 0 ? 1 : 0));
  if (Array.isArray(data) && data.every((x) => typeof x === 'boolean')) return Uint8Array.from(data, (x) => (x ? 1 : 0));
  return null;
}

/**
 * A { data, shape } mask checked and converted once: returns { data: Uint8Array | Float32Array,
 * shape, isBool } (data length checked against the shape), or null when absent. `float`: the
 * float masks' type in the core (Float64Array for a float64 layer).
 */
export function checkMask(name, mask, { expected = '', float = Float32Array } = {}) {
  if (mask === undefined || mask === null) return null;
  if (typeof mask !== 'object' || ArrayBuffer.isView(mask) || !('data' in mask) || !('shape' in mask)) {
    throw new TypeError(`${name} must be { data, shape }${expected ? ` with shape ${expected}` : ''}, got ${describe(mask)}`);
  }
  const data = coreData(mask.data, float);
  if (data === null) {
    const hint = Array.isArray(mask.data) && mask.data.every((x) => typeof x === 'number') ? ' (a number[] is ambiguous: pass Uint8Array.from(it) for bool, Float32Array.from(it) for float)' : '';
    throw new TypeError(`${name}.data must be ${KINDS_TEXT}, got ${describe(mask.data)}${hint}`);
  }
  const converted = { data, shape: mask.shape };
  checkTensor(name, converted, { kinds: [Uint8Array, float], expected });
  if (data.length !== mask.data.length) throw new RangeError(`${name}: data changed length while being read`);
  return converted;
}
