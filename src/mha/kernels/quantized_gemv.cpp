// The fast decode GEMV on quantized panels (quantized_gemv.hpp states the arithmetic,
// quantized_panels.hpp the layout). Per panel of P = 2W columns, two i32 accumulators of W lanes
// (columns 0..W-1 and W..2W-1) take pair dot products of the codes with a broadcast pair of the
// int16 activation row; each run (int8) or block (q4) then goes to two float accumulators.
//
// Operations per weight, wasm SIMD128 (W = 4), against f32's load + mul + add per 4 weights (0.75):
//   int8: per 16 weights (a depth pair of a panel) 2 load8x8_s + 2 dot + 2 add + 1 splat: 0.44
//   q4:   per 32 weights (a group) 1 load + 6 mask/shift + 4 dot + 4 add + 2 splats: 0.53
//   (widening int8 to f32 instead: extend, convert, mul, add per 4 weights and a horizontal sum
//   of the depth pairs: 1.1 per weight, 2.5x the integer path's count, so the integer path it is)
//   f16:  per 8 weights 1 load, 2 unpack, 2 shift, 2 and, 2 mul (the exponent), 2 mul + 2 add: 1.6
// so int8 and q4 are bound by these operations rather than by the bytes they read (a quarter
// and under a sixth of f32's); `npm run bench:kernels` shows the rates.
#include "quantized_gemv.hpp"

#include <algorithm>

#include "quantized_simd.hpp"

#ifndef MHA_QGEMV_PANELS
#define MHA_QGEMV_PANELS 1
#endif

