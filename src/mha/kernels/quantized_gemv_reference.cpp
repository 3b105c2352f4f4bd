// The portable twin of quantized_gemv: the arithmetic quantized_gemv.hpp states, one column at a
// time, reading the panels element by element.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantized_gemv.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;

// The panel's float values (Inf/NaN rows, f16): a dot product in depth order.
void float_path(const QuantizedPanels& w, const float* x, const float* bias, float* y, int64_t p) {
  const int64_t in = w.in_features();
  std::vector<float> slice(static_cast<size_t>(in * kP));
  w.dequantize_slice(p, 0, in, slice.data());
  for (int64_t c = 0; c < kP && p * kP + c < w.out_features(); ++c) {
    float acc = 0.0f;
    for (int64_t i = 0; i < in; ++i) acc += slice[i * kP + c] * x[i];
    y[p * kP + c] = acc + (bias ? bias[p * kP + c] : 0.0f);
  }
}

}  // namespace

void quantize_activation_row(const float* x, int64_t in, QuantizedRow& row) {
  const int64_t padded = q4_blocks(in) * kQ4Block;
  row.q.assign(static_cast<size_t>(padded), 0);
  row.sums.assign(static_cast<size_t>(padded / kQ4Block), 0);
  // amax = max |x[i]|, in vectors (max is exact in any order); x[i] * 0 is NaN exactly when
  // x[i] is Inf or NaN, so one sum of them says whether the row is finite.
  simd::Vec largest(0.0f), poison(0.0f);
  int64_t i = 0;
  for (; i + kW <= in; i += kW) {
    const simd::Vec v = simd::load(x + i);
    largest = simd::max(largest, simd::abs(v));
    poison = poison + v * simd::Vec(0.0f);
  }
  float amax = simd::hmax(largest), nan_unless_finite = simd::hsum(poison);
  for (; i < in; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    nan_unless_finite += x[i] * 0.0f;
  }
  row.finite = !std::isnan(nan_unless_finite);
  if (!row.finite) return;
  row.scale = amax / 32767.0f;
  const float inverse = row.scale != 0.0f ? 1.0f / row.scale : 0.0f;
  int16_t* q = row.q.data();
  // Branch-free, so the compiler vectorizes it; the int16 comes out of the float's low bits after
  // adding 1.5 * 2^23 (exact for |r| < 2^22: simd.hpp's rounding bias), as a float -> int16
  // conversion would be scalarized lane by lane (2.2 -> 0.96 us for 896 values in wasm).
  for (int64_t i = 0; i < in; ++i) {
    const float r = std::min(32767.0f, std::max(-32767.0f, round_half_away(x[i] * inverse)));
    const float biased = r + simd::kRoundingBias;
    uint32_t bits;
    std::memcpy(&bits, &biased, sizeof bits);
    q[i] = static_cast<int16_t>(static_cast<uint16_t>(bits));
  }
  for (int64_t b = 0; b < padded / kQ4Block; ++b) {
    int32_t sum = 0;
    for (int64_t j = 0; j < kQ4Block; ++j) sum += q[b * kQ4Block + j];
    row.sums[b] = sum;
  }
}

void QuantizedInput::prepare(const float* x, int64_t n, int64_t in) {
  if (source == x && rows == n && in_features == in) return;
  for (int64_t r = 0; r < n; ++r) quantize_activation_row(x + r * in, in, row[r]);
  source = x, rows = n, in_features = in;
}

void quantized_gemv_reference(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias,
                              float* y, int64_t panel_begin, int64_t panel_end) {
  const int64_t in = w.in_features(), out = w.out_features();
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    if (w.dtype() == WeightDtype::kF16 || !row.finite) {
      float_path(w, x, bias, y, p);
      continue;
    }
    const uint8_t* codes = w.codes(p);
    const float* scales = w.scales(p);
    for (int64_t c = 0; c < kP && p * kP + c < out; ++c) {
      float acc = 0.0f;
      if (w.dtype() == WeightDtype::kInt8) {
        for (int64_t k0 = 0; k0 < in; k0 += kInt8RunDepth) {
          int32_t s = 0;
          for (int64_t i = k0; i < std::min(in, k0 + kInt8RunDepth); ++i)
            s += static_cast<int8_t>(codes[(i / 2) * 2 * kP + 2 * c + i % 2]) * row.q[i];
          acc += static_cast<float>(s);
        }
        acc = acc * scales[c] * row.scale;
      } else {  // q4
        for (int64_t b = 0; b < w.blocks(); ++b) {
          int32_t s = 0;
          for (int64_t j = 0; j < kQ4Block; ++j) {
            const int64_t g = j / 4, t = j % 4;
            const uint8_t byte = codes[(b * (kQ4Block / 4) + g) * 2 * kP + 4 * (c % kW) + 2 * (t % 2) + c / kW];
            s += (t >= 2 ? byte >> 4 : byte & 0x0f) * row.q[b * kQ4Block + j];
          }
          const int32_t zp = w.has_zero_points() ? w.zero_points(p)[b * kP + c] : 8;
          s -= zp * row.sums[b];
          acc += static_cast<float>(s) * scales[b * kP + c];
        }
        acc = acc * row.scale;
      }
      y[p * kP + c] = acc + (bias ? bias[p * kP + c] : 0.0f);
    }
  }
}

}  // namespace mha::kernels
