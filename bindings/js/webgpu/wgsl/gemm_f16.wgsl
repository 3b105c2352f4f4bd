// y = x Wᵀ + b with W in binary16: data = halves [N][K]; W[o, i] = the half's value
// (docs/quantized.md), read as f16 where the device has shader-f16, else unpacked from u32 words
// (2 per u32, little-endian) with unpack2x16float: template ENABLE_F16, DATA_T, DATA_AT
// (half-reads.js). Body: gemm_quantized_body.wgsl.
{{ENABLE_F16}}

fn weight(o: u32, i: u32) -> f32 {
  let e = o * dims.K + i;
  return {{DATA_AT}};
}

#include "gemm_quantized_body.wgsl"
