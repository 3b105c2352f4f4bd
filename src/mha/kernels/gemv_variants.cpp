#include "gemv_variants.hpp"

#include <cmath>
#include <vector>

#include "gemv_f16_tile.hpp"
#include "gemv_q4_tile.hpp"

namespace mha::kernels {
namespace {

#if MHA_QGEMV
// Scaling x once per call (gemv_f16_tile.hpp's kEvenOdd) costs about what widening W weights
// saves per depth; over fewer panels than this the widen kernel runs (the few-rows path calls a
// panel at a time).
constexpr int64_t kEvenOddMinPanels = 4;

// The widen kernel of the same depth steps: the same sums in the same order (gemv_f16_tile.hpp),
// so a variant's results do not depend on how a projection's panels are split between threads.
template <int Depths>
void f16_widen_range(const QuantizedPanels& w, const float* x, const float* bias, float* y, int64_t p, int64_t end) {
  for (; p < end; ++p) GemvF16Tile<F16Widen::kWiden, 1, Depths>::run(w, x, bias, y, p);
}

// x * 2^100 into this thread's buffer, or false when some |x| is 2^27 or more, Inf or NaN.
bool scale_for_even_odd(const float* x, int64_t in, std::vector<float>& scaled) {
  scaled.resize(static_cast<size_t>(in));
  bool in_range = true;
  for (int64_t i = 0; i < in; ++i) {
    in_range &= std::fabs(x[i]) < kF16XLimit;  // (false for NaN)
    scaled[i] = x[i] * kF16XScale;
  }
  return in_range;
}

template <F16Widen Widen, int Panels, int Depths>
void f16_range(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
               int64_t p, int64_t end) {
  if (w.has_nonfinite()) {  // (the widening covers finite halves only)
    quantized_gemv_reference(w, x, row, bias, y, p, end);
    return;
  }
  if constexpr (Widen == F16Widen::kEvenOdd) {
    thread_local std::vector<float> scaled;
    if (end - p < kEvenOddMinPanels || !scale_for_even_odd(x, w.in_features(), scaled)) {
      f16_widen_range<Depths>(w, x, bias, y, p, end);
      return;
    }
    x = scaled.data();
  }
  for (; p + Panels <= end; p += Panels) GemvF16Tile<Widen, Panels, Depths>::run(w, x, bias, y, p);
  for (; p < end; ++p) GemvF16Tile<Widen, 1, Depths>::run(w, x, bias, y, p);
}

template <int Panels, bool CorrectionFirst>
void q4_range(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
              int64_t p, int64_t end) {
  if (!row.finite) {
    quantized_gemv_reference(w, x, row, bias, y, p, end);
    return;
  }
  const auto run = [&](auto tile) {
    using Tile = decltype(tile);
    if (w.has_zero_points()) Tile::template run<true>(w, row, bias, y, p);
    else Tile::template run<false>(w, row, bias, y, p);
  };
  for (; p + Panels <= end; p += Panels) run(GemvQ4Tile<Panels, CorrectionFirst>{});
  for (; p < end; ++p) run(GemvQ4Tile<1, CorrectionFirst>{});
}

template <F16Widen Widen, int Panels, int Depths>
constexpr GemvVariant f16(const char* name) { return {name, &f16_range<Widen, Panels, Depths>}; }
template <int Panels, bool CorrectionFirst>
constexpr GemvVariant q4(const char* name) { return {name, &q4_range<Panels, CorrectionFirst>}; }
#else  // the scalar build: the twin under every name
template <F16Widen, int, int>
constexpr GemvVariant f16(const char* name) { return {name, &quantized_gemv_reference}; }
template <int, bool>
constexpr GemvVariant q4(const char* name) { return {name, &quantized_gemv_reference}; }
#endif

// The former kernels first (the defaults), then the even-odd widening at 1, 2 and 4 panels and 1,
// 2 and 4 depth steps (2 x panels x depths accumulators: 8 at most, for V8's 16 registers), and q4
// at 1, 2 and 4 panels (4 x 4 accumulators: V8 spills the float ones, touched once a block).
constexpr GemvVariant kF16[] = {
    f16<F16Widen::kWiden, 1, 2>("widen"),
    f16<F16Widen::kWiden, 2, 1>("widen-2p-k1"),
    f16<F16Widen::kEvenOdd, 1, 2>("even-odd"),
    f16<F16Widen::kEvenOdd, 1, 4>("even-odd-k4"),
    f16<F16Widen::kEvenOdd, 2, 1>("even-odd-2p-k1"),
    f16<F16Widen::kEvenOdd, 2, 2>("even-odd-2p"),
    f16<F16Widen::kEvenOdd, 4, 1>("even-odd-4p-k1"),
};
constexpr GemvVariant kQ4[] = {
    q4<1, false>("1p"),
    q4<1, true>("1p-zp-first"),
    q4<2, false>("2p"),
    q4<2, true>("2p-zp-first"),
    q4<4, false>("4p"),
    q4<4, true>("4p-zp-first"),
};

}  // namespace

const GemvVariant* gemv_f16_variants(int* count) {
  *count = static_cast<int>(sizeof kF16 / sizeof kF16[0]);
  return kF16;
}
const GemvVariant* gemv_q4_variants(int* count) {
  *count = static_cast<int>(sizeof kQ4 / sizeof kQ4[0]);
  return kQ4;
}
const GemvVariant& gemv_f16_default_variant() { return kF16[0]; }
const GemvVariant& gemv_q4_default_variant() { return kQ4[0]; }

}  // namespace mha::kernels
