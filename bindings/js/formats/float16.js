// Half-precision floats (IEEE binary16 "F16" and bfloat16 "BF16") to and from float32.
// Both arrive as raw 16-bit patterns in a Uint16Array: Node 20 has no Float16Array.

const scratch = new DataView(new ArrayBuffer(4));

/** One IEEE binary16 bit pattern as a number (exact: every half is a float32). */
export function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;             // zero and subnormals
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** One bfloat16 bit pattern as a number: the upper half of a float32. */
export function bfloat16ToFloat(bits) {
  scratch.setUint32(0, bits << 16, true);
  return scratch.getFloat32(0, true);
}

/** A float32 rounded to the nearest binary16 bit pattern (ties to even), for writing F16 files. */
export function floatToHalf(value) {
  scratch.setFloat32(0, value, true);
  const f = scratch.getUint32(0, true);
  const sign = (f >>> 16) & 0x8000;
  const exponent = (f >>> 23) & 0xff;
  let mantissa = f & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);   // Inf, NaN
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;                                       // overflow to Inf
  if (e <= 0) {                                                              // subnormal or zero
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1), midpoint = 1 << (shift - 1);
    return sign | (half + (rest > midpoint || (rest === midpoint && (half & 1)) ? 1 : 0));
  }
  const half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to Inf).
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && (half & 1)) ? 1 : 0));
}

/** A float32 rounded to the nearest bfloat16 bit pattern (ties to even). */
export function floatToBfloat16(value) {
  scratch.setFloat32(0, value, true);
  const f = scratch.getUint32(0, true);
  if ((f & 0x7fffffff) > 0x7f800000) return ((f >>> 16) | 0x40) & 0xffff;  // keep NaN a NaN
  return ((f + 0x7fff + ((f >>> 16) & 1)) >>> 16) & 0xffff;
}
