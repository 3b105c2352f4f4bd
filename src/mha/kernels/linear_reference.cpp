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

void linear_backward_reference(const LinearBackwardArgs& a) {
  const int64_t in = a.in_features, out = a.out_features;
  if (a.d_x) {
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t i = 0; i < in; ++i) {
        float acc = 0.0f;
        for (int64_t o = 0; o < out; ++o) acc += a.d_y[r * out + o] * a.weight[o * in + i];
        a.d_x[r * in + i] = acc;
      }
    }
  }
  if (a.d_weight) {
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        float acc = 0.0f;
        for (int64_t r = 0; r < a.rows; ++r) acc += a.d_y[r * out + o] * a.x[r * in + i];
        a.d_weight[o * in + i] = acc;
      }
    }
  }
  if (a.d_bias) {
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t r = 0; r < a.rows; ++r) acc += a.d_y[r * out + o];
      a.d_bias[o] = acc;
    }
  }
}

}  // namespace mha::kernels