namespace mha::kernels {

#if MHA_QGEMV
namespace {

using namespace qsimd;
constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;

// y's columns of panel p from the two float accumulators (a partial last panel through a buffer).
inline void store_panel(const QuantizedPanels& w, int64_t p, F lo, F hi, const float* bias, float* y) {
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

// int8: runs of 256 depths (128 pairs) summed in int32, then added as floats. NP panels at once
// share each broadcast pair of activations (one splat per 2P x NP codes instead of per 2P).
template <int NP>
void gemv_int8(const QuantizedPanels& w, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
  const int64_t pairs = (w.in_features() + 1) / 2;
  const uint8_t* codes[NP];
  for (int n = 0; n < NP; ++n) codes[n] = w.codes(p + n);
  const int16_t* xq = row.q.data();
  F lo[NP], hi[NP];
  for (int n = 0; n < NP; ++n) lo[n] = hi[n] = fzero();
  for (int64_t u0 = 0; u0 < pairs; u0 += kInt8RunDepth / 2) {
    const int64_t u1 = std::min(pairs, u0 + kInt8RunDepth / 2);
    I a0[NP], a1[NP];
    for (int n = 0; n < NP; ++n) a0[n] = a1[n] = izero();
    for (int64_t u = u0; u < u1; ++u) {
      const I x0 = pair(xq + 2 * u);
      for (int n = 0; n < NP; ++n) {
        const uint8_t* c = codes[n] + u * 2 * kP;
        a0[n] = iadd(a0[n], dot(widen_i8(c), x0));
        a1[n] = iadd(a1[n], dot(widen_i8(c + 2 * kW), x0));
      }
    }
    for (int n = 0; n < NP; ++n) {
      lo[n] = fadd(lo[n], to_float(a0[n]));
      hi[n] = fadd(hi[n], to_float(a1[n]));
    }
  }
  const F dx = fsplat(row.scale);
  for (int n = 0; n < NP; ++n) {
    const float* scales = w.scales(p + n);
    store_panel(w, p + n, fmul(fmul(lo[n], fload(scales)), dx), fmul(fmul(hi[n], fload(scales + kW)), dx), bias, y);
  }
}

// q4: per block of 32 depths, 8 groups of 4 depths x P columns (2P bytes, read as int16 lanes
// holding four nibbles each: quantized_panels.hpp). NP panels share the broadcast pairs.
template <bool kZeroPoints, int NP>
void gemv_q4(const QuantizedPanels& w, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
  const uint8_t* codes[NP];
  const float* scales[NP];
  for (int n = 0; n < NP; ++n) codes[n] = w.codes(p + n), scales[n] = w.scales(p + n);
  const int16_t* xq = row.q.data();
  F lo[NP], hi[NP];
  for (int n = 0; n < NP; ++n) lo[n] = hi[n] = fzero();
  for (int64_t b = 0; b < w.blocks(); ++b) {
    I a0[NP], a1[NP];
    for (int n = 0; n < NP; ++n) a0[n] = a1[n] = izero();
    const int16_t* x = xq + b * kQ4Block;
    for (int g = 0; g < 8; ++g) {
      const I x01 = pair(x + 4 * g), x23 = pair(x + 4 * g + 2);
      for (int n = 0; n < NP; ++n) {
        const I v = iload(codes[n] + (b * 8 + g) * 2 * kP);
        a0[n] = iadd(a0[n], iadd(dot(mask16(v, 0x000f), x01), dot(mask16(shr16(v, 4), 0x000f), x23)));
        a1[n] = iadd(a1[n], iadd(dot(mask16(shr16(v, 8), 0x000f), x01), dot(shr16(v, 12), x23)));
      }
    }
    for (int n = 0; n < NP; ++n) {
      if constexpr (kZeroPoints) {
        const I sums = isplat(row.sums[b]);
        const int32_t* zp = w.zero_points(p + n) + b * kP;
        a0[n] = isub(a0[n], imul(iload(zp), sums));
        a1[n] = isub(a1[n], imul(iload(zp + kW), sums));
      } else {
        const I correction = isplat(8 * row.sums[b]);
        a0[n] = isub(a0[n], correction);
        a1[n] = isub(a1[n], correction);
      }
      lo[n] = fadd(lo[n], fmul(to_float(a0[n]), fload(scales[n] + b * kP)));
      hi[n] = fadd(hi[n], fmul(to_float(a1[n]), fload(scales[n] + b * kP + kW)));
    }
  }
  const F dx = fsplat(row.scale);
  for (int n = 0; n < NP; ++n) store_panel(w, p + n, fmul(lo[n], dx), fmul(hi[n], dx), bias, y);
}

// f16: the weights widened to floats in registers, two depth steps per iteration (four chains).
void gemv_f16(const QuantizedPanels& w, const float* x, const float* bias, float* y, int64_t p) {
  const int64_t in = w.in_features();
  const uint8_t* codes = w.codes(p);
  F a0 = fzero(), a1 = fzero(), b0 = fzero(), b1 = fzero();
  int64_t k = 0;
  for (; k + 2 <= in; k += 2) {
    F w0, w1, v0, v1;
    widen_f16(codes + k * 2 * kP, w0, w1);
    widen_f16(codes + (k + 1) * 2 * kP, v0, v1);
    const F x0 = fsplat(x[k]), x1 = fsplat(x[k + 1]);
    a0 = fadd(a0, fmul(w0, x0));
    a1 = fadd(a1, fmul(w1, x0));
    b0 = fadd(b0, fmul(v0, x1));
    b1 = fadd(b1, fmul(v1, x1));
  }
  for (; k < in; ++k) {
    F w0, w1;
    widen_f16(codes + k * 2 * kP, w0, w1);
    const F x0 = fsplat(x[k]);
    a0 = fadd(a0, fmul(w0, x0));
    a1 = fadd(a1, fmul(w1, x0));
  }
  store_panel(w, p, fadd(a0, b0), fadd(a1, b1), bias, y);
}

// Panels processed together. Sharing the broadcast pairs between 2 panels was slower in wasm
// (A/B, CPU time, 2048 x 2048 streamed, Node 20: int8 7.9 against 19-20 G weights/s, q4 14 against
// 20: V8 spills the doubled accumulators), so one panel at a time, and the template stays for
// instruction sets with more registers to try.
constexpr int kPanelsAtOnce = MHA_QGEMV_PANELS;

template <int NP>
void panels(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
  switch (w.dtype()) {
    case WeightDtype::kInt8: gemv_int8<NP>(w, row, bias, y, p); break;
    case WeightDtype::kQ4:
      if (w.has_zero_points()) gemv_q4<true, NP>(w, row, bias, y, p);
      else gemv_q4<false, NP>(w, row, bias, y, p);
      break;
    default:
      for (int n = 0; n < NP; ++n) gemv_f16(w, x, bias, y, p + n);
      break;
  }
}

}  // namespace

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  // The float path of the twin: rows with Inf/NaN, and f16 panels holding Inf/NaN (wasm's widening
  // above covers finite halves only).
  if ((w.dtype() != WeightDtype::kF16 && !row.finite) || (w.dtype() == WeightDtype::kF16 && w.has_nonfinite())) {
    quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
    return;
  }
  int64_t p = panel_begin;
  for (; p + kPanelsAtOnce <= panel_end; p += kPanelsAtOnce) panels<kPanelsAtOnce>(w, x, row, bias, y, p);
  for (; p < panel_end; ++p) panels<1>(w, x, row, bias, y, p);
}

#else  // no SIMD (the scalar wasm build): the twin is the kernel

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
}

#endif

}  // namespace mha::kernels
