// The float64 layer (float64_attention.hpp) against the float64 Eigen oracle (eigen_oracle.hpp):
// random configurations (kdim/vdim, bias or none, grouped-query heads, free head sizes and scale,
// bool and float masks, causal, batched and unbatched, per-head and averaged weights), the output,
// the weights and every gradient. Both compute in float64, in a different order: they agree to
// about 1e-13 relative (the bound below leaves room for sums of a few hundred terms).
// PyTorch's appended keys and static keys/values, which the oracle lacks, are held to torch's own
// float64 numbers in tests/js/pytorch-mha.test.js; the refusals are checked here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "mha/plan/errors.hpp"
#include "mha/float64/float64_attention.hpp"

namespace {

struct Draw {
  mha::AttentionConfig config;
  int64_t B, L, S;
  bool batched, cross;
  std::vector<double> query, key, value, d_out;
  std::vector<uint8_t> bool_mask;
  std::vector<double> float_mask;  // the layer's float mask (doubles) ...
  std::vector<float> float_mask32;  // ... and the oracle's (the same values, which float32 holds exactly)
  mha::ForwardOptions options;      // the layer's masks (the oracle's are set in oracle_options)
};

std::vector<double> uniform(std::mt19937& rng, int64_t n, double scale = 1.0) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return v;
}

Draw draw(uint32_t seed) {
  std::mt19937 rng(seed);
  const auto between = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Draw d;
  mha::AttentionConfig& c = d.config;
  c.dtype = "float64";
  const int kv_heads = between(1, 3);
  c.num_heads = kv_heads * between(1, 3);
  c.num_kv_heads = between(0, 1) ? kv_heads : 0;
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  c.head_dim = between(1, 9);
  c.embed_dim = between(0, 1) ? c.num_heads * c.head_dim : between(1, 17);
  if (between(0, 2) == 0) c.value_head_dim = between(1, 9);
  if (between(0, 2) == 0) c.output_dim = between(1, 13);
  // (The oracle scales by the float32 scale: a scale float32 holds exactly keeps the two comparable.
  // The default, 1/sqrt(headDim) in float64, is held to torch's in tests/js/pytorch-mha.test.js.)
  c.scale = static_cast<float>(between(0, 3) == 0 ? 0.1 + between(0, 10) / 7.0 : 1.0 / std::sqrt(c.head_dim));
  c.bias = between(0, 3) != 0;
  d.cross = between(0, 1);
  if (d.cross && between(0, 1)) {
    c.kdim = between(1, 13);
    c.vdim = between(1, 13);
  }
  d.batched = between(0, 3) != 0;
  d.B = d.batched ? between(1, 3) : 1;
  d.L = between(1, 7);
  d.S = d.cross ? between(1, 7) : d.L;
  const mha::ResolvedConfig r = mha::resolve(c);
  d.query = uniform(rng, d.B * d.L * r.embed_dim);
  if (d.cross) {
    d.key = uniform(rng, d.B * d.S * r.kdim);
    d.value = uniform(rng, d.B * d.S * r.vdim);
  }
  d.d_out = uniform(rng, d.B * d.L * r.output_dim);
  mha::ForwardOptions& o = d.options;
  o.causal = between(0, 3) == 0;
  o.need_weights = true;
  o.average_weights = between(0, 1);
  const mha::Shape kpm_shape = d.batched ? mha::Shape{d.B, d.S} : mha::Shape{d.S};
  switch (between(0, 3)) {  // a bool key padding mask, a float attn mask [L, S], a per-head one, or none
    case 0:
      for (int64_t i = 0; i < d.B * d.S; ++i) d.bool_mask.push_back(between(0, 3) == 0);
      o.key_padding_mask = {mha::MaskType::kBool, d.bool_mask.data(), kpm_shape};
      break;
    case 1:
    case 2: {
      const bool per_head = between(0, 1);
      const int64_t n = (per_head ? d.B * r.num_heads : 1) * d.L * d.S;
      for (int64_t i = 0; i < n; ++i) {
        const float x = between(0, 5) == 0 ? -INFINITY : static_cast<float>(between(-8, 8)) / 4.0f;
        d.float_mask32.push_back(x);
        d.float_mask.push_back(x);
      }
      const mha::Shape shape = !per_head ? mha::Shape{d.L, d.S}
                               : d.batched ? mha::Shape{d.B * r.num_heads, d.L, d.S}
                                           : mha::Shape{r.num_heads, d.L, d.S};
      o.attn_mask = {mha::MaskType::kFloat, d.float_mask.data(), shape};
      break;
    }
    default:
      break;
  }
  return d;
}

mha::Shape shape(const Draw& d, int64_t len, int64_t features) {
  return d.batched ? mha::Shape{d.B, len, features} : mha::Shape{len, features};
}

// The relative difference of got and want, worst element: |got - want| / (1 + |want|).
double worst(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double e = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(want[i])) return INFINITY;
    e = std::max(e, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  }
  return e;
}

oracle::Parameters oracle_parameters(const mha::Float64Parameters& p) {
  return {p.q_weight, p.k_weight, p.v_weight, p.out_weight, p.q_bias, p.k_bias, p.v_bias, p.out_bias, {}, {}, {}};
}

