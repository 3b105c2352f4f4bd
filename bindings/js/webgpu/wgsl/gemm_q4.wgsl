// y = x Wᵀ + b with W in q4: data = 4-bit codes [N][blocks][32] (element j of a block in byte
// j / 2, the low nibble for even j: so nibble n of the matrix is bits 4 (n % 8) of u32 n / 8),
// scales [N][blocks], zero points [N][ceil(blocks / 2)] two per byte, low first, or 8 when
// absent; W[o, i] = (q − zp) · scales[o, i / 32] (docs/quantized.md). Body: gemm_quantized_body.wgsl.

@group(0) @binding(5) var<storage, read> scales: array<f32>;
@group(0) @binding(6) var<storage, read> zero_points: array<u32>;

fn nibble(words_index: u32, word: u32) -> i32 {
  return i32(extractBits(word, (words_index & 7u) * 4u, 4u));
}

fn weight(o: u32, i: u32) -> f32 {
  let block = i / 32u;
  let n = (o * dims.blocks + block) * 32u + i % 32u;
  let q = nibble(n, data[n >> 3u]);
  var zp = 8;
  if (dims.has_zero_points != 0u) {
    let z = o * ((dims.blocks + 1u) / 2u) * 2u + block;
    zp = nibble(z, zero_points[z >> 3u]);
  }
  return f32(q - zp) * scales[o * dims.blocks + block];
}

#include "gemm_quantized_body.wgsl"
