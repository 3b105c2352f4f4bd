// The layer with quantized projections: every path (prefill, decode with a KV cache, backward's
// input gradients) equals the float32 layer holding the dequantized weights; loadQuantized gives
// the same layer as quantize-on-load; stateDict returns the dequantized weights; errors name the
// argument and the expected shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "mha/plan/errors.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"
#include "random_vector.hpp"

namespace {

using mha::AttentionConfig;
using mha::MultiheadAttention;
using mha::TensorRef;
using mha::WeightDtype;

struct OwnedStateDict {
  std::vector<std::pair<std::string, std::vector<float>>> tensors;
  mha::StateDict view() const {
    mha::StateDict sd;
    for (const auto& [key, t] : tensors) sd[key] = {t.data(), static_cast<int64_t>(t.size())};
    return sd;
  }
};

OwnedStateDict random_state(const MultiheadAttention& layer, unsigned seed) {
  OwnedStateDict s;
  for (const auto& [key, shape] : mha::state_dict_layout(layer.config())) {
    auto t = random_vector(static_cast<size_t>(mha::element_count(shape)), seed++);
    for (float& x : t) x *= 0.3f;
    s.tensors.push_back({key, std::move(t)});
  }
  return s;
}

OwnedStateDict float_state(const MultiheadAttention& layer) {
  OwnedStateDict s;
  s.tensors = mha::state_dict_from_parameters(layer.config(), layer.float_parameters());
  return s;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

// Largest |got - want| over the largest |want|.
double relative_difference(const std::vector<float>& got, const std::vector<float>& want) {
  double d = 0;
  for (size_t i = 0; i < got.size(); ++i) d = std::max(d, static_cast<double>(std::abs(got[i] - want[i])));
  return d / std::max(max_abs(want), 1e-30);
}

struct LayerCase {
  const char* name;
  AttentionConfig config;
};

std::vector<LayerCase> layer_cases() {
  std::vector<LayerCase> cases;
  AttentionConfig plain;
  plain.embed_dim = 64;
  plain.num_heads = 4;
  cases.push_back({"plain", plain});
  AttentionConfig gqa;  // GQA, rotary, sinks, 45 inputs (not a multiple of the q4 block), no bias
  gqa.embed_dim = 45;
  gqa.num_heads = 6;
  gqa.num_kv_heads = 2;
  gqa.head_dim = 16;
  gqa.rotary.dim = 8;
  gqa.sinks = true;
  gqa.bias = false;
  cases.push_back({"gqa_rotary_sinks", gqa});
  AttentionConfig cross;
  cross.embed_dim = 40;
  cross.num_heads = 5;
  cross.kdim = 77;
  cross.vdim = 33;
  cross.output_dim = 50;
  cases.push_back({"cross", cross});
  return cases;
}

std::unique_ptr<MultiheadAttention> make(AttentionConfig config, WeightDtype dtype) {
  config.weight_dtype = mha::weight_dtype_name(dtype);
  return std::make_unique<MultiheadAttention>(config);
}

TEST(QuantLayer, ConfigChecksTheDtype) {
  AttentionConfig c;
  c.embed_dim = 8;
  c.num_heads = 2;
  c.weight_dtype = "int4";
  try {
    MultiheadAttention layer(c);
    FAIL() << "no error";
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), mha::ErrorKind::kType);
    EXPECT_STREQ(e.what(), "weightDtype must be one of 'f32', 'f16', 'int8', 'q4', got 'int4'");
  }
}

