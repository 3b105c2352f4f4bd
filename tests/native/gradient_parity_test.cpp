// Every gradient fixture (index.json's gradientCases) through the C++ API: forward_for_training,
// then backward with dLoss/dOutput = G, against PyTorch's autograd (or autograd through the
// float64 reference): |got - want| <= 1e-5 |want| + 8 * 2^-23 * sqrt(K) * max|want| per tensor,
// K the case's reductionLength (tools/make_fixtures.py, GRADIENT_TOLERANCE). On 1 and 2 threads.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "fixtures.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/layer/saved_forward.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace {

const std::vector<fixtures::Case>& gradient_cases() {
  static const std::vector<fixtures::Case> cases = fixtures::load_all(MHA_FIXTURE_DIR, "gradientCases");
  return cases;
}

// How many elements of got are outside the bound (the first five are reported).
int out_of_tolerance(const std::vector<float>& got, const std::vector<float>& want, int64_t reduction_length,
                     const std::string& what) {
  if (got.size() != want.size()) {
    ADD_FAILURE() << what << ": " << got.size() << " elements, want " << want.size();
    return static_cast<int>(want.size());
  }
  float largest = 0;
  for (float w : want) largest = std::max(largest, std::fabs(w));
  const double floor = 8 * std::ldexp(1.0, -23) * std::sqrt(static_cast<double>(reduction_length)) * largest;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-5 * std::fabs(want[i]) + floor;
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " (bound " << tol << ")";
  }
  return bad;
}

void expect_gradient_close(const std::vector<float>& got, const std::vector<float>& want, int64_t reduction_length,
                           const std::string& what) {
  const int bad = out_of_tolerance(got, want, reduction_length, what);
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.size() << " elements out of tolerance";
}

// Elements of a and b further apart than 8 float32 ulps of the largest |b|.
int rounding_apart(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return static_cast<int>(std::max(a.size(), b.size()));
  float largest = 0;
  for (float x : b) largest = std::max(largest, std::fabs(x));
  int apart = 0;
  for (size_t i = 0; i < a.size(); ++i) apart += !(std::fabs(a[i] - b[i]) <= 8 * std::ldexp(largest, -23));
  return apart;
}

class GradientParity : public ::testing::TestWithParam<std::tuple<size_t, int>> {};

TEST_P(GradientParity, MatchesAutograd) {
  const auto [index, threads] = GetParam();
  const fixtures::Case& c = gradient_cases()[index];
  SCOPED_TRACE(c.name + " on " + std::to_string(threads) + " thread(s)");
  mha::MultiheadAttention layer(c.config());
  layer.load_state_dict(c.state_dict());
  if (threads > 1) layer.set_thread_pool(std::make_shared<mha::ThreadPool>(threads));
  const int64_t K = c.json["reductionLength"];

  auto trained = layer.forward_for_training(c.ref("query"), c.ref("key"), c.ref("value"), c.options());
  ASSERT_TRUE(trained.saved);
  // Without dropout the training forward is the inference forward, to float32 rounding: inference
  // takes the decode kernel for a few query rows, training always the flash kernel (it keeps the
  // log-sum-exps), so the last bits may differ; a few ulps of the tensor's scale, no more.
  const mha::ForwardResult plain = layer.forward(c.ref("query"), c.ref("key"), c.ref("value"), c.options());
  EXPECT_EQ(trained.result.output_shape, c.tensors.at("output").shape);
  EXPECT_EQ(trained.result.weights_shape, plain.weights_shape);
  EXPECT_EQ(rounding_apart(trained.result.output, plain.output), 0) << "output";
  EXPECT_EQ(rounding_apart(trained.result.weights, plain.weights), 0) << "weights";

  const fixtures::Tensor& g_out = c.tensors.at("gradOutput");
  ASSERT_EQ(g_out.shape, trained.result.output_shape);
  const mha::Gradients g = layer.backward(*trained.saved, g_out.f32.data());

  EXPECT_EQ(g.query_shape, c.gradients.at("query").shape);
  expect_gradient_close(g.query, c.gradients.at("query").f32, K, "dquery");
  if (c.gradients.count("key")) {
    EXPECT_EQ(g.key_shape, c.gradients.at("key").shape);
    EXPECT_EQ(g.value_shape, c.gradients.at("value").shape);
    expect_gradient_close(g.key, c.gradients.at("key").f32, K, "dkey");
    expect_gradient_close(g.value, c.gradients.at("value").f32, K, "dvalue");
  } else {
    EXPECT_TRUE(g.key.empty());
    EXPECT_TRUE(g.value.empty());
  }

  // The parameters' gradients in the state dict's keys, layout and order.
  const auto params = mha::state_dict_from_parameters(layer.config(), g.params);
  std::vector<std::string> got_keys, want_keys;
  for (const auto& [key, values] : params) got_keys.push_back(key);
  for (const auto& [key, shape] : mha::state_dict_layout(layer.config())) want_keys.push_back(key);
  EXPECT_EQ(got_keys, want_keys);
  ASSERT_EQ(params.size(), c.param_gradients.size());
  for (const auto& [key, values] : params) {
    ASSERT_TRUE(c.param_gradients.count(key)) << "unexpected parameter gradient " << key;
    expect_gradient_close(values, c.param_gradients.at(key).f32, K, "d" + key);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, GradientParity,
    ::testing::Combine(::testing::Range<size_t>(0, gradient_cases().size()), ::testing::Values(1, 2)),
    [](const ::testing::TestParamInfo<std::tuple<size_t, int>>& info) {
      return gradient_cases()[std::get<0>(info.param)].name + "_" + std::to_string(std::get<1>(info.param)) + "t";
    });

TEST(GradientFixtureSet, CoversAtLeastThirtyConfigurations) { EXPECT_GE(gradient_cases().size(), 30u); }

TEST(GradientParityCheck, CanFail) {
  // The bound rejects a gradient off by 1e-4 of the tensor's largest entry in one element.
  const fixtures::Case& c = gradient_cases().front();
  const std::vector<float>& want = c.gradients.at("query").f32;
  std::vector<float> wrong = want;
  float largest = 0;
  for (float w : want) largest = std::max(largest, std::fabs(w));
  wrong[3] += 1e-4f * largest;
  int bad = 0;
  EXPECT_NONFATAL_FAILURE(bad = out_of_tolerance(wrong, want, c.json["reductionLength"], "dquery"), "dquery[3]");
  EXPECT_EQ(bad, 1);
}

}  // namespace
