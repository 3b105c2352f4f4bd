// The f16 decode GEMV's kernel, one template whose instances are the variants (gemv_variants.cpp):
// how a depth row of a panel (P halves, quantized_panels.hpp) becomes floats, how many panels
// share each broadcast of x, and how many depth steps an iteration takes (independent chains).
//
//   kWiden (the kernel before the variants): each half moved into the top of a 32-bit lane by a
//     16-bit shuffle with zeros, then shift, mask and a multiply by 2^112 per 4 weights
//     (qsimd::widen_f16; natively the F16C conversion instead).
//   kEvenOdd: no shuffle. A 32-bit lane holds two halves, columns 2j (low) and 2j+1 (high). The
//     high half is already at the top (an arithmetic shift by 3 and a mask leave sign, exponent
//     and mantissa where a float has them; the mask also drops the low half's bits), the low half
//     gets there by one shift left by 16. The two vectors hold the even and the odd columns,
//     interleaved back once per panel. The 2^112 rebias leaves the loop: each product
//     float(h) * 2^-112 * x needs x scaled by 2^kXScaleLog2 once per call (gemv_variants.cpp)
//     and the sums by 2^(112 - kXScaleLog2) once per panel. Powers of two: every product and sum
//     is what the widen kernel of the same depth steps computes (the same bits) while |x * w| stays above
//     2^-114 (a float's normal range times 2^12; below it the products' error is under 2^-137
//     absolute) and |x| below 2^27 (x * 2^100 finite; a call with larger, Inf or NaN inputs
//     runs the widen kernel). f16 weights reach 65504 and activations 1e4 at most in practice:
//     products up to 2^30, far inside both.
#pragma once

#include "quantized_gemv_store.hpp"

namespace mha::kernels {

enum class F16Widen { kWiden, kEvenOdd };

#if MHA_QGEMV

constexpr int kF16XScaleLog2 = 100;              // x's scale in the kEvenOdd kernel
constexpr float kF16XScale = 0x1p100f, kF16SumScale = 0x1p12f;  // 2^100, 2^(112 - 100)
constexpr float kF16XLimit = 0x1p27f;            // |x| below it: x * 2^100 stays finite

template <F16Widen Widen, int Panels, int Depths>
struct GemvF16Tile {
  static_assert(Panels >= 1 && Depths >= 1, "at least one panel and one depth step");
  using F = qsimd::F;

  // The depth row at `codes` as two float vectors: (columns 0..W-1, W..2W-1) for kWiden, (even
  // columns, odd columns) times 2^-112 for kEvenOdd.
  static inline void widen(const uint8_t* codes, F& a, F& b) {
    using namespace qsimd;
    if constexpr (Widen == F16Widen::kWiden) {
      widen_f16(codes, a, b);
    } else {
      const I h = iload(codes), mask = isplat(static_cast<int32_t>(0x8fffe000u));
      a = as_float(iand(sra32(sll32(h, 16), 3), mask));
      b = as_float(iand(sra32(h, 3), mask));
    }
  }

  // Panels [p, p + Panels) of y from x (x scaled by 2^100 for kEvenOdd).
  static void run(const QuantizedPanels& w, const float* x, const float* bias, float* y, int64_t p) {
    using namespace qsimd;
    constexpr int64_t kRowBytes = 2 * simd::kTileCols;  // one depth of a panel, in bytes
    const int64_t in = w.in_features();
    const uint8_t* codes[Panels];
    for (int n = 0; n < Panels; ++n) codes[n] = w.codes(p + n);
    F a[Panels][Depths], b[Panels][Depths];
    for (int n = 0; n < Panels; ++n)
      for (int d = 0; d < Depths; ++d) a[n][d] = b[n][d] = fzero();
    int64_t k = 0;
    for (; k + Depths <= in; k += Depths) {
      for (int d = 0; d < Depths; ++d) {
        const F xk = fsplat(x[k + d]);
        for (int n = 0; n < Panels; ++n) {
          F wa, wb;
          widen(codes[n] + (k + d) * kRowBytes, wa, wb);
          a[n][d] = fadd(a[n][d], fmul(wa, xk));
          b[n][d] = fadd(b[n][d], fmul(wb, xk));
        }
      }
    }
    for (; k < in; ++k) {
      const F xk = fsplat(x[k]);
      for (int n = 0; n < Panels; ++n) {
        F wa, wb;
        widen(codes[n] + k * kRowBytes, wa, wb);
        a[n][0] = fadd(a[n][0], fmul(wa, xk));
        b[n][0] = fadd(b[n][0], fmul(wb, xk));
      }
    }
    for (int n = 0; n < Panels; ++n) {
      for (int d = 1; d < Depths; ++d) {
        a[n][0] = fadd(a[n][0], a[n][d]);
        b[n][0] = fadd(b[n][0], b[n][d]);
      }
      F lo = a[n][0], hi = b[n][0];
      if constexpr (Widen == F16Widen::kEvenOdd) {
        interleave(a[n][0], b[n][0], lo, hi);
        lo = fmul(lo, fsplat(kF16SumScale));
        hi = fmul(hi, fsplat(kF16SumScale));
      }
      store_panel(w, p + n, lo, hi, bias, y);
    }
  }
};

#endif

}  // namespace mha::kernels
