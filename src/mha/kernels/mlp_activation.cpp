// mlp_activation.hpp's kernels: a whole vector at a time, the tail element by element through the
// same formula (one lane), so every element gets the same arithmetic.
#include "mlp_activation.hpp"

#include <cmath>

#include "fast_exp.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

constexpr float kGeluScale = 1.5957691216057308f;  // 2 sqrt(2 / pi): sigmoid(2u) = 0.5 (1 + tanh(u))

template <typename V>
V sigmoid_input(V x, MlpActivation act) {
  return act == MlpActivation::kSilu ? x : V(kGeluScale) * (x + V(0.044715f) * x * x * x);
}

// x * sigmoid(z(x)) on a vector.
simd::Vec activate(simd::Vec x, MlpActivation act) {
  using simd::Vec;
  const Vec z = sigmoid_input(x, act);
  const Vec e = fast_exp(Vec(0.0f) - simd::abs(z));
  const Vec numerator = simd::select_lt(z, Vec(0.0f), e, Vec(1.0f));
  return x * (numerator / (Vec(1.0f) + e));
}

// One element through the vector formula (in lane 0), so the tail gets the body's arithmetic.
float activate_one(float x, MlpActivation act) {
  float lanes[simd::kWidth] = {};
  lanes[0] = x;
  simd::store(lanes, activate(simd::load(lanes), act));
  return lanes[0];
}

}  // namespace

void mlp_activation(const float* in, int64_t rows, int64_t I, MlpActivation act, bool gated, float* out) {
  const int64_t stride = gated ? 2 * I : I;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = in + r * stride;
    const float* up = gated ? x + I : nullptr;
    float* y = out + r * I;
    int64_t i = 0;
    for (; i + simd::kWidth <= I; i += simd::kWidth) {
      simd::Vec v = activate(simd::load(x + i), act);
      if (gated) v = v * simd::load(up + i);
      simd::store(y + i, v);
    }
    for (; i < I; ++i) y[i] = gated ? activate_one(x[i], act) * up[i] : activate_one(x[i], act);
  }
}

void mlp_activation_reference(const float* in, int64_t rows, int64_t I, MlpActivation act, bool gated, float* out) {
  const int64_t stride = gated ? 2 * I : I;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < I; ++i) {
      const double x = in[r * stride + i];
      const double z = act == MlpActivation::kSilu ? x : std::sqrt(2.0 / M_PI) * 2.0 * (x + 0.044715 * x * x * x);
      const double value = x / (1.0 + std::exp(-z));
      out[r * I + i] = static_cast<float>(gated ? value * in[r * stride + I + i] : value);
    }
  }
}

}  // namespace mha::kernels
