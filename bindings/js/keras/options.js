// Keras 3.15's newest MultiHeadAttention arguments, read the same way by both Keras layers
// (keras/keras.js, tfjs/layer.js): use_gate (a sigmoid gate from the query on each head's output,
// the core's `gate`) and sliding_window (a band |i - j| < W, and i - W < j <= i with the causal
// mask: the core's `slidingWindow`), with Keras' validation.
import { describe } from '../api/validate.js';

/** Their camelCase names, as the layers' configs take them. */
export const KERAS_315_OPTIONS = Object.freeze(['useGate', 'slidingWindow']);

/**
 * { useGate, slidingWindow } of `config`, checked as Keras checks them (useGate a boolean,
 * slidingWindow null / absent or a positive integer); `prefix` starts the error messages.
 */
export function readKeras315Options(config, prefix = '') {
  const { useGate = false, slidingWindow = null } = config;
  if (typeof useGate !== 'boolean') throw new TypeError(`${prefix}useGate must be a boolean, got ${describe(useGate)}`);
  if (slidingWindow !== null && (typeof slidingWindow !== 'number' || !Number.isInteger(slidingWindow) || slidingWindow <= 0)) {
    const Kind = typeof slidingWindow === 'number' ? RangeError : TypeError;
    throw new Kind(`${prefix}slidingWindow must be null or a positive integer, got ${describe(slidingWindow)}`);
  }
  return { useGate, slidingWindow };
}
