#include "linear.hpp"

namespace mha::kernels {

void linear_reference(const LinearArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.in_features;
    float* y = a.y + r * a.out_features;
    for (int64_t o = 0; o < a.out_features; ++o) {
      const float* w = a.weight + o * a.in_features;
      float acc = 0.0f;
      for (int64_t i = 0; i < a.in_features; ++i) acc += x[i] * w[i];
      y[o] = acc + (a.bias ? a.bias[o] : 0.0f);
    }
  }
}

}  // namespace mha::kernels
