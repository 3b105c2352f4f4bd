// Attention dropout through the layer (forward, forward_for_training, backward): off unless
// training with p > 0; the same seed repeats output and gradients bit for bit, another seed
// changes them; over many seeds the mean output approaches the plain layer's (a bound from the
// variance, derived below) and the keep rate is 1 - p; at a fixed seed the gradients match
// finite differences of the same seeded forward (the float64 oracle's, with the kernels' mask).
// The mask itself (Philox, known answers) is tested in attention_backward_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"
#include "oracle_trial.hpp"

namespace {

using namespace oracle_trial;

// A layer with random weights and its inputs: 4 heads over 2 kv heads, sinks, softcap, a key
// padding mask; self-attention (causal) or cross-attention. The same arguments but p give the
// same weights and inputs.
struct DropoutLayer {
  Trial t;
  std::unique_ptr<mha::MultiheadAttention> layer;

  DropoutLayer(float p, bool cross, int threads = 1, int64_t L = 13) {
    Random r(2024);
    mha::AttentionConfig& c = t.config;
    c.embed_dim = 16;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.sinks = true;
    c.softcap = 5.0f;
    c.dropout = p;
    t.cross = cross;
    t.B = 2;
    t.L = L;
    t.S = cross ? L + 3 : L;
    t.threads = threads;
    t.query = r.floats(t.B * t.L * c.embed_dim);
    if (cross) {
      t.key = r.floats(t.B * t.S * c.embed_dim);
      t.value = r.floats(t.B * t.S * c.embed_dim);
    }
    t.kpm_bool.assign(static_cast<size_t>(t.B * t.S), 0);
    t.kpm_bool[t.S - 1] = t.kpm_bool[t.S + 2] = 1;
    t.options.key_padding_mask = {mha::MaskType::kBool, t.kpm_bool.data(), {t.B, t.S}};
    t.options.causal = !cross;
    t.options.need_weights = true;
    t.options.average_weights = false;
    t.options.training = true;
    t.options.seed = 42;
    layer = layer_for(t, r);
  }

  mha::ForwardOptions options(bool training, uint64_t seed) const {
    mha::ForwardOptions o = t.options;
    o.training = training;
    o.seed = seed;
    return o;
  }

  mha::ForwardResult forward(const mha::ForwardOptions& o) const {
    return layer->forward(query_ref(t, layer->config()), key_ref(t, layer->config()), value_ref(t, layer->config()), o);
  }

