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
//   f16:  per 8 weights 1 load + 1 splat, then widen: 2 unpack, 2 shift, 2 and, 2 mul (the
//         exponent), 2 mul + 2 add: 1.75; even-odd: 1 shift, 2 shift, 2 and, 2 mul + 2 add: 1.375
// so int8 and q4 are bound by these operations rather than by the bytes they read (a quarter
// and under a sixth of f32's); `npm run bench:kernels` shows the rates. f16 and q4 come in
// variants (gemv_variants.hpp: gemv_f16_tile.hpp, gemv_q4_tile.hpp), one chosen per machine;
// int8 is the one kernel below.
#include "quantized_gemv.hpp"

#include <algorithm>

#include "kernel_choice.hpp"
#include "quantized_gemv_store.hpp"

#ifndef MHA_QGEMV_PANELS
#define MHA_QGEMV_PANELS 1
#endif

namespace mha::kernels {

#if MHA_QGEMV
namespace {

using namespace qsimd;
constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;

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
    // Four depth pairs per iteration in wasm, so the loop's counter and address arithmetic is paid
    // once per four pairs (A/B in one process, CPU time, a Llama-3.2-1B-like int8 decode step over
    // 8 layers, relaxed SIMD, Intel Xeon: 4-6% faster, medians of 4 runs each, 2026-12-03). The
    // sums and their order are the same.
#if defined(__clang__)
#pragma clang loop unroll_count(4)
#endif
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

// Panels processed together. Sharing the broadcast pairs between 2 panels was slower in wasm
// (A/B, CPU time, 2048 x 2048 streamed, Node 20: int8 7.9 against 19-20 G weights/s, q4 14 against
// 20: V8 spills the doubled accumulators), so one panel at a time, and the template stays for
// instruction sets with more registers to try.
constexpr int kPanelsAtOnce = MHA_QGEMV_PANELS;

}  // namespace

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  // f16 and q4: the variant this machine runs (gemv_variants.hpp; each takes the twin's float path
  // for the inputs that need it).
  switch (w.dtype()) {
    case WeightDtype::kF16: KernelChoice::process().gemv_f16().run(w, x, row, bias, y, panel_begin, panel_end); return;
    case WeightDtype::kQ4: KernelChoice::process().gemv_q4().run(w, x, row, bias, y, panel_begin, panel_end); return;
    default: break;
  }
  if (!row.finite) {  // the twin's float path: rows with Inf/NaN
    quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
    return;
  }
  int64_t p = panel_begin;
  for (; p + kPanelsAtOnce <= panel_end; p += kPanelsAtOnce) gemv_int8<kPanelsAtOnce>(w, row, bias, y, p);
  for (; p < panel_end; ++p) gemv_int8<1>(w, row, bias, y, p);
}

#else  // no SIMD (the scalar wasm build): the twin is the kernel

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
}

#endif

}  // namespace mha::kernels
