// Randomized differential test of training: the layer's forward_for_training + backward (SIMD
// kernels, 1 or 2 threads) against the float64 Eigen oracle's forward and backward
// (eigen_oracle.hpp, itself checked against finite differences in
// oracle_finite_difference_test.cpp) on thousands of random configurations from
// oracle_trial.hpp's draw(): every mask kind, GQA, free head sizes, rotary incl. positions,
// window, ALiBi, softcap, sinks, and dropout with the kernels' own mask at the call's seed.
// A cached draw runs without its cache (training runs whole sequences). dOut is random in [-1, 1].
// In cross-attention the keys and values a key padding mask blocks are NaN for the layer.
//
// Tolerance, scaled to the problem as the forward's (oracle_test.cpp): float32 sums of n terms
// of size ~1 err by ~n * 2^-24 at worst. The backward's sums run over the inputs' features
// (E, kdim, vdim: input gradients), the heads' features (H * (Dh + Dv), outputDim), the keys and
// queries of a head (S, L: dQ, dK, dV) and the batch's rows (B * (L + S): the weights'
// gradients). So |ours - oracle| <= 4e-7 * n * (1 + |oracle|) with
// n = E + kdim + vdim + H * (Dh + Dv) + outputDim + L + S + B * (L + S) + 16.
//
// MHA_ORACLE_BACKWARD_CONFIGS=N runs N configurations (default 3000), MHA_ORACLE_SEED=s replays
// from seed s (each failure prints the seed of its configuration).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"
#include "oracle_trial.hpp"