  // dOut: fixed, random.
  std::vector<float> d_output() const {
    Random r(7);
    return r.floats(t.B * t.L * layer->config().output_dim);
  }
};

// What a training step gives: output, weights, and every gradient in one vector.
struct Step {
  std::vector<float> output, weights, gradients;
};

Step train(const DropoutLayer& s, const mha::ForwardOptions& o) {
  const mha::ResolvedConfig& c = s.layer->config();
  const auto f = s.layer->forward_for_training(query_ref(s.t, c), key_ref(s.t, c), value_ref(s.t, c), o);
  const std::vector<float> d_out = s.d_output();
  const mha::Gradients g = s.layer->backward(*f.saved, d_out.data());
  Step step{f.result.output, f.result.weights, {}};
  for (const auto* part : {&g.query, &g.key, &g.value, &g.params.q_weight, &g.params.k_weight, &g.params.v_weight,
                           &g.params.out_weight, &g.params.q_bias, &g.params.k_bias, &g.params.v_bias,
                           &g.params.out_bias, &g.params.sinks})
    step.gradients.insert(step.gradients.end(), part->begin(), part->end());
  return step;
}

size_t count_different(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(LayerDropout, OffWithoutTrainingOrWithZeroP) {
  for (bool cross : {false, true}) {
    SCOPED_TRACE(cross ? "cross-attention" : "self-attention");
    const DropoutLayer dropping(0.4f, cross), plain(0.0f, cross);
    // Inference: the dropout layer's output and weights are the plain layer's, training or not.
    const auto want = plain.forward(plain.options(false, 0));
    for (const auto& got : {dropping.forward(dropping.options(false, 42)), plain.forward(plain.options(true, 42))}) {
      EXPECT_EQ(got.output, want.output);
      EXPECT_EQ(got.weights, want.weights);
    }
    // Training: the same for output, weights and every gradient.
    const Step plain_step = train(plain, plain.options(false, 0));
    for (const Step& step : {train(dropping, dropping.options(false, 42)), train(plain, plain.options(true, 42))}) {
      EXPECT_EQ(step.output, plain_step.output);
      EXPECT_EQ(step.weights, plain_step.weights);
      EXPECT_EQ(step.gradients, plain_step.gradients);
    }
    // And dropout does act when training with p > 0 (so the comparisons above could fail).
    EXPECT_GT(count_different(train(dropping, dropping.options(true, 42)).output, plain_step.output),
              plain_step.output.size() / 2);
  }
}

TEST(LayerDropout, SameSeedRepeatsBitForBitAnotherSeedDiffers) {
  for (bool cross : {false, true}) {
    std::vector<Step> by_threads;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(cross ? "cross" : "self") + ", threads " + std::to_string(threads));
      const DropoutLayer s(0.3f, cross, threads, 70);
      const Step first = train(s, s.options(true, 42)), again = train(s, s.options(true, 42));
      EXPECT_EQ(first.output, again.output);
      EXPECT_EQ(first.weights, again.weights);
      EXPECT_EQ(first.gradients, again.gradients);
      // forward() applies the same mask as forward_for_training.
      const auto inference = s.forward(s.options(true, 42));
      for (size_t i = 0; i < first.output.size(); ++i)
        ASSERT_NEAR(inference.output[i], first.output[i], 1e-6 * (1 + std::abs(first.output[i]))) << i;
      // Another seed: another mask, so most outputs, weights and gradients change.
      const Step other = train(s, s.options(true, 43));
      EXPECT_GT(count_different(other.output, first.output), first.output.size() * 9 / 10);
      EXPECT_GT(count_different(other.weights, first.weights), first.weights.size() / 10);
      EXPECT_GT(count_different(other.gradients, first.gradients), first.gradients.size() * 9 / 10);
      by_threads.push_back(first);
    }
    // 1 and 2 threads: the same mask, so the same numbers to float32 rounding.
    for (size_t i = 0; i < by_threads[0].gradients.size(); ++i)
      ASSERT_NEAR(by_threads[1].gradients[i], by_threads[0].gradients[i], 1e-5 * (1 + std::abs(by_threads[0].gradients[i])))
          << "gradient entry " << i;
  }
}

// Over N seeds, each output entry's mean approaches the plain layer's. Per seed, with
// m_ij = keep_ij / (1 - p) (mean 1, variance p / (1 - p), independent across (i, j) and heads),
//   out_ie = b_e + sum_h sum_j P_hij m_hij u_hje,  u_hje = sum_d Wo[e, h Dv + d] V[j, g(h) Dv + d],
// so E[out_ie] = the plain output and Var[out_ie] = p / (1 - p) sum_h sum_j P_hij^2 u_hje^2.
// The mean of N seeds then has standard deviation sigma_ie = sqrt(Var / N); the test asks
// |mean - plain| <= 5 sigma_ie + 1e-5 (float32 rounding) for every entry: under the normal
// approximation a correct mask fails an entry with probability 6e-7, the whole test (416 entries)
// with ~2.5e-4, and the seeds are fixed, so it either always passes or always fails. A mask that
// keeps 1 - p + 0.02 (scaling by 1 / (1 - p)) moves each mean by ~3% of |out - bias|: the largest
// entries leave their bound, and the keep rate checked below is then ~27 standard deviations off.
TEST(LayerDropout, MeanOverSeedsApproachesThePlainOutput) {
  const float p = 0.3f;
  const int N = 600;
  const DropoutLayer s(p, false);
  const mha::ResolvedConfig& c = s.layer->config();
  const int64_t B = s.t.B, L = s.t.L, S = s.t.S, H = c.num_heads, Dv = c.value_head_dim, D = c.output_dim;
  const auto plain = s.forward(s.options(false, 0));

  // The variance of each entry, from the oracle's probabilities and values.
  const oracle::Parameters params = oracle::to_doubles(s.layer->parameters());
  const oracle::Inputs inputs = oracle::to_doubles(c, B, L, S, s.t.query.data(), nullptr, nullptr);
  std::vector<double> variance(plain.output.size(), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    const oracle::RowPass f = oracle::forward_row(c, params, b, L, S, inputs, s.t.options, false, {});
    const oracle::Matrix Wo = oracle::matrix(params.out_weight.data(), D, H * Dv);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / c.heads_per_kv();
      const oracle::Matrix u = f.V.middleCols(g * Dv, Dv) * Wo.middleCols(h * Dv, Dv).transpose();  // [S, D]
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          for (int64_t e = 0; e < D; ++e)
            variance[(b * L + i) * D + e] += p / (1.0 - p) * std::pow(f.probs[h](i, j) * u(j, e), 2);
    }
  }

  std::vector<double> sum(plain.output.size(), 0.0);
  int64_t dropped = 0, visible = 0;
  for (int n = 0; n < N; ++n) {
    const auto got = s.forward(s.options(true, 1000 + n));
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += got.output[k];
    // The weights (after dropout): each visible one is dropped (0) or kept and scaled by 1 / (1 - p).
    for (size_t k = 0; k < got.weights.size(); ++k) {
      if (plain.weights[k] == 0.0f) continue;
      ++visible;
      if (got.weights[k] == 0.0f) {
        ++dropped;
      } else {
        ASSERT_NEAR(got.weights[k], plain.weights[k] / (1 - p), 1e-6) << "weight " << k << ", seed " << 1000 + n;
      }
    }
  }
  for (size_t k = 0; k < sum.size(); ++k) {
    const double mean = sum[k] / N, sigma = std::sqrt(variance[k] / N);
    EXPECT_LE(std::abs(mean - plain.output[k]), 5 * sigma + 1e-5)
        << "output " << k << ": mean " << mean << " over " << N << " seeds, plain " << plain.output[k] << ", sigma "
        << sigma;
  }
  // The keep rate: dropped / visible is binomial(visible, p); 5 standard deviations.
  const double rate = static_cast<double>(dropped) / visible;
  EXPECT_NEAR(rate, p, 5 * std::sqrt(p * (1 - p) / visible)) << dropped << " of " << visible << " weights dropped";
}

