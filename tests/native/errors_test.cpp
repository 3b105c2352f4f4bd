// Bad configurations, state dicts and inputs throw ArgumentError naming the argument.
#include <gtest/gtest.h>

#include "mha/plan/errors.hpp"
#include "mha/layer/multihead_attention.hpp"

namespace {

using mha::ErrorKind;

template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << fragment;
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

mha::AttentionConfig config(int64_t E, int64_t H) {
  mha::AttentionConfig c;
  c.embed_dim = E;
  c.num_heads = H;
  return c;
}

struct Loaded {
  mha::MultiheadAttention layer{config(8, 2)};
  std::vector<float> in_w = std::vector<float>(192, 0.01f), in_b = std::vector<float>(24, 0.0f),
                     out_w = std::vector<float>(64, 0.01f), out_b = std::vector<float>(8, 0.0f);
  Loaded() { layer.load_state_dict(sd()); }
  mha::StateDict sd() {
    return {{"in_proj_weight", {in_w.data(), 192}},
            {"in_proj_bias", {in_b.data(), 24}},
            {"out_proj.weight", {out_w.data(), 64}},
            {"out_proj.bias", {out_b.data(), 8}}};
  }
};

TEST(ConfigErrors, HeadsMustDivide) {
  expect_error([] { mha::MultiheadAttention l(config(10, 3)); }, ErrorKind::kRange, "numHeads (3) must divide embedDim (10)");
  expect_error([] { mha::MultiheadAttention l(config(0, 1)); }, ErrorKind::kRange, "embedDim must be a positive integer");
  auto c = config(8, 4);
  c.num_kv_heads = 3;
  expect_error([&] { mha::MultiheadAttention l(c); }, ErrorKind::kRange, "numKvHeads (3) must divide numHeads (4)");
}

TEST(StateDictErrors, NamesTheKey) {
  Loaded t;
  auto sd = t.sd();
  sd.erase("out_proj.bias");
  expect_error([&] { t.layer.load_state_dict(sd); }, ErrorKind::kType, "missing key 'out_proj.bias' (expected 8 floats, shape [8])");
  sd = t.sd();
  sd["in_proj_weight"].length = 100;
  expect_error([&] { t.layer.load_state_dict(sd); }, ErrorKind::kRange, "stateDict['in_proj_weight']: expected 192 floats (shape [24, 8]), got 100");
  sd = t.sd();
  sd["bias_k"] = {t.in_b.data(), 8};
  expect_error([&] { t.layer.load_state_dict(sd); }, ErrorKind::kType, "unexpected key 'bias_k'");
}

TEST(ForwardErrors, NamesTheArgumentAndShape) {
  Loaded t;
  std::vector<float> x(2 * 3 * 8, 0.0f);
  expect_error([&] { t.layer.forward({x.data(), {2, 3, 7}}, {}, {}); }, ErrorKind::kRange, "query: last dimension must be embedDim = 8");
  expect_error([&] { t.layer.forward({x.data(), {48}}, {}, {}); }, ErrorKind::kRange, "query: expected shape [B, L, 8] or [L, 8], got [48]");
  expect_error([&] { t.layer.forward({x.data(), {2, 3, 8}}, {x.data(), {2, 3, 8}}, {x.data(), {1, 3, 8}}); },
               ErrorKind::kRange, "value: expected shape [B, S, vdim] = [2, 3, 8], got [1, 3, 8]");
  std::vector<uint8_t> m(9, 0);
  mha::ForwardOptions o;
  o.key_padding_mask = {mha::MaskType::kBool, m.data(), {3, 3}};
  expect_error([&] { t.layer.forward({x.data(), {2, 3, 8}}, {}, {}, o); }, ErrorKind::kRange, "keyPaddingMask: expected shape [B, S] = [2, 3], got [3, 3]");
  o = {};
  o.attn_mask = {mha::MaskType::kFloat, m.data(), {3, 2}};
  expect_error([&] { t.layer.forward({x.data(), {2, 3, 8}}, {}, {}, o); }, ErrorKind::kRange, "attnMask: expected shape [L, S] = [3, 3] or [B*numHeads, L, S] = [4, 3, 3], got [3, 2]");
}

TEST(ForwardErrors, NeedsWeightsFirst) {
  mha::MultiheadAttention layer(config(8, 2));
  std::vector<float> x(8, 0.0f);
  expect_error([&] { layer.forward({x.data(), {1, 8}}, {}, {}); }, ErrorKind::kType, "call loadStateDict() or initialize() first");
}

TEST(StateDictErrors, FailedLoadKeepsOldWeights) {
  Loaded t;
  auto before = t.layer.parameters().q_weight;
  auto sd = t.sd();
  std::vector<float> other(192, 5.0f);
  sd["in_proj_weight"] = {other.data(), 192};
  sd["out_proj.weight"].length = 3;
  EXPECT_THROW(t.layer.load_state_dict(sd), mha::ArgumentError);
  EXPECT_EQ(t.layer.parameters().q_weight, before);
}

}  // namespace
