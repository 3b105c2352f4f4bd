// y = x Wᵀ + b with W int8: data = int8 codes [N][K] (4 per u32, little-endian), scales[N] one
// per output row; W[o, i] = q · scales[o] (docs/quantized.md). Body: gemm_quantized_body.wgsl.

@group(0) @binding(5) var<storage, read> scales: array<f32>;

fn weight(o: u32, i: u32) -> f32 {
  let index = o * dims.K + i;
  let q = extractBits(bitcast<i32>(data[index >> 2u]), (index & 3u) * 8u, 8u);  // sign-extended
  return f32(q) * scales[o];
}

#include "gemm_quantized_body.wgsl"
