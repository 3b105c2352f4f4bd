// The q/k norms' kernels (qk_norm.hpp).
#include "qk_norm.hpp"

#include <cmath>

#include "simd.hpp"

namespace mha::kernels {

void qk_norm_reference(const QkNormArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t g = 0; g < a.groups; ++g) {
      float* x = a.x + r * a.row_stride + g * a.size;
      double squares = 0;
      for (int64_t i = 0; i < a.size; ++i) squares += static_cast<double>(x[i]) * x[i];
      const double inverse_rms = 1.0 / std::sqrt(squares / static_cast<double>(a.size) + a.eps);
      for (int64_t i = 0; i < a.size; ++i) x[i] = static_cast<float>(x[i] * inverse_rms * a.weight[i]);
    }
  }
}

void qk_norm(const QkNormArgs& a) {
  using simd::Vec;
  const int64_t vectorized = a.size - a.size % simd::kWidth;
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t g = 0; g < a.groups; ++g) {
      float* x = a.x + r * a.row_stride + g * a.size;
      Vec sum(0.0f);
      for (int64_t i = 0; i < vectorized; i += simd::kWidth) {
        const Vec v = simd::load(x + i);
        sum = simd::fmadd(v, v, sum);
      }
      float squares = simd::hsum(sum);
      for (int64_t i = vectorized; i < a.size; ++i) squares += x[i] * x[i];
      const float inverse_rms = 1.0f / std::sqrt(squares / static_cast<float>(a.size) + a.eps);
      const Vec scale(inverse_rms);
      for (int64_t i = 0; i < vectorized; i += simd::kWidth)
        simd::store(x + i, simd::load(x + i) * scale * simd::load(a.weight + i));
      for (int64_t i = vectorized; i < a.size; ++i) x[i] = x[i] * inverse_rms * a.weight[i];
    }
  }
}

}  // namespace mha::kernels
