// The KV cache: a causal prefill and one-token steps through a cache give the full causal
// forward pass over the whole text, with every variant and on a thread pool; cross caches equal
// cross-attention; errors leave the cache as it was; float16 round-trips exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "mha/cache/kv_cache.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"  // (forward_for_training's result holds one)
#include "random_vector.hpp"

namespace {

using mha::AttentionConfig;
using mha::CacheDtype;
using mha::ForwardOptions;
using mha::MultiheadAttention;
using mha::TensorRef;

std::unique_ptr<MultiheadAttention> make_layer(const AttentionConfig& config, unsigned seed) {
  auto layer = std::make_unique<MultiheadAttention>(config);
  std::vector<std::vector<float>> storage;
  mha::StateDict sd;
  for (const auto& [key, shape] : mha::state_dict_layout(layer->config())) {
    storage.push_back(random_vector(mha::element_count(shape), seed++));
    for (float& x : storage.back()) x *= 0.5f;
    sd[key] = {storage.back().data(), static_cast<int64_t>(storage.back().size())};
  }
  layer->load_state_dict(sd);
  return layer;
}

void expect_near(const float* got, const float* want, size_t n, double tolerance, const char* what) {
  for (size_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0 + std::abs(want[i]))) << what << "[" << i << "]";
}

struct CacheCase {
  const char* name;
  AttentionConfig config;
  std::vector<int64_t> chunks;  // tokens per call: prefill, then steps
  CacheDtype dtype = CacheDtype::kF32;
  int threads = 1;
};

// Row `row` of [B, L, D] data.
const float* row_of(const std::vector<float>& x, int64_t b, int64_t L, int64_t i, int64_t D) {
  return x.data() + (b * L + i) * D;
}

void check_equivalence(const CacheCase& t) {
  SCOPED_TRACE(t.name);
  auto layer = make_layer(t.config, 3);
  if (t.threads > 1) layer->set_thread_pool(std::make_shared<mha::ThreadPool>(t.threads));
  const auto& c = layer->config();
  const int64_t B = 2, E = c.embed_dim, H = c.num_heads;
  int64_t L = 0;
  for (int64_t n : t.chunks) L += n;
  const auto x = random_vector(B * L * E, 9);
  ForwardOptions full_options;
  full_options.causal = true;
  full_options.need_weights = true;
  full_options.average_weights = false;
  const auto full = layer->forward({x.data(), {B, L, E}}, {}, {}, full_options);

  auto cache = layer->create_cache(B, L + 2, t.dtype);
  const double tolerance = t.dtype == CacheDtype::kF16 ? 2e-2 : 1e-5;
  int64_t done = 0;
  for (int64_t n : t.chunks) {
    std::vector<float> chunk(static_cast<size_t>(B * n * E));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < n; ++i) std::copy_n(row_of(x, b, L, done + i, E), E, chunk.data() + (b * n + i) * E);
    ForwardOptions o;
    o.cache = cache.get();
    o.need_weights = true;
    o.average_weights = false;
    const auto r = layer->forward({chunk.data(), {B, n, E}}, {}, {}, o);
    EXPECT_EQ(cache->length(), done + n);
    const int64_t S = done + n, D = c.output_dim;
    ASSERT_EQ(r.weights_shape, (mha::Shape{B, H, n, S}));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < n; ++i) {
        expect_near(r.output.data() + (b * n + i) * D, full.output.data() + (b * L + done + i) * D, D, tolerance, "output");
        for (int64_t h = 0; h < H; ++h)
          expect_near(r.weights.data() + ((b * H + h) * n + i) * S, full.weights.data() + ((b * H + h) * L + done + i) * L,
                      S, tolerance, "weights");
      }
    done += n;
  }
}

AttentionConfig config(int64_t E, int64_t H, int64_t Hkv = 0) {
  AttentionConfig c;
  c.embed_dim = E;
  c.num_heads = H;
  c.num_kv_heads = Hkv;
  return c;
}

