#include "mha/layer/rotary.hpp"

#include <cmath>
#include <vector>

namespace mha {

void apply_rotary(const RotaryConfig& rotary, float* x, int64_t rows, int64_t row_stride, int64_t heads,
                  int64_t head_dim, const int32_t* positions, int64_t first_position, bool inverse) {
  const int64_t half = rotary.dim / 2;
  if (half == 0) return;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t t = 0; t < half; ++t)
    inv_freq[t] = 1.0 / std::pow(rotary.base, static_cast<double>(2 * t) / static_cast<double>(rotary.dim));
  std::vector<float> cos(static_cast<size_t>(half)), sin(static_cast<size_t>(half));
  // In pair t, feature `a` is the one rotated by -sin and `b` by +sin.
  const int64_t a_step = rotary.interleaved ? 2 : 1, b_offset = rotary.interleaved ? 1 : half;
  for (int64_t r = 0; r < rows; ++r) {
    const double position = positions ? positions[r] : static_cast<double>(first_position + r);
    for (int64_t t = 0; t < half; ++t) {
      const double angle = position * inv_freq[t];
      cos[t] = static_cast<float>(std::cos(angle));
      sin[t] = static_cast<float>(inverse ? -std::sin(angle) : std::sin(angle));
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* head = x + r * row_stride + h * head_dim;
      for (int64_t t = 0; t < half; ++t) {
        float& a = head[t * a_step];
        float& b = head[t * a_step + b_offset];
        const float xa = a, xb = b;
        a = xa * cos[t] - xb * sin[t];
        b = xb * cos[t] + xa * sin[t];
      }
    }
  }
}

}  // namespace mha
