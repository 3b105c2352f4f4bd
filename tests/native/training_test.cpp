// The layer-side pieces of the backward pass: the transposed GEMM operands, rotary's inverse,
// the state dict of gradients, and the layer's backward as a whole (finite differences of its own
// forward, thread counts, determinism, errors). Against PyTorch: parity_test.cpp's gradient
// fixtures; against the float64 oracle: the oracle tests.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "random_vector.hpp"
#include "mha/plan/errors.hpp"
#include "mha/kernels/linear.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/rotary.hpp"
#include "mha/layer/saved_forward.hpp"

namespace {

std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

TEST(PackedLinear, FromTransposedEqualsThePackedTranspose) {
  for (int64_t rows : {1, 5, 70}) {
    for (int64_t in : {1, 9, 40}) {
      for (int64_t out : {1, 17, 33}) {
        const auto x = random_vector(rows * in, 1), w = random_vector(out * in, 2);
        std::vector<float> want(rows * out), got(rows * out);
        mha::kernels::linear_reference({x.data(), w.data(), nullptr, want.data(), rows, in, out});
        const auto w_t = transposed(w, out, in);
        mha::kernels::PackedLinear::from_transposed(w_t.data(), out, in).apply(x.data(), got.data(), 0, rows);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i])));
      }
    }
  }
}

TEST(PackedLinear, FromTransposedZeroesTheFlaggedInputs) {
  const int64_t rows = 3, in = 4, out = 5;
  auto w = random_vector(out * in, 3);
  std::vector<float> x(rows * in, 1.0f);
  std::vector<float> w_t = transposed(w, out, in);
  // Input 2's weights are NaN, as a masked key's row of X would be; flagged, they pack as zeros.
  for (int64_t o = 0; o < out; ++o) w_t[2 * out + o] = std::nanf("");
  const std::vector<uint8_t> zero{0, 0, 1, 0};
  std::vector<float> y(rows * out);
  mha::kernels::PackedLinear::from_transposed(w_t.data(), out, in, zero.data()).apply(x.data(), y.data(), 0, rows);
  for (int64_t o = 0; o < out; ++o) EXPECT_NEAR(y[o], w[o * in + 0] + w[o * in + 1] + w[o * in + 3], 1e-5);
}

TEST(Rotary, InverseUndoesTheRotation) {
  for (bool interleaved : {false, true}) {
    const mha::RotaryConfig rotary{6, 10000.0, interleaved};
    const auto original = random_vector(3 * 2 * 8, 4);
    auto x = original;
    const int32_t positions[3] = {5, 0, 1000};
    mha::apply_rotary(rotary, x.data(), 3, 16, 2, 8, positions, 0);
    EXPECT_NE(x, original);
    mha::apply_rotary(rotary, x.data(), 3, 16, 2, 8, positions, 0, true);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], original[i], 1e-5);
  }
}

TEST(Parameters, StateDictFromParametersRoundTrips) {
  for (bool fused : {true, false}) {
    mha::AttentionConfig config;
    config.embed_dim = 8;
    config.num_heads = 2;
    if (!fused) config.num_kv_heads = 1;
    config.sinks = true;
    const mha::ResolvedConfig c = mha::resolve(config);
    std::vector<std::vector<float>> storage;
    mha::StateDict sd;
    unsigned seed = 10;
    for (const auto& [key, shape] : mha::state_dict_layout(c)) {
      storage.push_back(random_vector(mha::element_count(shape), seed++));
      sd[key] = {storage.back().data(), static_cast<int64_t>(storage.back().size())};
    }
    const auto entries = mha::state_dict_from_parameters(c, mha::parameters_from_state_dict(c, sd));
    const auto layout = mha::state_dict_layout(c);
    ASSERT_EQ(entries.size(), layout.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ(entries[i].first, layout[i].first);
      EXPECT_EQ(entries[i].second, storage[i]) << entries[i].first;
    }
  }
}

// A small layer with every variant that has a gradient path of its own.
struct TestLayer {
  std::unique_ptr<mha::MultiheadAttention> layer;
  std::vector<std::vector<float>> weights;
};

TestLayer make_layer(mha::AttentionConfig config, unsigned seed) {
  TestLayer s;
  s.layer = std::make_unique<mha::MultiheadAttention>(config);
  mha::StateDict sd;
  for (const auto& [key, shape] : mha::state_dict_layout(s.layer->config())) {
    s.weights.push_back(random_vector(mha::element_count(shape), seed++));
    for (float& w : s.weights.back()) w *= 0.5f;
    sd[key] = {s.weights.back().data(), static_cast<int64_t>(s.weights.back().size())};
  }
  s.layer->load_state_dict(sd);
  return s;
}

