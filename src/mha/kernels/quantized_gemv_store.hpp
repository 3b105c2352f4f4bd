// Where every decode GEMV kernel (quantized_gemv.cpp, gemv_f16_tile.hpp, gemv_q4_tile.hpp) puts a
// panel's sums: y's columns of panel p, bias added, a partial last panel through a buffer.
#pragma once

#include <algorithm>
#include <cstdint>

#include "quantized_panels.hpp"
#include "quantized_simd.hpp"

#if MHA_QGEMV
namespace mha::kernels {

inline void store_panel(const QuantizedPanels& w, int64_t p, qsimd::F lo, qsimd::F hi, const float* bias, float* y) {
  using namespace qsimd;
  constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;
  if (bias) {
    lo = fadd(lo, fload(bias + p * kP));
    hi = fadd(hi, fload(bias + p * kP + kW));
  }
  const int64_t col0 = p * kP, cols = std::min<int64_t>(kP, w.out_features() - col0);
  if (cols == kP) {
    fstore(y + col0, lo);
    fstore(y + col0 + kW, hi);
    return;
  }
  alignas(64) float out[kP];
  fstore(out, lo);
  fstore(out + kW, hi);
  std::copy(out, out + cols, y + col0);
}

}  // namespace mha::kernels
#endif