namespace {

using namespace oracle_trial;

// What a run met, for its printed line.
struct Tally {
  int dropout = 0, two_threads = 0, nan_keys = 0;
  double worst = 0;  // the largest |ours - oracle| / (tolerance * (1 + |oracle|)) seen
};

// Like compare() (oracle_trial.hpp), also keeping the largest error relative to the tolerance.
std::string compare_gradient(const std::string& what, const std::vector<float>& ours, const std::vector<double>& want,
                             double tolerance, Tally& tally) {
  if (ours.size() != want.size())
    return what + ": " + std::to_string(ours.size()) + " entries, oracle " + std::to_string(want.size());
  for (size_t i = 0; i < ours.size(); ++i)
    tally.worst = std::max(tally.worst, std::abs(ours[i] - want[i]) / (tolerance * (1 + std::abs(want[i]))));
  return compare(what, ours.data(), want, 0, ours.size(), tolerance);
}

// One configuration; an empty string when the layer agrees with the oracle.
std::string run_trial(uint32_t seed, Tally& tally, std::string& description) {
  Random r(seed);
  Trial t = draw(r);
  t.cached = false;  // no cache in training: a cached draw runs as causal self-attention
  const auto layer = layer_for(t, r);
  const mha::ResolvedConfig& c = layer->config();
  const int64_t B = t.B, L = t.L, S = t.S, H = c.num_heads;
  const double tolerance =
      4e-7 * static_cast<double>(c.embed_dim + c.kdim + c.vdim + H * (c.head_dim + c.value_head_dim) + c.output_dim +
                                 L + S + B * (L + S) + 16);
  description = describe(t, c);
  const oracle::Dropout dropout = layer_dropout(t, c);
  tally.dropout += dropout.active();
  tally.two_threads += t.threads > 1;

  const auto key = t.cross ? t.key.data() : nullptr, value = t.cross ? t.value.data() : nullptr;
  const auto want = oracle::forward(c, layer->parameters(), B, L, S, t.query.data(), key, value, t.options,
                                    t.am_per_head, dropout);
  // Keys and values the key padding mask blocks are never read (cross-attention; in
  // self-attention they are queries too): the layer gets NaN there, the oracle the numbers, and
  // both must agree, the padded rows' gradients 0.
  Trial padded = t;
  if (t.cross && t.options.key_padding_mask.present()) {
    ++tally.nan_keys;
    for (int64_t k = 0; k < B * S; ++k) {
      const bool blocked = t.options.key_padding_mask.type == mha::MaskType::kBool ? t.kpm_bool[k] != 0
                                                                                   : t.kpm_float[k] == -INFINITY;
      if (!blocked) continue;
      std::fill_n(padded.key.begin() + k * c.kdim, c.kdim, NAN);
      std::fill_n(padded.value.begin() + k * c.vdim, c.vdim, NAN);
    }
  }
  const auto got = layer->forward_for_training(query_ref(t, c), key_ref(padded, c), value_ref(padded, c), t.options);
  std::string e = compare("training output", got.result.output.data(), want.output, 0, got.result.output.size(), tolerance);
  if (!e.empty()) return e;
  if (t.options.need_weights) {
    std::vector<double> weights = want.weights;  // per head
    if (t.options.average_weights) {
      weights.assign(static_cast<size_t>(B * L * S), 0.0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t k = 0; k < L * S; ++k) weights[b * L * S + k] += want.weights[(b * H + h) * L * S + k] / H;
    }
    e = compare("training weights", got.result.weights.data(), weights, 0, weights.size(), tolerance);
    if (!e.empty()) return e;
  }

  const std::vector<float> d_output = r.floats(static_cast<int64_t>(got.result.output.size()));
  const mha::Gradients ours = layer->backward(*got.saved, d_output.data());
  const oracle::Gradients g = oracle::backward(c, layer->parameters(), B, L, S, t.query.data(), key, value, t.options,
                                               t.am_per_head, d_output.data(), dropout);
  if (ours.query_shape != query_ref(t, c).shape) return "query gradient's shape " + mha::format_shape(ours.query_shape);
  if (t.cross && (ours.key_shape != key_ref(t, c).shape || ours.value_shape != value_ref(t, c).shape))
    return "key / value gradients' shapes " + mha::format_shape(ours.key_shape) + " / " + mha::format_shape(ours.value_shape);
  struct Entry {
    const char* name;
    const std::vector<float>& ours;
    const std::vector<double>& want;
  };
  const Entry entries[] = {{"d query", ours.query, g.query},
                           {"d key", ours.key, g.key},
                           {"d value", ours.value, g.value},
                           {"d q_weight", ours.params.q_weight, g.params.q_weight},
                           {"d k_weight", ours.params.k_weight, g.params.k_weight},
                           {"d v_weight", ours.params.v_weight, g.params.v_weight},
                           {"d out_weight", ours.params.out_weight, g.params.out_weight},
                           {"d q_bias", ours.params.q_bias, g.params.q_bias},
                           {"d k_bias", ours.params.k_bias, g.params.k_bias},
                           {"d v_bias", ours.params.v_bias, g.params.v_bias},
                           {"d out_bias", ours.params.out_bias, g.params.out_bias},
                           {"d sinks", ours.params.sinks, g.params.sinks},
                           {"d gate_weight", ours.params.gate_weight, g.params.gate_weight},
                           {"d gate_bias", ours.params.gate_bias, g.params.gate_bias}};
  for (const Entry& entry : entries) {
    e = compare_gradient(entry.name, entry.ours, entry.want, tolerance, tally);
    if (!e.empty()) return e;
  }
  return "";
}

TEST(EigenOracle, RandomConfigurationsGradientsAgree) {
  const int configs = env_int("MHA_ORACLE_BACKWARD_CONFIGS", 3000);
  const uint32_t first = static_cast<uint32_t>(env_int("MHA_ORACLE_SEED", 1));
  int failures = 0, run = 0;
  Tally tally;
  for (; run < configs && failures < 5; ++run) {
    const uint32_t seed = first + static_cast<uint32_t>(run);
    std::string error, description;
    try {
      error = run_trial(seed, tally, description);
    } catch (const std::exception& x) {
      error = std::string("threw: ") + x.what();
    }
    if (!error.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " (replay: MHA_ORACLE_SEED=" << seed
                    << " MHA_ORACLE_BACKWARD_CONFIGS=1; " << description << "): " << error;
    }
  }
  std::printf("[ oracle   ] %d random configurations: forward_for_training + backward against the float64 Eigen "
              "oracle's gradients (%d with dropout, %d on 2 threads, %d with NaN at padded keys; largest error %.2f of the "
              "tolerance; seeds %u..%u)\n",
              run, tally.dropout, tally.two_threads, tally.nan_keys, tally.worst, first, first + static_cast<uint32_t>(run) - 1);
}

}  // namespace
