// Every fixture case through the C++ API must match PyTorch within |d| <= 1e-5 + 1e-4 |torch|.
#include <gtest/gtest.h>

#include <cmath>

#include "fixtures.hpp"
#include "mha/kernels/attention_kernel.hpp"

namespace {

const std::vector<fixtures::Case>& all_cases() {
  static const std::vector<fixtures::Case> cases = fixtures::load_all(MHA_FIXTURE_DIR);
  return cases;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-5 + 1e-4 * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements out of tolerance";
}

class Parity : public ::testing::TestWithParam<size_t> {};

TEST_P(Parity, MatchesPyTorch) {
  const fixtures::Case& c = all_cases()[GetParam()];
  SCOPED_TRACE(c.name);
  mha::MultiheadAttention layer(c.config());
  layer.load_state_dict(c.state_dict());
  mha::ForwardResult r = layer.forward(c.ref("query"), c.ref("key"), c.ref("value"), c.options());
  EXPECT_EQ(r.output_shape, c.tensors.at("output").shape);
  expect_close(r.output, c.tensors.at("output").f32, "output");
  if (c.tensors.count("weights")) {
    EXPECT_EQ(r.weights_shape, c.tensors.at("weights").shape);
    expect_close(r.weights, c.tensors.at("weights").f32, "weights");
  } else {
    EXPECT_TRUE(r.weights.empty());
  }
  for (float x : r.output) ASSERT_TRUE(std::isfinite(x)) << "non-finite output";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::Range<size_t>(0, all_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return all_cases()[info.param].name; });

TEST(FixtureSet, HasEveryCase) { EXPECT_GE(all_cases().size(), 24u); }

TEST(FullyMaskedRows, GiveZeroWeightsAndBiasOutput) {
  // Query 1 may see no key: its weights are zero and its output is exactly out_proj.bias.
  mha::AttentionConfig cfg;
  cfg.embed_dim = 4;
  cfg.num_heads = 2;
  mha::MultiheadAttention layer(cfg);
  std::vector<float> in_w(48, 0.1f), in_b(12, 0.0f), out_w(16, 0.2f), out_b = {1, 2, 3, 4};
  layer.load_state_dict({{"in_proj_weight", {in_w.data(), 48}},
                         {"in_proj_bias", {in_b.data(), 12}},
                         {"out_proj.weight", {out_w.data(), 16}},
                         {"out_proj.bias", {out_b.data(), 4}}});
  std::vector<float> q(3 * 4, 0.5f);
  std::vector<uint8_t> blocked = {0, 0, 0, 1, 1, 1, 0, 1, 0};
  mha::ForwardOptions o;
  o.attn_mask = {mha::MaskType::kBool, blocked.data(), {3, 3}};
  o.need_weights = true;
  o.average_weights = false;
  auto r = layer.forward({q.data(), {3, 4}}, {}, {}, o);
  for (int e = 0; e < 4; ++e) EXPECT_EQ(r.output[4 + e], out_b[e]);
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(r.weights[h * 9 + 3 + j], 0.0f);
  EXPECT_FLOAT_EQ(r.weights[0] + r.weights[1] + r.weights[2], 1.0f);
}

TEST(MaskedKeys, NeverReachTheOutputEvenWhenNaN) {
  mha::AttentionConfig cfg;
  cfg.embed_dim = 4;
  cfg.num_heads = 1;
  mha::MultiheadAttention layer(cfg);
  std::vector<float> in_w(48), out_w(16, 0.0f), in_b(12, 0.0f), out_b(4, 0.0f);
  for (size_t i = 0; i < in_w.size(); ++i) in_w[i] = std::sin(static_cast<float>(i));
  for (int i = 0; i < 4; ++i) out_w[i * 5] = 1.0f;
  layer.load_state_dict({{"in_proj_weight", {in_w.data(), 48}},
                         {"in_proj_bias", {in_b.data(), 12}},
                         {"out_proj.weight", {out_w.data(), 16}},
                         {"out_proj.bias", {out_b.data(), 4}}});
  std::vector<float> q(2 * 4, 0.25f), kv(3 * 4, 0.5f);
  std::vector<uint8_t> pad = {0, 0, 1};
  mha::ForwardOptions o;
  o.key_padding_mask = {mha::MaskType::kBool, pad.data(), {3}};
  auto clean = layer.forward({q.data(), {2, 4}}, {kv.data(), {3, 4}}, {kv.data(), {3, 4}}, o);
  for (int e = 0; e < 4; ++e) kv[8 + e] = std::nanf("");
  auto dirty = layer.forward({q.data(), {2, 4}}, {kv.data(), {3, 4}}, {kv.data(), {3, 4}}, o);
  EXPECT_EQ(clean.output, dirty.output);
}

}  // namespace
