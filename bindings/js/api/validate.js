// Checks of what only JavaScript can see: value types, typed-array kinds, option names,
// and that a tensor's data length matches its shape. Shape rules live in the C++ core
// (src/mha/plan/forward_plan.cpp), so there is one source of truth for them.

/** 'a Float32Array', 'an Int32Array': a type name with its article, for messages. */
export function withArticle(name) {
  return `${/^[AEIO]/i.test(name) ? 'an' : 'a'} ${name}`;  // 'a Uint8Array': U as in 'you'
}

export function describe(value) {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an Array';
  if (ArrayBuffer.isView(value)) return withArticle(value.constructor.name);
  return typeof value === 'object' ? `an object (${value.constructor?.name ?? 'Object'})` : `${typeof value} ${String(value)}`;
}

export function checkKnownKeys(what, object, known) {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) throw new TypeError(`${what}: unknown option '${key}'; known options: ${known.join(', ')}`);
  }
}

export function checkPlainObject(what, value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) {
    throw new TypeError(`${what} must be an object, got ${describe(value)}`);
  }
}

export function checkInteger(name, value, { optional = false, min = 1 } = {}) {
  if (value === undefined && optional) return;
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < min || value > 0x7fffffff) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

export function checkBoolean(name, value) {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new TypeError(`${name} must be a boolean, got ${describe(value)}`);
  }
}

function checkShape(name, shape) {
  if (!Array.isArray(shape)) throw new TypeError(`${name}.shape must be an array of integers, got ${describe(shape)}`);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`${name}.shape must hold non-negative integers, got [${shape.join(', ')}]`);
    }
  }
  return shape.reduce((n, d) => n * d, 1);
}

/**
 * A { data, shape } tensor. `kinds` lists the accepted typed-array classes.
 * Returns the tensor (or null when absent and optional).
 */
export function checkTensor(name, tensor, { kinds = [Float32Array], expected = '', optional = false } = {}) {
  if (tensor === undefined || tensor === null) {
    if (optional) return null;
    throw new TypeError(`${name} is required: { data: Float32Array, shape: ${expected || 'number[]'} }`);
  }
  if (typeof tensor !== 'object' || ArrayBuffer.isView(tensor) || !('data' in tensor) || !('shape' in tensor)) {
    throw new TypeError(`${name} must be { data, shape }${expected ? ` with shape ${expected}` : ''}, got ${describe(tensor)}`);
  }
  if (!kinds.some((Kind) => tensor.data instanceof Kind)) {
    const names = kinds.map((k) => k.name).join(' or ');
    throw new TypeError(`${name}.data must be ${withArticle(names)}, got ${describe(tensor.data)}`);
  }
  const count = checkShape(name, tensor.shape);
  if (count !== tensor.data.length) {
    throw new RangeError(
      `${name}: shape [${tensor.shape.join(', ')}] needs ${count} elements, but data has ${tensor.data.length}`,
    );
  }
  return tensor;
}
