// The residual stream's norms (row_norm.hpp): the plain twin, and the kernel the models run.
#include "row_norm.hpp"

#include <cmath>

namespace mha::kernels {

void row_norm_reference(const RowNormArgs& a) {
  const int64_t E = a.width;
  for (int64_t r = 0; r < a.rows; ++r) {
    float* x = a.x + r * E;
    float* out = a.out + r * E;
    if (a.add) for (int64_t i = 0; i < E; ++i) x[i] += a.add[r * E + i];
    double mean = 0;
    if (a.bias) {
      for (int64_t i = 0; i < E; ++i) mean += x[i];
      mean /= static_cast<double>(E);
    }
    double squares = 0;
    for (int64_t i = 0; i < E; ++i) squares += (x[i] - mean) * (x[i] - mean);
    const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(E) + a.eps);
    for (int64_t i = 0; i < E; ++i) {
      out[i] = static_cast<float>((x[i] - mean) * inverse * a.weight[i] + (a.bias ? a.bias[i] : 0.0f));
    }
  }
}

// In double, as the JavaScript loops it replaced: rows of a residual stream have means far from
// zero (BERT's post-norm blocks), where a float32 mean and (x - mean) lose digits the fixtures
// (torch, to 1e-6) notice. Four independent sums per pass so the adds pipeline, and the loops are
// plain enough for the compiler's SIMD (f64x2 on wasm).
void row_norm(const RowNormArgs& a) {
  const int64_t E = a.width, blocked = E - E % 4;
  for (int64_t r = 0; r < a.rows; ++r) {
    float* x = a.x + r * E;
    float* out = a.out + r * E;
    if (a.add) {
      const float* add = a.add + r * E;
      for (int64_t i = 0; i < E; ++i) x[i] += add[i];
    }
    double mean = 0;
    if (a.bias) {
      double s[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < blocked; i += 4) {
        for (int k = 0; k < 4; ++k) s[k] += x[i + k];
      }
      for (int64_t i = blocked; i < E; ++i) s[0] += x[i];
      mean = (s[0] + s[1] + s[2] + s[3]) / static_cast<double>(E);
    }
    double q[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < blocked; i += 4) {
      for (int k = 0; k < 4; ++k) q[k] += (x[i + k] - mean) * (x[i + k] - mean);
    }
    for (int64_t i = blocked; i < E; ++i) q[0] += (x[i] - mean) * (x[i] - mean);
    const double inverse = 1.0 / std::sqrt((q[0] + q[1] + q[2] + q[3]) / static_cast<double>(E) + a.eps);
    if (a.bias) {
      for (int64_t i = 0; i < E; ++i) out[i] = static_cast<float>((x[i] - mean) * inverse * a.weight[i] + a.bias[i]);
    } else {
      for (int64_t i = 0; i < E; ++i) out[i] = static_cast<float>(x[i] * inverse * a.weight[i]);
    }
  }
}

}  // namespace mha::kernels