// At a fixed seed the layer's gradients are those of its seeded forward: central differences
// of the oracle's float64 forward with the kernels' mask at that seed (which the layer's forward
// matches), every entry of every input and parameter; tolerance as oracle_backward_test.cpp's.
TEST(LayerDropout, GradientsAtAFixedSeedMatchFiniteDifferencesOfTheSeededForward) {
  for (bool cross : {false, true}) {
    SCOPED_TRACE(cross ? "cross-attention" : "self-attention");
    const DropoutLayer s(0.5f, cross, 1, 5);
    const mha::ResolvedConfig& c = s.layer->config();
    const int64_t B = s.t.B, L = s.t.L, S = s.t.S, H = c.num_heads;
    const double tolerance =
        4e-7 * static_cast<double>(c.embed_dim + c.kdim + c.vdim + H * (c.head_dim + c.value_head_dim) + c.output_dim +
                                   L + S + B * (L + S) + 16);
    const Step step = train(s, s.options(true, 42));
    const oracle::Dropout dropout = layer_dropout(s.t, c);
    int64_t dropped = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < S; ++j) dropped += !dropout.keep(b, h, i, j);
    EXPECT_GT(dropped, B * H * L * S / 4);  // the mask is at work

    oracle::Parameters params = oracle::to_doubles(s.layer->parameters());
    oracle::Inputs in = oracle::to_doubles(c, B, L, S, s.t.query.data(), cross ? s.t.key.data() : nullptr,
                                           cross ? s.t.value.data() : nullptr);
    const std::vector<float> d_out = s.d_output();
    const auto loss = [&] {
      const auto out = oracle::forward(c, params, B, L, S, in, s.t.options, false, dropout).output;
      double sum = 0;
      for (size_t k = 0; k < out.size(); ++k) sum += out[k] * d_out[k];
      return sum;
    };
    const auto seeded = oracle::forward(c, params, B, L, S, in, s.t.options, false, dropout);
    ASSERT_EQ(compare("seeded output", step.output.data(), seeded.output, 0, seeded.output.size(), tolerance), "");

    // The layer's gradients in train()'s order, each against its finite difference.
    size_t at = 0;
    for (std::vector<double>* x : {&in.query, &in.key, &in.value, &params.q_weight, &params.k_weight, &params.v_weight,
                                   &params.out_weight, &params.q_bias, &params.k_bias, &params.v_bias,
                                   &params.out_bias, &params.sinks}) {
      for (size_t k = 0; k < x->size(); ++k, ++at) {
        const double saved = (*x)[k], h = 1e-5;
        (*x)[k] = saved + h;
        const double up = loss();
        (*x)[k] = saved - h;
        const double down = loss();
        (*x)[k] = saved;
        const double difference = (up - down) / (2 * h);
        ASSERT_NEAR(step.gradients[at], difference, tolerance * (1 + std::abs(difference))) << "gradient entry " << at;
      }
    }
    EXPECT_EQ(at, step.gradients.size());
  }
}

}  // namespace