mha::AttentionConfig variant_config() {
  mha::AttentionConfig c;
  c.embed_dim = 12;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 4;
  c.value_head_dim = 3;
  c.output_dim = 7;
  c.rotary = {4, 100.0, false};
  c.softcap = 3.0f;
  c.alibi = true;
  c.sinks = true;
  return c;
}

double loss_of(const std::vector<float>& output, const std::vector<float>& g) {
  double loss = 0;
  for (size_t i = 0; i < output.size(); ++i) loss += static_cast<double>(output[i]) * g[i];
  return loss;
}

// Central differences of the layer's own float32 forward: a check of the stages' wiring (the
// kernels' formulas are checked tightly against the float64 oracle and PyTorch elsewhere).
TEST(LayerBackward, MatchesFiniteDifferencesOfItsForward) {
  TestLayer s = make_layer(variant_config(), 20);
  const int64_t B = 2, L = 5;
  auto x = random_vector(B * L * 12, 7);
  mha::ForwardOptions o;
  o.causal = true;
  const auto g = random_vector(B * L * 7, 8);
  auto t = s.layer->forward_for_training({x.data(), {B, L, 12}}, {}, {}, o);
  const mha::Gradients grads = s.layer->backward(*t.saved, g.data());
  ASSERT_EQ(grads.query.size(), x.size());
  EXPECT_TRUE(grads.key.empty());
  const float eps = 1e-2f;
  for (size_t i = 0; i < x.size(); i += 7) {
    const float keep = x[i];
    x[i] = keep + eps;
    const double up = loss_of(s.layer->forward({x.data(), {B, L, 12}}, {}, {}, o).output, g);
    x[i] = keep - eps;
    const double down = loss_of(s.layer->forward({x.data(), {B, L, 12}}, {}, {}, o).output, g);
    x[i] = keep;
    EXPECT_NEAR(grads.query[i], (up - down) / (2 * eps), 2e-3 * (1 + std::abs(grads.query[i]))) << "query[" << i << "]";
  }
  // A parameter of each kind through a reload of the perturbed weights.
  const auto layout = mha::state_dict_layout(s.layer->config());
  const auto named = mha::state_dict_from_parameters(s.layer->config(), grads.params);
  for (size_t k = 0; k < layout.size(); ++k) {
    auto& w = s.weights[k];
    for (size_t i = 0; i < w.size(); i += std::max<size_t>(1, w.size() / 5)) {
      const auto reload = [&] {
        mha::StateDict sd;
        for (size_t j = 0; j < layout.size(); ++j) sd[layout[j].first] = {s.weights[j].data(), static_cast<int64_t>(s.weights[j].size())};
        s.layer->load_state_dict(sd);
      };
      const float keep = w[i];
      w[i] = keep + eps;
      reload();
      const double up = loss_of(s.layer->forward({x.data(), {B, L, 12}}, {}, {}, o).output, g);
      w[i] = keep - eps;
      reload();
      const double down = loss_of(s.layer->forward({x.data(), {B, L, 12}}, {}, {}, o).output, g);
      w[i] = keep;
      reload();
      const float got = named[k].second[i];
      EXPECT_NEAR(got, (up - down) / (2 * eps), 2e-3 * (1 + std::abs(got))) << layout[k].first << "[" << i << "]";
    }
  }
}

TEST(LayerBackward, CrossAttentionGivesKeyAndValueGradients) {
  mha::AttentionConfig c;
  c.embed_dim = 8;
  c.num_heads = 2;
  c.kdim = 5;
  c.vdim = 3;
  TestLayer s = make_layer(c, 30);
  auto q = random_vector(2 * 3 * 8, 1), k = random_vector(2 * 4 * 5, 2), v = random_vector(2 * 4 * 3, 3);
  const auto g = random_vector(2 * 3 * 8, 4);
  const auto loss = [&] {
    return loss_of(s.layer->forward({q.data(), {2, 3, 8}}, {k.data(), {2, 4, 5}}, {v.data(), {2, 4, 3}}).output, g);
  };
  auto t = s.layer->forward_for_training({q.data(), {2, 3, 8}}, {k.data(), {2, 4, 5}}, {v.data(), {2, 4, 3}}, {});
  const auto grads = s.layer->backward(*t.saved, g.data());
  EXPECT_EQ(grads.query_shape, (mha::Shape{2, 3, 8}));
  EXPECT_EQ(grads.key_shape, (mha::Shape{2, 4, 5}));
  EXPECT_EQ(grads.value_shape, (mha::Shape{2, 4, 3}));
  ASSERT_EQ(grads.key.size(), k.size());
  ASSERT_EQ(grads.value.size(), v.size());
  const float eps = 1e-2f;
  for (auto [input, grad] : {std::pair{&k, &grads.key}, std::pair{&v, &grads.value}}) {
    for (size_t i = 0; i < input->size(); i += 3) {
      const float keep = (*input)[i];
      (*input)[i] = keep + eps;
      const double up = loss();
      (*input)[i] = keep - eps;
      const double down = loss();
      (*input)[i] = keep;
      EXPECT_NEAR((*grad)[i], (up - down) / (2 * eps), 2e-3 * (1 + std::abs((*grad)[i]))) << i;
    }
  }
}

