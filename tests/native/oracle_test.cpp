// Randomized differential test: the SIMD kernels (MultiheadAttention::forward, with and without a
// thread pool, and through a KV cache) against the float64 Eigen oracle (eigen_oracle.hpp) on
// thousands of random configurations: odd sizes from 1 up, L = 1 and S = 1, every mask kind, and
// random combinations of GQA, free head sizes, q/k norms, rotary, window, ALiBi, softcap and sinks
// (oracle_trial.hpp draws them; a drawn dropout must not change an inference call).
//
// Tolerance, scaled to the problem: float32 sums of n terms of size ~1 err by ~n * 2^-24 at
// worst, and the largest sums here run over the inputs (E, kdim, vdim), the keys (S) and the head
// (Dh). So |ours - oracle| <= 4e-7 * (E + kdim + vdim + S + Dh + 16) * (1 + |oracle|).
//
// MHA_ORACLE_CONFIGS=N runs N configurations (default 5000: about a second natively; 100000 for a
// nightly-style run, about 20 s); MHA_ORACLE_SEED=s
// replays from seed s (each failure prints the seed of its configuration).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "oracle_trial.hpp"

namespace {

using namespace oracle_trial;

// One configuration; an empty string when it agrees with the oracle.
std::string run_trial(uint32_t seed) {
  Random r(seed);
  Limits limits;
  limits.qk_norm = true;
  Trial t = draw(r, limits);
  t.options.training = false;  // inference: config.dropout has no effect (oracle_backward_test.cpp runs training)
  const auto layer = layer_for(t, r);
  const mha::ResolvedConfig& c = layer->config();
  const int64_t B = t.B, L = t.L, S = t.S, H = c.num_heads, D = c.output_dim;
  const double tolerance = 4e-7 * static_cast<double>(c.embed_dim + c.kdim + c.vdim + S + c.head_dim + 16);
  const auto want = oracle::forward(c, layer->parameters(), B, L, S, t.query.data(), t.cross ? t.key.data() : nullptr,
                                    t.cross ? t.value.data() : nullptr, t.options, t.am_per_head);
  if (!t.cached) {
    const auto got = layer->forward(query_ref(t, c), key_ref(t, c), value_ref(t, c), t.options);
    std::string e = compare("output", got.output.data(), want.output, 0, got.output.size(), tolerance);
    if (!e.empty() || !t.options.need_weights) return e;
    if (!t.options.average_weights) return compare("weights", got.weights.data(), want.weights, 0, got.weights.size(), tolerance);
    std::vector<double> averaged(static_cast<size_t>(B * L * S), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t k = 0; k < L * S; ++k) averaged[b * L * S + k] += want.weights[(b * H + h) * L * S + k] / H;
    return compare("averaged weights", got.weights.data(), averaged, 0, averaged.size(), tolerance);
  }
  // Through a cache: a prefill, then one-token steps; each call's rows against the oracle's.
  auto cache = layer->create_cache(B, L, mha::CacheDtype::kF32);
  const int64_t prefill = r.between(1, L - 1);
  for (int64_t done = 0; done < L;) {
    const int64_t n = done == 0 ? prefill : 1;
    std::vector<float> chunk(static_cast<size_t>(B * n * c.embed_dim));
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(t.query.data() + (b * L + done) * c.embed_dim, n * c.embed_dim, chunk.data() + b * n * c.embed_dim);
    mha::ForwardOptions o;
    o.cache = cache.get();
    const auto got = layer->forward({chunk.data(), {B, n, c.embed_dim}}, {}, {}, o);
    for (int64_t b = 0; b < B; ++b) {
      std::string e = compare("cached output", got.output.data() + b * n * D, want.output, (b * L + done) * D, n * D, tolerance);
      if (!e.empty()) return e + " (row " + std::to_string(done) + ")";
    }
    done += n;
  }
  return "";
}

TEST(EigenOracle, RandomConfigurationsAgree) {
  const int configs = env_int("MHA_ORACLE_CONFIGS", 5000);
  const uint32_t first = static_cast<uint32_t>(env_int("MHA_ORACLE_SEED", 1));
  int failures = 0;
  for (int i = 0; i < configs && failures < 5; ++i) {
    const uint32_t seed = first + static_cast<uint32_t>(i);
    const std::string error = run_trial(seed);
    if (!error.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " (replay: MHA_ORACLE_SEED=" << seed << " MHA_ORACLE_CONFIGS=1): " << error;
    }
  }
  std::printf("[ oracle   ] %d random configurations against the float64 Eigen oracle (seeds %u..%u)\n", configs, first,
              first + static_cast<uint32_t>(configs) - 1);
}

}  // namespace