TEST(KvCache, PrefillThenStepsEqualTheFullCausalForward) {
  AttentionConfig gqa = config(32, 4, 2), mqa = config(16, 4, 1), rope = config(32, 4, 2);
  rope.rotary.dim = 8;
  AttentionConfig mistral = rope;
  mistral.sliding_window = 3;
  AttentionConfig everything = config(24, 6, 3);
  everything.head_dim = 6;
  everything.value_head_dim = 5;
  everything.output_dim = 7;
  everything.rotary = {4, 500.0, true};
  everything.alibi = true;
  everything.softcap = 3.0f;
  everything.sinks = true;
  everything.sliding_window = 5;
  const std::vector<CacheCase> cases = {
      {"one token at a time", config(16, 2), {1, 1, 1, 1, 1, 1, 1}},
      {"prefill then steps", config(16, 2), {5, 1, 1, 1}},
      {"chunked prefill", config(16, 2), {4, 3, 1, 2, 1}},
      {"GQA", gqa, {6, 1, 1, 2}},
      {"MQA", mqa, {3, 1, 1}},
      {"rotary + GQA (Llama)", rope, {5, 1, 1, 1}},
      {"rotary + GQA + window (Mistral)", mistral, {6, 1, 1, 1, 2}},
      {"every variant", everything, {5, 2, 1, 1}},
      {"every variant, 2 threads", everything, {5, 2, 1, 1}, CacheDtype::kF32, 2},
      {"long prefill over tile edges, 2 threads", gqa, {150, 1, 1, 3}, CacheDtype::kF32, 2},
      {"float16", rope, {5, 1, 1}, CacheDtype::kF16},
  };
  for (const auto& t : cases) {
    check_equivalence(t);
    if (HasFatalFailure()) return;
  }
}

TEST(KvCache, CrossCacheEqualsCrossAttention) {
  AttentionConfig cfg = config(16, 4, 2);
  cfg.kdim = 6;
  cfg.vdim = 10;
  cfg.rotary.dim = 4;
  auto layer = make_layer(cfg, 5);
  const int64_t B = 2, L = 3, S = 7;
  const auto q = random_vector(B * L * 16, 1), k = random_vector(B * S * 6, 2), v = random_vector(B * S * 10, 3);
  ForwardOptions plain;
  plain.need_weights = true;
  const auto want = layer->forward({q.data(), {B, L, 16}}, {k.data(), {B, S, 6}}, {v.data(), {B, S, 10}}, plain);
  auto cache = layer->create_cache(B, 8, CacheDtype::kF32);
  layer->set_key_value(*cache, {k.data(), {B, S, 6}}, {v.data(), {B, S, 10}});
  EXPECT_EQ(cache->length(), S);
  ForwardOptions o = plain;
  o.cache = cache.get();
  for (int call = 0; call < 2; ++call) {  // reading never appends
    const auto got = layer->forward({q.data(), {B, L, 16}}, {}, {}, o);
    expect_near(got.output.data(), want.output.data(), want.output.size(), 1e-5, "output");
    expect_near(got.weights.data(), want.weights.data(), want.weights.size(), 1e-5, "weights");
    EXPECT_EQ(cache->length(), S);
  }
}

