// The output gate's kernels (output_gate.hpp).
#include "output_gate.hpp"

#include <cmath>

#include "fast_exp.hpp"
#include "simd.hpp"

namespace mha::kernels {

void output_gate_reference(const OutputGateArgs& a) {
  for (int64_t i = 0; i < a.count; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-a.gate[i]));
    a.gate[i] = s;
    a.out[i] = a.z[i] * s;
  }
}

// sigmoid(x) from e = exp(-|x|), inside fast_exp's domain (arguments <= 0): 1 / (1 + e) for
// x >= 0, e / (1 + e) below. A NaN logit stays NaN (fast_exp keeps it).
void output_gate(const OutputGateArgs& a) {
  using simd::Vec;
  const Vec one(1.0f), zero(0.0f);
  int64_t i = 0;
  for (; i + simd::kWidth <= a.count; i += simd::kWidth) {
    const Vec x = simd::load(a.gate + i);
    const Vec e = fast_exp(Vec(0.0f) - simd::abs(x));
    const Vec numerator = simd::select_lt(x, zero, e, one);
    const Vec s = numerator / (one + e);
    simd::store(a.gate + i, s);
    simd::store(a.out + i, simd::load(a.z + i) * s);
  }
  OutputGateArgs rest{a.z + i, a.gate + i, a.out + i, a.count - i};
  output_gate_reference(rest);
}

void output_gate_backward(const OutputGateBackwardArgs& a) {
  for (int64_t i = 0; i < a.count; ++i) {
    const float d = a.d_out[i], s = a.gate[i];
    a.d_logits[i] = d * a.z[i] * s * (1.0f - s);
    a.d_z[i] = d * s;
  }
}

}  // namespace mha::kernels
