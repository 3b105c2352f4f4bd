// The MLP activations in SIMD (kernels/mlp_activation.hpp) against their float64 reference twin:
// SwiGLU and tanh GeGLU, gated and ungated, on widths with and without a vector tail, over inputs
// far into both tails of the sigmoid (where exp underflows) and near zero.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "mha/kernels/mlp_activation.hpp"
#include "random_vector.hpp"

namespace {

using mha::kernels::MlpActivation;

TEST(MlpActivation, MatchesTheReferenceTwinGatedAndUngated) {
  for (MlpActivation act : {MlpActivation::kSilu, MlpActivation::kGeluTanh}) {
    for (bool gated : {true, false}) {
      for (int64_t I : {1, 7, 64, 131}) {
        const int64_t rows = 3, stride = gated ? 2 * I : I;
        std::vector<float> in = random_vector(static_cast<size_t>(rows * stride), 5);
        for (size_t i = 0; i < in.size(); ++i) in[i] *= i % 5 == 0 ? 60.0f : 6.0f;  // both tails, and the middle
        std::vector<float> got(static_cast<size_t>(rows * I)), want(got.size());
        mha::kernels::mlp_activation(in.data(), rows, I, act, gated, got.data());
        mha::kernels::mlp_activation_reference(in.data(), rows, I, act, gated, want.data());
        for (size_t i = 0; i < got.size(); ++i) {
          // fast_exp: < 3 ulp relative on its domain; the division and products a few more.
          ASSERT_NEAR(got[i], want[i], 1e-6f * (1.0f + std::abs(want[i]))) << "act " << static_cast<int>(act) << ", gated " << gated << ", I " << I << ", at " << i;
        }
      }
    }
  }
}

TEST(MlpActivation, KnownValues) {
  const float x[4] = {0.0f, 1.0f, -1.0f, -100.0f};
  float y[4];
  mha::kernels::mlp_activation(x, 1, 4, MlpActivation::kSilu, false, y);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.7310585786f, 1e-7f);   // silu(1) = 1 / (1 + e^-1)
  EXPECT_NEAR(y[2], -0.2689414214f, 1e-7f);
  EXPECT_NEAR(y[3], 0.0f, 1e-30f);           // (e^-100 underflows to 0)
}

}  // namespace
