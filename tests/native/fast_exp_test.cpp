// The softmax's vectorized exp against double-precision std::exp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mha/kernels/fast_exp.hpp"

namespace {

using mha::kernels::fast_exp;
using mha::kernels::simd::kWidth;

std::vector<float> exp_of(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += kWidth)
    mha::kernels::simd::store(y.data() + i, fast_exp(mha::kernels::simd::load(x.data() + i)));
  return y;
}

// The softmax calls it with s - max(s): 0 down to -inf.
TEST(FastExp, RelativeErrorBelowThreeUlpOverTheSoftmaxRange) {
  std::vector<float> x;
  for (float v = -87.0f; v <= 0.0f; v += 0.0037f) x.push_back(v);
  while (x.size() % kWidth) x.push_back(0.0f);
  const std::vector<float> y = exp_of(x);
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::abs(y[i] - exact) / exact);
  }
  EXPECT_LT(worst, 3.0 * std::numeric_limits<float>::epsilon()) << "worst relative error " << worst;
}

TEST(FastExp, ExactAtZeroAndZeroForMinusInfinityAndVeryNegativeInputs) {
  std::vector<float> x = {0.0f, -std::numeric_limits<float>::infinity(), -88.0f, -1e30f};
  while (x.size() % kWidth) x.push_back(0.0f);
  const std::vector<float> y = exp_of(x);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(FastExp, NanStaysNan) {
  std::vector<float> x(kWidth, std::numeric_limits<float>::quiet_NaN());
  for (const float y : exp_of(x)) EXPECT_TRUE(std::isnan(y));
}

}  // namespace
