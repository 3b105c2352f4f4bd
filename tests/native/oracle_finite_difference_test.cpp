// The oracle's backward pass (eigen_oracle.hpp: oracle::backward) against central finite
// differences of its own float64 forward pass, on small random configurations of every option
// (oracle_trial.hpp's draw() at small sizes; dropout with the kernels' mask at the call's seed),
// for every entry of every input and parameter. Loss = sum(output * G), G random in [-1, 1].
//
// Tolerance: the central difference (f(x + h) - f(x - h)) / 2h with h = 1e-5 errs by
// h^2/6 * f''' (~1e-10 here) plus the loss's rounding, ~1e-16 * |loss| / h (~1e-11), so
// |analytic - difference| <= 1e-6 * (1 + |analytic|) holds with a wide margin while any
// missing or wrong term (an order of 1e-3 or more) fails it.
//
// MHA_ORACLE_FD_CONFIGS=N runs N configurations (default 500), MHA_ORACLE_SEED=s from seed s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "oracle_trial.hpp"

namespace {

using namespace oracle_trial;

constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-6;

// How many of the run's configurations used each option: every one must appear.
struct Coverage {
  std::map<std::string, int> count;
  void add(const Trial& t, const mha::ResolvedConfig& c, bool dropout) {
    const auto mask_kind = [](const mha::MaskRef& m) { return m.type == mha::MaskType::kBool ? "bool" : "float"; };
    const std::pair<const char*, bool> options[] = {
        {"cross-attention", t.cross}, {"kdim/vdim", c.kdim != c.embed_dim || c.vdim != c.embed_dim},
        {"no bias", !c.bias}, {"causal", t.options.causal}, {"GQA", c.num_kv_heads < c.num_heads},
        {"scale", t.config.scale.has_value()}, {"free head sizes", t.config.head_dim != 0},
        {"value head size", c.value_head_dim != c.head_dim}, {"outputDim", c.output_dim != c.embed_dim},
        {"rotary halves", c.rotary.dim > 0 && !c.rotary.interleaved}, {"rotary pairs", c.rotary.interleaved},
        {"partial rotary", c.rotary.dim > 0 && c.rotary.dim < c.head_dim}, {"positions", t.options.positions != nullptr},
        {"sliding window", c.sliding_window > 0}, {"ALiBi", !c.alibi_slopes.empty()}, {"softcap", c.softcap > 0},
        {"sinks", c.sinks}, {"dropout", dropout}, {"unbatched", !t.batched},
        {"per-head attn_mask", t.am_per_head}, {"output gate", c.gate}};
    for (const auto& [name, used] : options) count[name] += used;
    if (t.options.key_padding_mask.present()) ++count[std::string("key_padding_mask ") + mask_kind(t.options.key_padding_mask)];
    if (t.options.attn_mask.present()) ++count[std::string("attn_mask ") + mask_kind(t.options.attn_mask)];
  }
};

// One configuration; an empty string when every analytic gradient matches its finite difference.
std::string run_trial(uint32_t seed, Coverage& coverage, int& checked, double& worst) {
  Random r(seed);
  Limits small;
  small.heads = 3, small.per_head = 3, small.free_embed = 7, small.free_head = 4, small.free_output = 5;
  small.cross_dims = 5, small.batch = 2, small.len = 5, small.long_len = 7, small.keys = 6, small.window = 4;
  Trial t = draw(r, small);
  t.cached = false;  // no cache in training: a cached draw runs as causal self-attention
  t.threads = 1;
  const auto layer = layer_for(t, r);
  const mha::ResolvedConfig& c = layer->config();
  const int64_t B = t.B, L = t.L, S = t.S;
  oracle::Parameters p = oracle::to_doubles(layer->parameters());
  oracle::Inputs in = oracle::to_doubles(c, B, L, S, t.query.data(), t.cross ? t.key.data() : nullptr,
                                         t.cross ? t.value.data() : nullptr);
  const oracle::Dropout dropout = layer_dropout(t, c);  // the kernels' mask: the seeded forward is what is differentiated
  coverage.add(t, c, dropout.active());
  std::vector<double> G(static_cast<size_t>(B * L * c.output_dim));
  for (double& g : G) g = std::uniform_real_distribution<double>(-1, 1)(r.rng);

  const auto loss = [&] {
    const auto out = oracle::forward(c, p, B, L, S, in, t.options, t.am_per_head, dropout).output;
    double sum = 0;
    for (size_t k = 0; k < out.size(); ++k) sum += out[k] * G[k];
    return sum;
  };
  const oracle::Gradients g = oracle::backward(c, p, B, L, S, in, t.options, t.am_per_head, G.data(), dropout);

  // Each entry of x (an input or a parameter, read by loss()) against g_x.
  const auto check = [&](const char* name, std::vector<double>& x, const std::vector<double>& g_x) -> std::string {
    if (g_x.size() != x.size())
      return std::string(name) + ": " + std::to_string(g_x.size()) + " gradients for " + std::to_string(x.size()) + " entries";
    for (size_t k = 0; k < x.size(); ++k) {
      const double saved = x[k];
      x[k] = saved + kStep;
      const double up = loss();
      x[k] = saved - kStep;
      const double down = loss();
      x[k] = saved;
      const double difference = (up - down) / (2 * kStep);
      ++checked;
      worst = std::max(worst, std::abs(g_x[k] - difference) / (1 + std::abs(g_x[k])));
      if (!(std::abs(g_x[k] - difference) <= kTolerance * (1 + std::abs(g_x[k]))))
        return std::string(name) + "[" + std::to_string(k) + "]: backward " + std::to_string(g_x[k]) +
               ", finite difference " + std::to_string(difference);
    }
    return "";
  };
  struct Entry {
    const char* name;
    std::vector<double>* x;
    const std::vector<double>* g_x;
  };
  const Entry entries[] = {{"query", &in.query, &g.query},
                           {"key", &in.key, &g.key},
                           {"value", &in.value, &g.value},
                           {"q_weight", &p.q_weight, &g.params.q_weight},
                           {"k_weight", &p.k_weight, &g.params.k_weight},
                           {"v_weight", &p.v_weight, &g.params.v_weight},
                           {"out_weight", &p.out_weight, &g.params.out_weight},
                           {"q_bias", &p.q_bias, &g.params.q_bias},
                           {"k_bias", &p.k_bias, &g.params.k_bias},
                           {"v_bias", &p.v_bias, &g.params.v_bias},
                           {"out_bias", &p.out_bias, &g.params.out_bias},
                           {"sinks", &p.sinks, &g.params.sinks},
                           {"gate_weight", &p.gate_weight, &g.params.gate_weight},
                           {"gate_bias", &p.gate_bias, &g.params.gate_bias}};
  for (const Entry& e : entries) {
    const std::string error = check(e.name, *e.x, *e.g_x);
    if (!error.empty()) return error;
  }
  return "";
}

TEST(EigenOracle, BackwardMatchesFiniteDifferences) {
  const int configs = env_int("MHA_ORACLE_FD_CONFIGS", 500);
  const uint32_t first = static_cast<uint32_t>(env_int("MHA_ORACLE_SEED", 1));
  int failures = 0, checked = 0;
  double worst = 0;
  Coverage coverage;
  for (int i = 0; i < configs && failures < 5; ++i) {
    const uint32_t seed = first + static_cast<uint32_t>(i);
    const std::string error = run_trial(seed, coverage, checked, worst);
    if (!error.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " (replay: MHA_ORACLE_SEED=" << seed << " MHA_ORACLE_FD_CONFIGS=1): " << error;
    }
  }
  std::string rarest;
  for (const auto& [option, count] : coverage.count)
    if (rarest.empty() || count < coverage.count[rarest]) rarest = option;
  std::printf("[ oracle   ] %d random configurations: the oracle's backward against finite differences of its forward, "
              "%d gradient entries, largest error %.1e of %.0e; rarest option %s in %d (seeds %u..%u)\n",
              configs, checked, worst, kTolerance, rarest.c_str(), coverage.count[rarest], first,
              first + static_cast<uint32_t>(configs) - 1);
  // A full run covers every option (a replay of one seed need not).
  if (configs >= 300)
    for (const char* option : {"cross-attention", "kdim/vdim", "no bias", "causal", "GQA", "scale", "free head sizes",
                               "value head size", "outputDim", "rotary halves", "rotary pairs", "partial rotary",
                               "positions", "sliding window", "ALiBi", "softcap", "sinks", "dropout", "unbatched",
                               "per-head attn_mask", "key_padding_mask bool", "key_padding_mask float",
                               "attn_mask bool", "attn_mask float"})
      EXPECT_GE(coverage.count[option], 5) << option << " was drawn in too few configurations";
}

}  // namespace
