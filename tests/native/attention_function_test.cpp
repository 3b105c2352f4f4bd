// The attention function (src/mha/function/attention_function.hpp): plan_attention's shapes and refusals,
// and run_attention against a float64 statement of the formula (GQA, a past, a broadcast bool
// mask with ONNX's padding, bottom-right causal, softcap). The ONNX conformance cases run through
// the JS API (tests/js/attention-function-onnx.test.js).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/function/attention_function.hpp"
#include "mha/plan/errors.hpp"

namespace {

using mha::AttentionFunctionOptions;
using mha::AttentionPlan;
using mha::Shape;
using mha::TensorRef;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

std::string refusal(const TensorRef& q, const TensorRef& k, const TensorRef& v, const AttentionFunctionOptions& o) {
  try {
    mha::plan_attention(q, k, v, o);
  } catch (const mha::ArgumentError& e) {
    return e.what();
  }
  return "";
}

TEST(AttentionFunctionPlan, ShapesOfTheThreeForms) {
  std::vector<float> q(2 * 8 * 3 * 4), k(2 * 2 * 5 * 4), v(2 * 2 * 5 * 6);
  AttentionFunctionOptions o;
  AttentionPlan p = mha::plan_attention({q.data(), {2, 8, 3, 4}}, {k.data(), {2, 2, 5, 4}}, {v.data(), {2, 2, 5, 6}}, o);
  EXPECT_EQ(p.output_shape, (Shape{2, 8, 3, 6}));
  EXPECT_EQ(p.heads_per_kv(), 4);
  EXPECT_FLOAT_EQ(p.scale, 0.5f);
  EXPECT_TRUE(p.present_key_shape.empty());

  o.num_heads = 8;
  o.kv_num_heads = 2;
  p = mha::plan_attention({q.data(), {2, 3, 32}}, {k.data(), {2, 5, 8}}, {v.data(), {2, 5, 12}}, o);
  EXPECT_TRUE(p.packed_heads);
  EXPECT_EQ(p.output_shape, (Shape{2, 3, 48}));

  AttentionFunctionOptions u;
  std::vector<float> past_k(2 * 7 * 4), past_v(2 * 7 * 6);
  u.past_key = {past_k.data(), {2, 7, 4}};
  u.past_value = {past_v.data(), {2, 7, 6}};
  u.need_weights = u.capture = true;
  p = mha::plan_attention({q.data(), {8, 3, 4}}, {k.data(), {2, 5, 4}}, {v.data(), {2, 5, 6}}, u);
  EXPECT_FALSE(p.batched);
  EXPECT_EQ(p.total_len, 12);
  EXPECT_EQ(p.present_key_shape, (Shape{2, 12, 4}));
  EXPECT_EQ(p.present_value_shape, (Shape{2, 12, 6}));
  EXPECT_EQ(p.weights_shape, (Shape{8, 3, 12}));
  EXPECT_EQ(p.step_shape, (Shape{8, 3, 12}));
}

TEST(AttentionFunctionPlan, RefusalsNameTheArgumentAndTheShape) {
  std::vector<float> data(1000);
  const float* d = data.data();
  AttentionFunctionOptions o;
  EXPECT_EQ(refusal({d, {2, 3, 4}}, {d, {2, 5, 4}}, {d, {2, 5, 4}}, o), "");  // unbatched [Hq, L, E]
  EXPECT_NE(refusal({d, {3, 4}}, {d, {5, 4}}, {d, {5, 4}}, o).find("query: expected shape [B, Hq, L, E]"),
            std::string::npos);
  EXPECT_NE(refusal({d, {1, 6, 3, 4}}, {d, {1, 4, 5, 4}}, {d, {1, 4, 5, 4}}, o).find("multiple of the key's (Hkv = 4)"),
            std::string::npos);
  EXPECT_NE(refusal({d, {1, 2, 3, 4}}, {d, {1, 2, 5, 8}}, {d, {1, 2, 5, 4}}, o).find("key: expected shape [B, Hkv, S, E] with E = 4"),
            std::string::npos);
  EXPECT_NE(refusal({d, {1, 2, 3, 4}}, {d, {1, 2, 5, 4}}, {d, {1, 2, 6, 4}}, o).find("value: expected shape"),
            std::string::npos);
  o.attn_mask = {mha::MaskType::kBool, d, {2, 3, 5}};
  EXPECT_NE(refusal({d, {1, 4, 3, 4}}, {d, {1, 2, 5, 4}}, {d, {1, 2, 5, 4}}, o).find("attnMask: shape [2, 3, 5] does not broadcast to [B, Hq, L, T] = [1, 4, 3, 5]"),
            std::string::npos);
  o.attn_mask = {mha::MaskType::kBool, d, {3, 6}};
  EXPECT_NE(refusal({d, {1, 4, 3, 4}}, {d, {1, 2, 5, 4}}, {d, {1, 2, 5, 4}}, o).find("attnMask: the last dimension must be from 1 to T = P + S = 5"),
            std::string::npos);
  o = {};
  std::vector<int32_t> lens{6};
  o.kv_seq_lens = lens.data();
  o.kv_seq_lens_shape = {1};
  EXPECT_NE(refusal({d, {1, 4, 3, 4}}, {d, {1, 2, 5, 4}}, {d, {1, 2, 5, 4}}, o).find("kvSeqLens: every length must be from 0 to T"),
            std::string::npos);
  o = {};
  o.kv_num_heads = 2;
  EXPECT_NE(refusal({d, {1, 3, 8}}, {d, {1, 5, 4}}, {d, {1, 5, 4}}, o).find("kvNumHeads: only with numHeads"),
            std::string::npos);
}

// The score-step variants' rules are the layer's (check_variants, attention_config.hpp): the same
// refusals from the attention function's options and from a layer's config, each naming the
// heads as its own API does; a softcap of 0 is the function's "none".
TEST(AttentionFunctionPlan, VariantRefusalsAreTheLayersRules) {
  std::vector<float> data(1000);
  const float* d = data.data();
  const auto function_refusal = [&](const AttentionFunctionOptions& o) {
    return refusal({d, {1, 4, 3, 4}}, {d, {1, 2, 5, 4}}, {d, {1, 2, 5, 4}}, o);
  };
  const auto layer_refusal = [](mha::AttentionConfig c) -> std::string {
    c.embed_dim = 8;
    c.num_heads = 4;
    try {
      mha::resolve(c);
    } catch (const mha::ArgumentError& e) {
      return e.what();
    }
    return "";
  };
  AttentionFunctionOptions o;
  mha::AttentionConfig c;
  EXPECT_EQ(function_refusal(o), "");  // softcap 0: none
  EXPECT_EQ(layer_refusal(c), "");
  o.sliding_window = c.sliding_window = -2;
  EXPECT_EQ(function_refusal(o), "slidingWindow must be an integer >= 1, got -2");
  EXPECT_EQ(layer_refusal(c), "slidingWindow must be an integer >= 1, got -2");
  o = {};
  c = {};
  o.alibi_slopes = c.alibi_slopes = {0.5f, 0.25f, 0.125f};
  EXPECT_EQ(function_refusal(o), "alibiSlopes: expected one slope per query head (Hq = 4), got 3");
  EXPECT_EQ(layer_refusal(c), "alibiSlopes: expected numHeads = 4 slopes, got 3");
  o.alibi_slopes = c.alibi_slopes = {0.5f, 0.25f, std::numeric_limits<float>::quiet_NaN(), 0.125f};
  EXPECT_EQ(function_refusal(o), "alibiSlopes: every slope must be a finite number");
  EXPECT_EQ(layer_refusal(c), "alibiSlopes: every slope must be a finite number");
  o = {};
  c = {};
  o.softcap = -1.5f;
  c.softcap = -1.5f;
  EXPECT_EQ(function_refusal(o), "softcap must be a finite number > 0, got -1.5");
  EXPECT_EQ(layer_refusal(c), "softcap must be a finite number > 0, got -1.5");
  o.softcap = std::numeric_limits<float>::infinity();
  c.softcap = std::numeric_limits<float>::infinity();
  EXPECT_EQ(function_refusal(o), "softcap must be a finite number > 0, got Infinity");
  EXPECT_EQ(layer_refusal(c), "softcap must be a finite number > 0, got Infinity");
  o = {};
  c = {};
  o.dropout = c.dropout = 1.0f;
  EXPECT_EQ(function_refusal(o), "dropout must be a number in [0, 1), got 1");
  EXPECT_EQ(layer_refusal(c), "dropout must be a number in [0, 1), got 1");
}

// softmax(scale q.k + mask) v in double, with ONNX's padding of a short bool mask (true = attend),
// offset causal and softcap; a fully blocked row gives zeros.
TEST(AttentionFunctionRun, MatchesTheFormulaInDoubleWithGqaPastMaskAndCausal) {
  const int64_t B = 2, Hq = 4, Hkv = 2, L = 3, S = 4, P = 2, T = P + S, E = 8, Ev = 5;
  const std::vector<float> q = random_floats(B * Hq * L * E, 1), k = random_floats(B * Hkv * S * E, 2),
                           v = random_floats(B * Hkv * S * Ev, 3), pk = random_floats(B * Hkv * P * E, 4),
                           pv = random_floats(B * Hkv * P * Ev, 5);
  // [Hq, 1, T - 1]: broadcast over the batch and the query rows, padded by one blocked key.
  std::vector<uint8_t> mask(Hq * (T - 1));
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7 + 3) % 5 != 0;
  mask[0 * (T - 1) + 0] = mask[0 * (T - 1) + 1] = mask[0 * (T - 1) + 2] = 0;  // head 0: row 0 fully blocked
  AttentionFunctionOptions o;
  o.past_key = {pk.data(), {B, Hkv, P, E}};
  o.past_value = {pv.data(), {B, Hkv, P, Ev}};
  o.attn_mask = {mha::MaskType::kBool, mask.data(), {Hq, 1, T - 1}};
  o.causal = mha::CausalMode::kOffset;
  const std::vector<int32_t> offsets{P - 2, P};
  o.causal_offsets = offsets.data();
  o.causal_offsets_shape = {B};
  o.softcap = 2.0f;
  o.need_weights = true;
  const TensorRef tq{q.data(), {B, Hq, L, E}}, tk{k.data(), {B, Hkv, S, E}}, tv{v.data(), {B, Hkv, S, Ev}};
  const AttentionPlan p = mha::plan_attention(tq, tk, tv, o);
  std::vector<float> out(B * Hq * L * Ev), present_k(B * Hkv * T * E), present_v(B * Hkv * T * Ev), w(B * Hq * L * T);
  mha::AttentionOutputs outs;
  outs.output = out.data();
  outs.present_key = present_k.data();
  outs.present_value = present_v.data();
  outs.weights = w.data();
  mha::run_attention(p, tq, tk, tv, o, outs, nullptr);

