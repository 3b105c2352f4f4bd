// The residual stream's norms (kernels/row_norm.hpp) against their plain twin:
// LayerNorm and RMSNorm, with and without the fused residual add, on widths with and without a
// vector tail, and rows far from zero mean (where a one-pass variance would cancel).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "mha/kernels/row_norm.hpp"
#include "random_vector.hpp"

namespace {

using mha::kernels::RowNormArgs;

TEST(RowNorm, MatchesTheReferenceTwin) {
  for (bool layer_norm : {true, false}) {
    for (bool fused_add : {true, false}) {
      for (int64_t E : {1, 7, 64, 131, 896}) {
        const int64_t rows = 3;
        std::vector<float> x = random_vector(static_cast<size_t>(rows * E), 11), add = random_vector(x.size(), 12);
        for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 4.0f + 30.0f;  // a large mean
        const std::vector<float> weight = random_vector(static_cast<size_t>(E), 13), bias = random_vector(static_cast<size_t>(E), 14);
        std::vector<float> x_fast = x, x_ref = x, got(x.size()), want(x.size());
        const RowNormArgs fast{x_fast.data(), fused_add ? add.data() : nullptr, got.data(), rows, E, weight.data(), layer_norm ? bias.data() : nullptr, 1e-5f};
        RowNormArgs ref = fast;
        ref.x = x_ref.data();
        ref.out = want.data();
        mha::kernels::row_norm(fast);
        mha::kernels::row_norm_reference(ref);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(x_fast[i], x_ref[i]) << "the residual add, at " << i;
          // both sum in double; they round once, to float
          ASSERT_NEAR(got[i], want[i], 1e-6f * (1.0f + std::abs(want[i]))) << "layer_norm " << layer_norm << ", add " << fused_add << ", E " << E << ", at " << i;
        }
      }
    }
  }
}

TEST(RowNorm, KnownValues) {
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f}, out[4];
  const float ones[4] = {1, 1, 1, 1}, zeros[4] = {0, 0, 0, 0};
  mha::kernels::row_norm({x, nullptr, out, 1, 4, ones, zeros, 0.0f});
  // LayerNorm of 1..4: mean 2.5, variance 1.25.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], (x[i] - 2.5f) / std::sqrt(1.25f), 1e-6f);
  mha::kernels::row_norm({x, nullptr, out, 1, 4, ones, nullptr, 0.0f});
  // RMSNorm: mean of squares 7.5.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], x[i] / std::sqrt(7.5f), 1e-6f);
  const float add[4] = {1, 1, 1, 1};
  mha::kernels::row_norm({x, add, out, 1, 4, ones, nullptr, 0.0f});
  EXPECT_EQ(x[3], 5.0f);  // the residual add happened in place
}

}  // namespace
