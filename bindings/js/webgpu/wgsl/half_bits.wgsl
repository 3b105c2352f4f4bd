// IEEE binary16 <-> float32 with integer operations, bit for bit as src/mha/cache/kv_cache.cpp's
// float_to_half / half_to_float (round to nearest even, subnormals kept, overflow to Inf, NaN kept
// NaN): pack2x16float / unpack2x16float may round or flush subnormals as the implementation
// likes, and an f16 cache must hold exactly what the wasm layer's holds.

fn float_to_half(x: f32) -> u32 {
  let f = bitcast<u32>(x);
  let sign = (f >> 16u) & 0x8000u;
  let a = f & 0x7fffffffu;
  if (a >= 0x7f800000u) { return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a < 0x33000000u) { return sign; }
    let mantissa = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - (a >> 23u);
    var h = mantissa >> shift;
    let rest = mantissa & ((1u << shift) - 1u);
    let halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (h & 1u) != 0u)) { h += 1u; }
    return sign | h;
  }
  var h = (a >> 13u) - (112u << 10u);
  let rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) { h += 1u; }
  return sign | h;
}

fn half_to_float(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let exponent = (h >> 10u) & 0x1fu;
  let mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (mantissa << 13u)); }
  if (exponent != 0u) { return bitcast<f32>(sign | ((exponent + 112u) << 23u) | (mantissa << 13u)); }
  // Zero or subnormal: mantissa * 2^-24 (exact in float32).
  let magnitude = f32(mantissa) * 5.9604644775390625e-8;
  return select(magnitude, -magnitude, sign != 0u);
}
