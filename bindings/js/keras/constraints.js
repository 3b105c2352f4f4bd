// Keras' weight constraints (keras/src/constraints/constraints.py) for KerasMultiHeadAttention's
// kernelConstraint / biasConstraint: NonNeg, MaxNorm, MinMaxNorm, UnitNorm with Keras' formulas
// and defaults (axis 0: an EinsumDense kernel's input axis). Keras' optimizer projects a weight with
// its constraint after each update; the plain layer has no optimizer, so its one weight update,
// setWeights, projects the weights it is given (keras.js).
import { describe } from '../api/validate.js';

const EPSILON = 1e-7;  // Keras' backend.epsilon()

/** The axes `axis` names (an integer or a list; negative from the end) of a rank-`rank` weight. */
function reducedAxes(axis, rank) {
  return new Set([axis].flat().map((a) => (a < 0 ? a + rank : a)).filter((a) => a >= 0 && a < rank));
}

/**
 * sqrt(sum(w², axis, keepdims)) of a row-major `shape` weight, returned broadcast back: one norm
 * per element, the norm of its slice along the reduced axes.
 */
function norms(data, shape, axis) {
  const reduced = reducedAxes(axis, shape.length);
  const group = new Int32Array(data.length);  // each element's slice: its index over the kept axes
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) {
    let g = 0;
    for (let a = 0; a < shape.length; a++) if (!reduced.has(a)) g = g * shape[a] + (Math.floor(i / strides[a]) % shape[a]);
    group[i] = g;
  }
  const sums = new Float64Array(data.length);
  for (let i = 0; i < data.length; i++) sums[group[i]] += data[i] * data[i];
  return Float32Array.from(group, (g) => Math.sqrt(sums[g]));
}

/** A constraint's config: only the keys it knows (an unknown one would be ignored). */
function checkKeys(name, config, known) {
  const unknown = Object.keys(config).find((key) => !known.includes(key));
  if (unknown !== undefined) throw new TypeError(`${name}: unknown option '${unknown}'; known: ${known.join(', ') || 'none'}`);
}

function checkAxis(name, axis) {
  if (!([axis].flat().length > 0 && [axis].flat().every(Number.isInteger))) {
    throw new TypeError(`${name}: axis must be an integer or a non-empty list of integers, got ${describe(axis)}`);
  }
}

function checkNumber(name, key, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`${name}: ${key} must be a finite number, got ${describe(value)}`);
}

/** Keras' NonNeg: w * (w >= 0). */
export class NonNeg {
  constructor(config = {}) { checkKeys('NonNeg', config, []); }
  getClassName() { return 'NonNeg'; }
  getConfig() { return {}; }
  apply(data) { return data.map((w) => (w >= 0 ? w : 0)); }
}

/** Keras' MaxNorm({ maxValue = 2, axis = 0 }): each slice's norm clipped to maxValue. */
export class MaxNorm {
  constructor(config = {}) {
    checkKeys('MaxNorm', config, ['maxValue', 'axis']);
    const { maxValue = 2, axis = 0 } = config;
    checkNumber('MaxNorm', 'maxValue', maxValue);
    checkAxis('MaxNorm', axis);
    Object.assign(this, { maxValue, axis });
  }

  getClassName() { return 'MaxNorm'; }
  getConfig() { return { maxValue: this.maxValue, axis: this.axis }; }
  apply(data, shape) {
    const n = norms(data, shape, this.axis);
    return data.map((w, i) => w * (Math.min(Math.max(n[i], 0), this.maxValue) / (EPSILON + n[i])));
  }
}

/** Keras' MinMaxNorm({ minValue = 0, maxValue = 1, rate = 1, axis = 0 }). */
export class MinMaxNorm {
  constructor(config = {}) {
    checkKeys('MinMaxNorm', config, ['minValue', 'maxValue', 'rate', 'axis']);
    const { minValue = 0, maxValue = 1, rate = 1, axis = 0 } = config;
    for (const [key, value] of Object.entries({ minValue, maxValue, rate })) checkNumber('MinMaxNorm', key, value);
    checkAxis('MinMaxNorm', axis);
    Object.assign(this, { minValue, maxValue, rate, axis });
  }

  getClassName() { return 'MinMaxNorm'; }
  getConfig() { return { minValue: this.minValue, maxValue: this.maxValue, rate: this.rate, axis: this.axis }; }
  apply(data, shape) {
    const n = norms(data, shape, this.axis);
    return data.map((w, i) => {
      const desired = this.rate * Math.min(Math.max(n[i], this.minValue), this.maxValue) + (1 - this.rate) * n[i];
      return w * (desired / (EPSILON + n[i]));
    });
  }
}

/** Keras' UnitNorm({ axis = 0 }): each slice divided by its norm. */
export class UnitNorm {
  constructor(config = {}) {
    checkKeys('UnitNorm', config, ['axis']);
    const { axis = 0 } = config;
    checkAxis('UnitNorm', axis);
    this.axis = axis;
  }

  getClassName() { return 'UnitNorm'; }
  getConfig() { return { axis: this.axis }; }
  apply(data, shape) {
    const n = norms(data, shape, this.axis);
    return data.map((w, i) => w / (EPSILON + n[i]));
  }
}

const CLASSES = { NonNeg, MaxNorm, MinMaxNorm, UnitNorm };
// The names Keras' constraints.get takes ('non_neg', ...) and tfjs' ('nonNeg', ...), with the class names.
const ALIASES = {
  non_neg: 'NonNeg', nonNeg: 'NonNeg', max_norm: 'MaxNorm', maxNorm: 'MaxNorm',
  min_max_norm: 'MinMaxNorm', minMaxNorm: 'MinMaxNorm', unit_norm: 'UnitNorm', unitNorm: 'UnitNorm',
};

/**
 * kernelConstraint / biasConstraint (`name`): null / undefined (none), a name ('nonNeg',
 * 'non_neg', 'NonNeg', ...), { className, config } (as getConfig() writes it) or a constraint made
 * here; anything else is a TypeError naming the argument and the known constraints.
 */
export function readConstraint(name, spec) {
  if (spec === undefined || spec === null) return null;
  if (Object.values(CLASSES).some((Class) => spec instanceof Class)) return spec;
  const className = typeof spec === 'string' ? (ALIASES[spec] ?? spec) : spec?.className;
  const Class = Object.hasOwn(CLASSES, className ?? '') ? CLASSES[className] : null;
  if (!Class || (typeof spec === 'object' && spec.config !== undefined && (spec.config === null || typeof spec.config !== 'object'))) {
    throw new TypeError(`${name} must be null, one of ${Object.keys(CLASSES).join(', ')} (by name, or { className, config }), got ${describe(spec)}`);
  }
  try {
    return new Class(typeof spec === 'object' ? spec.config ?? {} : {});
  } catch (error) {
    error.message = `${name}: ${error.message}`;
    throw error;
  }
}

/** A constraint as getConfig() writes it: { className, config }, or null. */
export const serializeConstraint = (constraint) => (constraint ? { className: constraint.getClassName(), config: constraint.getConfig() } : null);
