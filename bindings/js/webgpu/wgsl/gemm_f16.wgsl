// y = x Wᵀ + b with W in binary16: data = halves [N][K], 2 per u32 (little-endian), unpacked
// with unpack2x16float (no shader-f16 needed); W[o, i] = the half's value (docs/quantized.md).
// Body: gemm_quantized_body.wgsl.

fn weight(o: u32, i: u32) -> f32 {
  let index = o * dims.K + i;
  return unpack2x16float(data[index >> 1u])[index & 1u];
}

#include "gemm_quantized_body.wgsl"
