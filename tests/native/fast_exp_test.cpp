// The softmax's vectorized exp against double-precision std::exp: every scheme of it (the exp
// kernel's variants, fast_exp.hpp's ExpScheme) to the same bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mha/kernels/fast_exp.hpp"

namespace {

using mha::kernels::ExpScheme;
using mha::kernels::fast_exp_as;
using mha::kernels::simd::kWidth;

constexpr ExpScheme kSchemes[] = {ExpScheme::kEstrin, ExpScheme::kHorner};

std::vector<float> exp_of(const std::vector<float>& x, ExpScheme scheme) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += kWidth) {
    const auto v = mha::kernels::simd::load(x.data() + i);
    mha::kernels::simd::store(y.data() + i, scheme == ExpScheme::kEstrin ? fast_exp_as<ExpScheme::kEstrin>(v)
                                                                         : fast_exp_as<ExpScheme::kHorner>(v));
  }
  return y;
}

// The softmax calls it with s - max(s): 0 down to -inf, and sums the results against the row
// maximum's exp(0) = 1, so the absolute error is what reaches a probability. Near 0 the error
// is also small relative to the value; further down, rounding x log2(e) adds |x| * 6e-8 of it.
TEST(FastExp, ErrorBelowTwoUlpOfOneOverTheSoftmaxRangeAndThreeUlpRelativeNearZero) {
  std::vector<float> x;
  for (float v = -87.0f; v <= 0.0f; v += 0.0037f) x.push_back(v);
  while (x.size() % kWidth) x.push_back(0.0f);
  for (const ExpScheme scheme : kSchemes) {
    SCOPED_TRACE(static_cast<int>(scheme));
    const std::vector<float> y = exp_of(x, scheme);
    double worst_absolute = 0.0, worst_relative_near_zero = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double exact = std::exp(static_cast<double>(x[i]));
      worst_absolute = std::max(worst_absolute, std::abs(y[i] - exact));
      if (x[i] >= -1.0f) worst_relative_near_zero = std::max(worst_relative_near_zero, std::abs(y[i] - exact) / exact);
    }
    const double ulp = std::numeric_limits<float>::epsilon();
    EXPECT_LT(worst_absolute, 2.0 * ulp) << "worst absolute error " << worst_absolute;
    EXPECT_LT(worst_relative_near_zero, 3.0 * ulp) << "worst relative error on [-1, 0] " << worst_relative_near_zero;
    EXPECT_GT(worst_absolute, 0.0);  // a real computation, not std::exp
  }
}

// Relative error grows with |x| by design (see fast_exp.hpp), but stays bounded: at x = -20,
// where exp(x) = 2e-9, it is still within 1.5e-6 (measured: 1.02e-6).
TEST(FastExp, RelativeErrorStaysBoundedForSmallProbabilities) {
  std::vector<float> x;
  for (float v = -20.0f; v <= -1.0f; v += 0.0011f) x.push_back(v);
  while (x.size() % kWidth) x.push_back(-1.0f);
  for (const ExpScheme scheme : kSchemes) {
    SCOPED_TRACE(static_cast<int>(scheme));
    const std::vector<float> y = exp_of(x, scheme);
    double worst = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double exact = std::exp(static_cast<double>(x[i]));
      worst = std::max(worst, std::abs(y[i] - exact) / exact);
    }
    EXPECT_LT(worst, 1.5e-6) << "worst relative error on [-20, -1] " << worst;
  }
}

TEST(FastExp, ExactAtZeroAndZeroForMinusInfinityAndVeryNegativeInputs) {
  std::vector<float> x = {0.0f, -std::numeric_limits<float>::infinity(), -88.0f, -1e30f};
  while (x.size() % kWidth) x.push_back(0.0f);
  for (const ExpScheme scheme : kSchemes) {
    const std::vector<float> y = exp_of(x, scheme);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], 0.0f);
  }
}

TEST(FastExp, NanStaysNan) {
  std::vector<float> x(kWidth, std::numeric_limits<float>::quiet_NaN());
  for (const ExpScheme scheme : kSchemes)
    for (const float y : exp_of(x, scheme)) EXPECT_TRUE(std::isnan(y));
}

}  // namespace