// The layer with random weights (state dict entries drawn at `seed`).
mha::Float64Attention layer_for(const Draw& d, uint32_t seed) {
  mha::Float64Attention layer(d.config);
  std::mt19937 rng(seed);
  std::vector<std::vector<double>> storage;
  mha::Float64StateDict sd;
  for (const auto& [key, s] : mha::state_dict_layout(layer.config())) {
    storage.push_back(uniform(rng, mha::element_count(s), 0.5));
    sd[key] = {storage.back().data(), mha::element_count(s)};
  }
  layer.load_state_dict(sd);
  return layer;
}

constexpr double kBound = 1e-12;

TEST(Float64Attention, RandomConfigurationsAgreeWithTheOracle) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Draw d = draw(seed);
    const mha::Float64Attention layer = layer_for(d, seed + 100000);
    const mha::ResolvedConfig& c = layer.config();
    mha::Float64Call call;
    call.query = {d.query.data(), shape(d, d.L, c.embed_dim)};
    if (d.cross) {
      call.key = {d.key.data(), shape(d, d.S, c.kdim)};
      call.value = {d.value.data(), shape(d, d.S, c.vdim)};
    }
    call.options = d.options;
    call.options.grad = true;
    std::unique_ptr<mha::Float64SavedForward> saved;
    const mha::Float64Result got = layer.forward_for_training(call, saved);
    ASSERT_TRUE(saved);

    // The oracle reads float masks as float32: the same values.
    mha::ForwardOptions o = d.options;
    if (o.attn_mask.present()) o.attn_mask.data = d.float_mask32.data();
    const bool per_head = o.attn_mask.present() && o.attn_mask.shape.size() == 3;
    const oracle::Inputs in{d.query, d.key, d.value};
    const oracle::Parameters p = oracle_parameters(layer.parameters());
    const oracle::Result want = oracle::forward(c, p, d.B, d.L, d.S, in, o, per_head);
    EXPECT_LT(worst(got.output, want.output), kBound) << "output";
    std::vector<double> weights = want.weights;
    if (d.options.average_weights) {
      weights.assign(static_cast<size_t>(d.B * d.L * d.S), 0.0);
      for (int64_t b = 0; b < d.B; ++b)
        for (int64_t h = 0; h < c.num_heads; ++h)
          for (int64_t k = 0; k < d.L * d.S; ++k) weights[b * d.L * d.S + k] += want.weights[(b * c.num_heads + h) * d.L * d.S + k] / c.num_heads;
    }
    EXPECT_LT(worst(got.weights, weights), kBound) << "weights";

    const mha::Float64Gradients g = layer.backward(*saved, d.d_out.data());
    const oracle::Gradients wg = oracle::backward(c, p, d.B, d.L, d.S, in, o, per_head, d.d_out.data());
    EXPECT_LT(worst(g.query, wg.query), kBound) << "d query";
    EXPECT_LT(worst(g.key, wg.key), kBound) << "d key";
    EXPECT_LT(worst(g.value, wg.value), kBound) << "d value";
    EXPECT_LT(worst(g.params.q_weight, wg.params.q_weight), kBound) << "d q_weight";
    EXPECT_LT(worst(g.params.k_weight, wg.params.k_weight), kBound) << "d k_weight";
    EXPECT_LT(worst(g.params.v_weight, wg.params.v_weight), kBound) << "d v_weight";
    EXPECT_LT(worst(g.params.out_weight, wg.params.out_weight), kBound) << "d out_weight";
    EXPECT_LT(worst(g.params.q_bias, wg.params.q_bias), kBound) << "d q_bias";
    EXPECT_LT(worst(g.params.k_bias, wg.params.k_bias), kBound) << "d k_bias";
    EXPECT_LT(worst(g.params.v_bias, wg.params.v_bias), kBound) << "d v_bias";
    EXPECT_LT(worst(g.params.out_bias, wg.params.out_bias), kBound) << "d out_bias";
    if (HasFailure()) return;
  }
}

// What a float64 layer does not compute is refused by name, when the layer is made.
TEST(Float64Attention, RefusesTheFloat32LayersVariantsByName) {
  const auto refusal = [](void (*set)(mha::AttentionConfig&)) -> std::string {
    mha::AttentionConfig c;
    c.embed_dim = 8;
    c.num_heads = 2;
    c.dtype = "float64";
    set(c);
    try {
      mha::Float64Attention layer(c);
    } catch (const mha::ArgumentError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.rotary.dim = 4; }).rfind("rotary: not with dtype 'float64'", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.sliding_window = 2; }).rfind("slidingWindow:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.alibi = true; }).rfind("alibi:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.softcap = 3.0f; }).rfind("softcap:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.sinks = true; }).rfind("sinks:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.gate = true; }).rfind("gate:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.dropout = 0.1f; }).rfind("dropout:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.weight_dtype = "int8"; }).rfind("weightDtype:", 0), 0u);
  EXPECT_EQ(refusal([](mha::AttentionConfig& c) { c.dtype = "float16"; }),
            "dtype must be 'float32' or 'float64', got 'float16'");
}

}  // namespace