TEST(QuantLayer, EveryPathEqualsTheFloatLayerWithDequantizedWeights) {
  for (const LayerCase& lc : layer_cases()) {
    for (WeightDtype dtype : {WeightDtype::kF16, WeightDtype::kInt8, WeightDtype::kQ4}) {
      SCOPED_TRACE(std::string(lc.name) + " " + mha::weight_dtype_name(dtype));
      auto quantized = make(lc.config, dtype);
      const OwnedStateDict original = random_state(*quantized, 5);
      quantized->load_state_dict(original.view());
      ASSERT_TRUE(quantized->quantized());
      auto reference = make(lc.config, WeightDtype::kF32);
      reference->load_state_dict(float_state(*quantized).view());
      auto full = make(lc.config, WeightDtype::kF32);
      full->load_state_dict(original.view());
      // The layer holds fewer bytes than the float32 one.
      EXPECT_LT(quantized->weight_bytes(), full->weight_bytes());

      const mha::ResolvedConfig& c = quantized->config();
      const bool self = c.kdim == c.embed_dim && c.vdim == c.embed_dim;
      const int64_t B = 2, L = 37, S = self ? L : 29;
      const auto q = random_vector(static_cast<size_t>(B * L * c.embed_dim), 6);
      const auto k = random_vector(static_cast<size_t>(B * S * c.kdim), 7), v = random_vector(static_cast<size_t>(B * S * c.vdim), 8);
      const TensorRef query{q.data(), {B, L, c.embed_dim}};
      const TensorRef key = self ? TensorRef{} : TensorRef{k.data(), {B, S, c.kdim}};
      const TensorRef value = self ? TensorRef{} : TensorRef{v.data(), {B, S, c.vdim}};
      mha::ForwardOptions options;
      options.causal = self;
      const auto got = quantized->forward(query, key, value, options).output;
      const auto want = reference->forward(query, key, value, options).output;
      EXPECT_LT(relative_difference(got, want), 1e-5) << "prefill";
      // Against the float32 weights it came from: the format's own error (documented figures).
      const double error = relative_difference(got, full->forward(query, key, value, options).output);
      std::printf("[ quantized ] %s %s: largest difference from float32 / largest output %.2e\n", lc.name,
                  mha::weight_dtype_name(dtype), error);
      EXPECT_LT(error, dtype == WeightDtype::kF16 ? 2e-3 : dtype == WeightDtype::kInt8 ? 3e-2 : 0.15);

      // Decoding through a cache: one token at a time (the quantized GEMV) against the float layer.
      if (self) {
        auto cache_q = quantized->create_cache(1, L, mha::CacheDtype::kF32);
        auto cache_f = reference->create_cache(1, L, mha::CacheDtype::kF32);
        for (int64_t t = 0; t < 6; ++t) {
          const TensorRef step{q.data() + t * c.embed_dim, {1, 1, c.embed_dim}};
          mha::ForwardOptions o;
          o.cache = cache_q.get();
          const auto a = quantized->forward(step, {}, {}, o).output;
          o.cache = cache_f.get();
          const auto b = reference->forward(step, {}, {}, o).output;
          EXPECT_LT(relative_difference(a, b), dtype == WeightDtype::kF16 ? 1e-5 : 2e-4) << "decode step " << t;
        }
      }

      // Backward: the inputs' gradients through the dequantized weights; no parameter gradients.
      mha::ForwardOptions training = options;
      auto tq = quantized->forward_for_training(query, key, value, training);
      auto tf = reference->forward_for_training(query, key, value, training);
      const auto d_out = random_vector(tq.result.output.size(), 9);
      const mha::Gradients gq = quantized->backward(*tq.saved, d_out.data());
      const mha::Gradients gf = reference->backward(*tf.saved, d_out.data());
      EXPECT_LT(relative_difference(gq.query, gf.query), 1e-4);
      if (!self) {
        EXPECT_LT(relative_difference(gq.key, gf.key), 1e-4);
        EXPECT_LT(relative_difference(gq.value, gf.value), 1e-4);
      }
      EXPECT_TRUE(gq.params.q_weight.empty() && gq.params.out_weight.empty() && gq.params.q_bias.empty() &&
                  gq.params.sinks.empty());
    }
  }
}

TEST(QuantLayer, LoadQuantizedEqualsQuantizeOnLoad) {
  for (const LayerCase& lc : layer_cases()) {
    for (WeightDtype dtype : {WeightDtype::kF16, WeightDtype::kInt8, WeightDtype::kQ4}) {
      SCOPED_TRACE(std::string(lc.name) + " " + mha::weight_dtype_name(dtype));
      auto on_load = make(lc.config, dtype);
      const OwnedStateDict original = random_state(*on_load, 15);
      on_load->load_state_dict(original.view());
      // The same weights quantized outside and handed over projection by projection; the rest
      // (biases, sinks) through loadStateDict.
      auto imported = make(lc.config, WeightDtype::kF32);
      mha::StateDict rest;
      const mha::ResolvedConfig& c = imported->config();
      for (const auto& [key, t] : original.tensors) {
        const auto layout = mha::state_dict_layout(c);
        const auto shape = std::find_if(layout.begin(), layout.end(), [&](const auto& e) { return e.first == key; })->second;
        if (shape.size() != 2) {
          rest[key] = {t.data(), static_cast<int64_t>(t.size())};
          continue;
        }
        const auto m = mha::kernels::quantize_matrix(dtype, t.data(), shape[0], shape[1]);
        imported->load_quantized(key, dtype, m.data.data(), static_cast<int64_t>(m.data.size()), m.scales.data(),
                                 static_cast<int64_t>(m.scales.size()), nullptr, 0);
      }
      EXPECT_EQ(imported->has_weights(), !c.bias && !c.sinks);
      if (!imported->has_weights()) imported->load_state_dict(rest);
      ASSERT_TRUE(imported->has_weights());
      // Same stored weights: the same dequantized state dict, bit for bit.
      const auto a = float_state(*on_load), b = float_state(*imported);
      ASSERT_EQ(a.tensors.size(), b.tensors.size());
      for (size_t i = 0; i < a.tensors.size(); ++i) {
        EXPECT_EQ(a.tensors[i].first, b.tensors[i].first);
        EXPECT_EQ(a.tensors[i].second, b.tensors[i].second) << a.tensors[i].first;
      }
      EXPECT_EQ(on_load->weight_bytes(), imported->weight_bytes());
    }
  }
}

