// The q4 decode GEMV's kernel, one template whose instances are the variants (gemv_variants.cpp).
// Per block of 32 depths, 8 groups of 4 depths x P columns (2P bytes, read as int16 lanes holding
// four nibbles each: quantized_panels.hpp): a mask or a shift and a mask give four int16 vectors
// ready for the pair dot product with a broadcast pair of the int16 activation row, summed in
// int32 over the block; the block's sum then goes to float times its scale.
//
//   Panels: panels sharing each broadcast pair (2 splats per group for all of them instead of
//     per panel; more accumulators live).
//   CorrectionFirst: the block's zero-point term -zp * sum(xq) starts the int32 sums instead of
//     being subtracted from them (one subtraction fewer per block and column vector).
// Every instance computes the twin's integer sums exactly and the same float operations per
// column in the same order, so they give the same bits.
#pragma once

#include "quantized_gemv.hpp"
#include "quantized_gemv_store.hpp"

#if MHA_QGEMV
namespace mha::kernels {

template <int Panels, bool CorrectionFirst>
struct GemvQ4Tile {
  template <bool kZeroPoints>
  static void run(const QuantizedPanels& w, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
    using namespace qsimd;
    constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;
    const uint8_t* codes[Panels];
    const float* scales[Panels];
    for (int n = 0; n < Panels; ++n) codes[n] = w.codes(p + n), scales[n] = w.scales(p + n);
    const int16_t* xq = row.q.data();
    F lo[Panels], hi[Panels];
    for (int n = 0; n < Panels; ++n) lo[n] = hi[n] = fzero();
    for (int64_t b = 0; b < w.blocks(); ++b) {
      // -zp * sum(xq) per column vector (zp = 8 without imported zero points)
      I c0[Panels], c1[Panels];
      for (int n = 0; n < Panels; ++n) {
        if constexpr (kZeroPoints) {
          const I sums = isplat(row.sums[b]);
          const int32_t* zp = w.zero_points(p + n) + b * kP;
          c0[n] = imul(iload(zp), sums);
          c1[n] = imul(iload(zp + kW), sums);
        } else {
          c0[n] = c1[n] = isplat(8 * row.sums[b]);
        }
      }
      I a0[Panels], a1[Panels];
      for (int n = 0; n < Panels; ++n) {
        if constexpr (CorrectionFirst) a0[n] = isub(izero(), c0[n]), a1[n] = isub(izero(), c1[n]);
        else a0[n] = a1[n] = izero();
      }
      const int16_t* x = xq + b * kQ4Block;
      for (int g = 0; g < 8; ++g) {
        const I x01 = pair(x + 4 * g), x23 = pair(x + 4 * g + 2);
        for (int n = 0; n < Panels; ++n) {
          const I v = iload(codes[n] + (b * 8 + g) * 2 * kP);
          a0[n] = iadd(a0[n], iadd(dot(mask16(v, 0x000f), x01), dot(mask16(shr16(v, 4), 0x000f), x23)));
          a1[n] = iadd(a1[n], iadd(dot(mask16(shr16(v, 8), 0x000f), x01), dot(shr16(v, 12), x23)));
        }
      }
      for (int n = 0; n < Panels; ++n) {
        if constexpr (!CorrectionFirst) a0[n] = isub(a0[n], c0[n]), a1[n] = isub(a1[n], c1[n]);
        lo[n] = fadd(lo[n], fmul(to_float(a0[n]), fload(scales[n] + b * kP)));
        hi[n] = fadd(hi[n], fmul(to_float(a1[n]), fload(scales[n] + b * kP + kW)));
      }
    }
    const F dx = fsplat(row.scale);
    for (int n = 0; n < Panels; ++n) store_panel(w, p + n, fmul(lo[n], dx), fmul(hi[n], dx), bias, y);
  }
};

}  // namespace mha::kernels
#endif
