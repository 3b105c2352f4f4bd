// The decode GEMV on quantized panels (quantized_panels.hpp): y = x W^T + b for one row x,
// reading each weight once. int8 and q4 quantize the row of activations to int16 (one scale for
// the row) and multiply in integers with the pair dot product (wasm i32x4.dot_i16x8_s, x86
// pmaddwd): no weight is widened to float. f16 widens its weights to float in registers.
//
// The arithmetic (the reference twin states it; the fast kernel does the same integer sums and
// the same float operations per column, in the same order):
//   xq[i] = roundf(x[i] * (1 / dx)) with dx = max|x| / 32767 (0 for an all-zero row)
//   int8: per run of 256 depths, s = sum q * xq (int32, cannot overflow: 127 * 32767 * 256 < 2^31);
//         acc += float(s); y = acc * d * dx + b
//   q4:   per block, s = sum q * xq - zp * sum xq (int32); acc += float(s) * d_block;
//         y = acc * dx + b
//   f16:  y = sum float(h) * x + b (float, the kernel's own summation order)
// A row holding Inf or NaN takes the float path (the panel dequantized), so they propagate as
// in the float32 layer.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "quantized_panels.hpp"

namespace mha::kernels {

// One activation row quantized for the integer kernels.
struct QuantizedRow {
  std::vector<int16_t> q;     // [blocks * 32] (zeros past in_features)
  std::vector<int32_t> sums;  // q4: sum of q over each block of 32
  float scale = 0.0f;         // dx
  bool finite = true;         // false: the row holds Inf or NaN (the float path runs)
};

constexpr int64_t kInt8RunDepth = 256;  // int8: depths summed in int32 before one float add

void quantize_activation_row(const float* x, int64_t in_features, QuantizedRow& row);

// roundf (half away from zero) without its library call, which wasm has no instruction for and
// which cost a Qwen-like decode step 7% of its time: trunc, then one step away from zero when
// the dropped fraction is at least one half (v - trunc(v) is exact in float).
inline float round_half_away(float v) {
  const float t = std::trunc(v);
  return t + (std::fabs(v - t) >= 0.5f ? std::copysign(1.0f, v) : 0.0f);
}

// A call's few input rows (decoding) quantized once: every projection that reads the same rows
// (self-attention's q, k and v) and every thread's share of a projection's panels use them.
struct QuantizedInput {
  static constexpr int kMaxRows = 8;  // PackedLinear::few_rows() on every instruction set
  const float* source = nullptr;      // the rows they were made from, within one call
  int64_t rows = 0, in_features = 0;
  QuantizedRow row[kMaxRows];

  // Quantizes x's `rows` rows of `in_features`, unless these are the rows held.
  void prepare(const float* x, int64_t rows, int64_t in_features);
};

// y[o] for the columns of panels [panel_begin, panel_end) (y is the full row; bias may be null).
void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end);
void quantized_gemv_reference(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias,
                              float* y, int64_t panel_begin, int64_t panel_end);

}  // namespace mha::kernels