TEST(QuantLayer, LoadQuantizedReplacesOneProjection) {
  AttentionConfig c;
  c.embed_dim = 32;
  c.num_heads = 2;
  auto layer = make(c, WeightDtype::kF32);
  const OwnedStateDict original = random_state(*layer, 25);
  layer->load_state_dict(original.view());
  ASSERT_FALSE(layer->quantized());
  const std::vector<float> out_w = random_vector(32 * 32, 26);
  const auto m = mha::kernels::quantize_matrix(WeightDtype::kQ4, out_w.data(), 32, 32);
  layer->load_quantized("out_proj.weight", WeightDtype::kQ4, m.data.data(), static_cast<int64_t>(m.data.size()),
                        m.scales.data(), static_cast<int64_t>(m.scales.size()), nullptr, 0);
  EXPECT_TRUE(layer->quantized());
  const auto state = float_state(*layer);
  EXPECT_EQ(state.tensors[0].second, original.tensors[0].second);  // in_proj_weight untouched
  EXPECT_EQ(state.tensors[2].first, "out_proj.weight");
  EXPECT_EQ(state.tensors[2].second, mha::kernels::dequantize_matrix(m));
}

TEST(QuantLayer, LoadQuantizedErrorsNameTheArgumentAndShape) {
  AttentionConfig c;
  c.embed_dim = 40;
  c.num_heads = 2;
  c.kdim = 70;
  auto layer = make(c, WeightDtype::kQ4);
  std::vector<uint8_t> bytes(4096);
  std::vector<float> scales(512);
  const auto message = [&](const std::string& name, WeightDtype dtype, int64_t n, int64_t s, int64_t z) {
    try {
      layer->load_quantized(name, dtype, bytes.data(), n, scales.data(), s, bytes.data(), z);
    } catch (const mha::ArgumentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("in_proj_weight", WeightDtype::kQ4, 1, 1, 0),
            "loadQuantized: name must be one of 'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'out_proj.weight', "
            "got 'in_proj_weight'");
  EXPECT_EQ(message("k_proj_weight", WeightDtype::kQ4, 40 * 3 * 16 + 1, 120, 0),
            "loadQuantized('k_proj_weight', 'q4'): data: expected 1920 bytes (data uint8 [40, 3, 16], scales float32 "
            "[40, 3], zeroPoints uint8 [40, 2] or none), got 1921");
  EXPECT_EQ(message("k_proj_weight", WeightDtype::kQ4, 1920, 40, 0),
            "loadQuantized('k_proj_weight', 'q4'): scales: expected 120 floats (data uint8 [40, 3, 16], scales float32 "
            "[40, 3], zeroPoints uint8 [40, 2] or none), got 40");
  EXPECT_EQ(message("k_proj_weight", WeightDtype::kQ4, 1920, 120, 3),
            "loadQuantized('k_proj_weight', 'q4'): zeroPoints: expected 80 bytes or none (data uint8 [40, 3, 16], "
            "scales float32 [40, 3], zeroPoints uint8 [40, 2] or none), got 3");
  EXPECT_EQ(message("q_proj_weight", WeightDtype::kInt8, 1600, 4, 0),
            "loadQuantized('q_proj_weight', 'int8'): scales: expected 40 floats (data int8 [40, 40], scales float32 "
            "[40]), got 4");
  EXPECT_EQ(message("q_proj_weight", WeightDtype::kF32, 1600, 0, 0),
            "loadQuantized: dtype must be 'f16', 'int8' or 'q4' (float32 weights go through loadStateDict), got 'f32'");
  EXPECT_FALSE(layer->has_weights());
}

}  // namespace

namespace {

TEST(QuantLayer, MemoryBudgetCountsQuantizedBytes) {
  mha::AttentionConfig c;
  c.embed_dim = 64;
  c.num_heads = 4;
  c.kdim = 45;  // q4: 2 blocks per row, the last one padded
  for (const char* dtype : {"int8", "q4", "f16"}) {
    c.weight_dtype = dtype;
    const auto items = mha::weight_memory(mha::resolve(c));
    ASSERT_EQ(items[1].name, std::string("k_proj_weight (") + dtype + ")");
    const uint64_t want = std::string(dtype) == "int8" ? 64 * 45 + 64 * 4 : std::string(dtype) == "q4" ? 64 * 2 * 16 + 64 * 2 * 4 : 64 * 45 * 2;
    EXPECT_EQ(items[1].bytes, want) << dtype;
    EXPECT_EQ(items[3].name, "in_proj_bias");  // biases stay float32
    EXPECT_EQ(items[3].bytes, 3u * 64 * 4);
  }
}

}  // namespace
