// Attention dropout's mask, bit for bit the CPU's (src/mha/kernels/dropout.hpp): Philox4x32-10 on
// the counter (j / 4, i, stream, 0) with the key (seed low, seed high); key j of query position i
// survives when word j % 4 >= p * 2^32. stream = b * H + h. WGSL has no 64-bit integers, so the
// 32 x 32 -> 64-bit products are built from 16-bit halves. Included with score_epilogue.wgsl.

// (high, low) words of a * b.
fn mul_wide(a: u32, b: u32) -> vec2u {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let lh = a0 * b1;
  let hl = a1 * b0;
  let middle = ((a0 * b0) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2u(a1 * b1 + (lh >> 16u) + (hl >> 16u) + (middle >> 16u), a * b);
}

fn philox4x32_10(counter: vec4u, key: vec2u) -> vec4u {
  var c = counter;
  var k = key;
  for (var round = 0; round < 10; round++) {
    let p0 = mul_wide(0xD2511F53u, c.x);
    let p1 = mul_wide(0xCD9E8D57u, c.z);
    c = vec4u(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    k += vec2u(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// keep(i, j) / (1 - p): what a probability is multiplied by under dropout (1 when it is off).
fn dropout_factor(i: u32, j: u32, stream: u32) -> f32 {
  if (params.dropout_active == 0u) { return 1.0; }
  let words = philox4x32_10(vec4u(j >> 2u, i, stream, 0u), vec2u(params.seed_low, params.seed_high));
  if (words[j & 3u] >= params.dropout_threshold) { return params.dropout_scale; }
  return 0.0;
}