TEST(KvCache, ErrorsLeaveTheCacheAsItWas) {
  auto layer = make_layer(config(8, 2), 7), other = make_layer(config(8, 2), 8);
  auto cache = layer->create_cache(1, 4, CacheDtype::kF32);
  const auto x = random_vector(5 * 8, 4);
  ForwardOptions o;
  o.cache = cache.get();
  layer->forward({x.data(), {1, 3, 8}}, {}, {}, o);
  try {
    layer->forward({x.data(), {1, 2, 8}}, {}, {}, o);
    FAIL() << "appending past the capacity";
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), mha::ErrorKind::kRange);
    EXPECT_STREQ(e.what(), "cache: appending 2 tokens to the 3 it holds would exceed its capacity of 4 tokens");
  }
  EXPECT_EQ(cache->length(), 3);
  EXPECT_THROW(other->forward({x.data(), {1, 1, 8}}, {}, {}, o), mha::ArgumentError);  // another layer's cache
  EXPECT_THROW(layer->forward({x.data(), {2, 1, 8}}, {}, {}, o), mha::ArgumentError);  // batch 2 into a batch-1 cache
  EXPECT_THROW(layer->set_key_value(*cache, {x.data(), {1, 2, 8}}, {x.data(), {1, 2, 8}}), mha::ArgumentError);
  EXPECT_EQ(cache->length(), 3);
  EXPECT_EQ(cache->kind(), mha::CacheKind::kSelf);
  cache->truncate(1);
  EXPECT_EQ(cache->length(), 1);
  EXPECT_THROW(cache->truncate(2), mha::ArgumentError);
  cache->reset();
  EXPECT_EQ(cache->length(), 0);
  EXPECT_EQ(cache->kind(), mha::CacheKind::kNone);
}

// The rules between a cache and the call's options are the plan's (forward_plan.cpp), so every
// backend that asks it (the wasm layer, the WebGPU planner) refuses them alike; and the plan says
// how many keys each call projects.
TEST(KvCache, ThePlanRefusesGradAndAnExplicitNonCausalCall) {
  auto layer = make_layer(config(8, 2), 9);
  auto cache = layer->create_cache(1, 8, CacheDtype::kF32);
  const auto x = random_vector(3 * 8, 5);
  ForwardOptions o;
  o.cache = cache.get();
  o.causal_given = true;  // causal: false, said explicitly
  try {
    mha::plan_forward(layer->config(), {x.data(), {1, 3, 8}}, {}, {}, o);
    FAIL() << "causal: false with a self cache";
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), mha::ErrorKind::kType);
    EXPECT_STREQ(e.what(), "causal: a self-attention cache implies causal attention (each new token sees the cached "
                           "tokens and itself, never later ones); omit causal or pass true");
  }
  o.causal_given = false;
  o.grad = true;
  try {
    layer->forward_for_training({x.data(), {1, 3, 8}}, {}, {}, o);
    FAIL() << "grad with a cache";
  } catch (const mha::ArgumentError& e) {
    EXPECT_STREQ(e.what(), "grad: a forward pass with a cache cannot be differentiated (training runs whole sequences: "
                           "pass the whole sequence without a cache)");
  }
  o.grad = false;
  EXPECT_EQ(cache->length(), 0);
  const mha::ForwardPlan p = mha::plan_forward(layer->config(), {x.data(), {1, 3, 8}}, {}, {}, o);
  EXPECT_EQ(p.projected_keys, 3);
  EXPECT_EQ(p.key_len, 3);
  EXPECT_FALSE(p.cross_cache);
  ForwardOptions none;
  const mha::ForwardPlan q = mha::plan_forward(layer->config(), {x.data(), {1, 3, 8}}, {}, {}, none);
  EXPECT_EQ(q.projected_keys, 3);
}

TEST(Float16, EveryHalfRoundTripsAndFloatsRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = mha::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(mha::half_to_float(mha::float_to_half(f))));
      continue;
    }
    ASSERT_EQ(mha::float_to_half(f), h) << "half " << h;
  }
  EXPECT_EQ(mha::float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(mha::float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(mha::float_to_half(65520.0f), 0x7c00);        // halfway to 65536: rounds to even = Inf
  EXPECT_EQ(mha::float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie: even mantissa
  EXPECT_EQ(mha::float_to_half(1.0f + 3.0f / 2048), 0x3c02);  // tie: up to even
  EXPECT_EQ(mha::float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: to even 0
  EXPECT_EQ(mha::float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(mha::float_to_half(-0.0f), 0x8000);
}

}  // namespace