// In the Threads suite, which the ThreadSanitizer stage runs.
TEST(Threads, BackwardSameBitsRunToRunAndCloseAcrossThreadCounts) {
  mha::AttentionConfig c = variant_config();
  TestLayer one = make_layer(c, 40), two = make_layer(c, 40);
  two.layer->set_thread_pool(std::make_shared<mha::ThreadPool>(2));
  const int64_t B = 1, L = 300;
  const auto x = random_vector(B * L * 12, 5), g = random_vector(B * L * 7, 6);
  mha::ForwardOptions o;
  o.causal = true;
  const auto run = [&](TestLayer& s) {
    auto t = s.layer->forward_for_training({x.data(), {B, L, 12}}, {}, {}, o);
    return s.layer->backward(*t.saved, g.data());
  };
  const auto a = run(two), b = run(two), ref = run(one);
  EXPECT_EQ(a.query, b.query);
  EXPECT_EQ(a.params.q_weight, b.params.q_weight);
  EXPECT_EQ(a.params.sinks, b.params.sinks);
  for (size_t i = 0; i < ref.query.size(); ++i) ASSERT_NEAR(a.query[i], ref.query[i], 1e-4 * (1 + std::abs(ref.query[i])));
  for (size_t i = 0; i < ref.params.k_weight.size(); ++i)
    ASSERT_NEAR(a.params.k_weight[i], ref.params.k_weight[i], 1e-3 * (1 + std::abs(ref.params.k_weight[i])));
}

TEST(LayerBackward, RefusesACacheAndChangedWeights) {
  TestLayer s = make_layer(variant_config(), 50);
  const auto x = random_vector(3 * 12, 1);
  auto cache = s.layer->create_cache(1, 8, mha::CacheDtype::kF32);
  mha::ForwardOptions with_cache;
  with_cache.cache = cache.get();
  try {
    s.layer->forward_for_training({x.data(), {1, 3, 12}}, {}, {}, with_cache);
    FAIL() << "no error";
  } catch (const mha::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("with a cache cannot be differentiated"), std::string::npos) << e.what();
  }
  auto t = s.layer->forward_for_training({x.data(), {1, 3, 12}}, {}, {}, {});
  mha::StateDict sd;
  const auto layout = mha::state_dict_layout(s.layer->config());
  for (size_t j = 0; j < layout.size(); ++j) sd[layout[j].first] = {s.weights[j].data(), static_cast<int64_t>(s.weights[j].size())};
  s.layer->load_state_dict(sd);
  const auto g = random_vector(3 * 7, 2);
  try {
    s.layer->backward(*t.saved, g.data());
    FAIL() << "no error";
  } catch (const mha::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("weights changed since this forward pass"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// Keras returns its scores before dropout, PyTorch after: weights_before_dropout chooses.
TEST(LayerDropout, WeightsBeforeDropoutAreThePlainProbabilities) {
  mha::AttentionConfig c;
  c.embed_dim = 8;
  c.num_heads = 2;
  c.dropout = 0.5f;
  TestLayer s = make_layer(c, 60);
  for (int64_t L : {2, 9}) {  // a few rows (the decode kernel's size without training) and a block
    const auto x = random_vector(L * 8, 9);
    mha::ForwardOptions plain;
    plain.need_weights = true;
    plain.average_weights = false;
    mha::ForwardOptions train = plain;
    train.training = true;
    train.seed = 3;
    const auto want = s.layer->forward({x.data(), {1, L, 8}}, {}, {}, plain);
    const auto after = s.layer->forward({x.data(), {1, L, 8}}, {}, {}, train);
    train.weights_before_dropout = true;
    const auto before = s.layer->forward({x.data(), {1, L, 8}}, {}, {}, train);
    EXPECT_EQ(before.output, after.output);  // the same dropout either way
    EXPECT_NE(after.output, want.output);
    EXPECT_NE(after.weights, want.weights);
    ASSERT_EQ(before.weights.size(), want.weights.size());
    for (size_t i = 0; i < want.weights.size(); ++i) EXPECT_NEAR(before.weights[i], want.weights[i], 1e-6) << i;
    // After dropout a weight is 0 or twice the plain one (p = 0.5).
    for (size_t i = 0; i < want.weights.size(); ++i)
      EXPECT_TRUE(after.weights[i] == 0.0f || std::abs(after.weights[i] - 2 * want.weights[i]) < 1e-6) << i;
  }
}

}  // namespace