  const auto key_at = [&](int64_t b, int64_t h, int64_t j, int64_t d) {
    return j < P ? pk[((b * Hkv + h) * P + j) * E + d] : k[((b * Hkv + h) * S + j - P) * E + d];
  };
  const auto value_at = [&](int64_t b, int64_t h, int64_t j, int64_t d) {
    return j < P ? pv[((b * Hkv + h) * P + j) * Ev + d] : v[((b * Hkv + h) * S + j - P) * Ev + d];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t j = 0; j < T; ++j) {
        for (int64_t d = 0; d < E; ++d) ASSERT_EQ(present_k[((b * Hkv + h) * T + j) * E + d], key_at(b, h, j, d));
        for (int64_t d = 0; d < Ev; ++d) ASSERT_EQ(present_v[((b * Hkv + h) * T + j) * Ev + d], value_at(b, h, j, d));
      }
  int fully_blocked_rows = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> logit(T, -std::numeric_limits<double>::infinity());
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < T; ++j) {
          const bool attend = j < T - 1 && mask[h * (T - 1) + j] && j <= i + offsets[b];
          if (!attend) continue;
          double dot = 0;
          for (int64_t d = 0; d < E; ++d) dot += double(q[((b * Hq + h) * L + i) * E + d]) * key_at(b, h / 2, j, d);
          logit[j] = 2.0 * std::tanh(dot * p.scale / 2.0);
          max = std::max(max, logit[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += std::isinf(logit[j]) ? 0.0 : std::exp(logit[j] - max);
        fully_blocked_rows += sum == 0;
        for (int64_t d = 0; d < Ev; ++d) {
          double want = 0;
          for (int64_t j = 0; j < T; ++j)
            if (!std::isinf(logit[j])) want += std::exp(logit[j] - max) / sum * value_at(b, h / 2, j, d);
          EXPECT_NEAR(out[((b * Hq + h) * L + i) * Ev + d], want, 2e-5) << b << " " << h << " " << i << " " << d;
        }
        for (int64_t j = 0; j < T; ++j) {
          const double want = std::isinf(logit[j]) ? 0.0 : std::exp(logit[j] - max) / sum;
          EXPECT_NEAR(w[((b * Hq + h) * L + i) * T + j], want, 2e-6);
        }
      }
  EXPECT_GE(fully_blocked_rows, 1);  // the case covers ONNX's zero rows
}

}  // namespace
