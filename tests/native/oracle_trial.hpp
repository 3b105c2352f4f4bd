// One random configuration of the layer for the oracle tests (oracle_test.cpp: forward,
// oracle_backward_test.cpp: gradients): odd sizes from 1 up, L = 1 and S = 1, every mask kind,
// and random combinations of GQA, free head sizes, rotary, window, ALiBi, softcap, sinks,
// dropout and the output gate. A seed gives the same configuration on every machine (std::mt19937 and integer draws).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eigen_oracle.hpp"
#include "mha/kernels/dropout.hpp"
#include "mha/layer/multihead_attention.hpp"

namespace oracle_trial {

struct Random {
  std::mt19937 rng;
  explicit Random(uint32_t seed) : rng(seed) {}
  int64_t between(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  std::vector<float> floats(int64_t n, float scale = 1.0f) {
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
  }
};

// Everything one configuration needs, owned.
struct Trial {
  mha::AttentionConfig config;
  int64_t B = 1, L = 1, S = 1;
  bool cross = false, batched = true;
  std::vector<float> query, key, value, kpm_float, am_float;
  std::vector<uint8_t> kpm_bool, am_bool;
  std::vector<int32_t> positions;
  mha::ForwardOptions options;  // training and seed drawn too (dropout applies only with config.dropout > 0)
  bool am_per_head = false;
  int threads = 1;
  bool cached = false;  // run as prefill + one-token steps through a KV cache
};

// The largest sizes draw() picks. Small ones keep a finite-difference check of every entry cheap;
// the same seed draws the same choices at any limits (only the ranges shrink).
struct Limits {
  int64_t heads = 6, per_head = 8, free_embed = 24, free_head = 9, free_output = 12, cross_dims = 12;
  int64_t batch = 3, len = 20, long_len = 150, keys = 40, window = 12;
  bool qk_norm = false;  // draw the q/k norms too (forward only: they have no backward)
};

inline Trial draw(Random& r, const Limits& max = {}) {
  Trial t;
  mha::AttentionConfig& c = t.config;
  c.num_heads = r.between(1, max.heads);
  c.num_kv_heads = r.chance(0.5) ? 0 : std::vector<int64_t>{1, c.num_heads}[r.between(0, 1)];
  if (c.num_kv_heads && c.num_heads % c.num_kv_heads) c.num_kv_heads = 1;
  const bool free_heads = r.chance(0.3);
  c.embed_dim = free_heads ? r.between(1, max.free_embed) : c.num_heads * r.between(1, max.per_head);
  if (free_heads) {
    c.head_dim = r.between(1, max.free_head);
    c.value_head_dim = r.chance(0.5) ? r.between(1, max.free_head) : 0;
    c.output_dim = r.chance(0.5) ? r.between(1, max.free_output) : 0;
  }
  c.bias = r.chance(0.8);
  if (r.chance(0.2)) c.scale = static_cast<float>(r.between(1, 20)) / 10.0f;
  const int64_t Dh = c.head_dim ? c.head_dim : c.embed_dim / c.num_heads;
  if (Dh >= 2 && r.chance(0.35)) c.rotary = {2 * r.between(1, Dh / 2), r.chance(0.5) ? 10000.0 : 50.0, r.chance(0.5)};
  if (r.chance(0.3)) c.sliding_window = r.between(1, max.window);
  if (r.chance(0.2)) c.alibi = true;
  if (r.chance(0.2)) c.softcap = static_cast<float>(r.between(1, 30)) / 4.0f;
  c.sinks = r.chance(0.2);

  t.cached = r.chance(0.2);
  t.cross = !t.cached && r.chance(0.35);
  if (t.cross && r.chance(0.5)) {
    c.kdim = r.between(1, max.cross_dims);
    c.vdim = r.between(1, max.cross_dims);
  }
  t.batched = t.cached || r.chance(0.8);
  t.B = t.batched ? r.between(1, max.batch) : 1;
  t.L = r.chance(0.15) ? 1 : r.between(1, r.chance(0.1) ? max.long_len : max.len);
  t.S = t.cross ? (r.chance(0.15) ? 1 : r.between(1, max.keys)) : t.L;
  if (t.cached) t.L = t.S = std::max<int64_t>(t.L, 2);
  t.threads = r.chance(0.3) ? 2 : 1;

  const int64_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
  t.query = r.floats(t.B * t.L * E);
  if (t.cross) {
    t.key = r.floats(t.B * t.S * kdim);
    t.value = r.floats(t.B * t.S * vdim);
  }
  mha::ForwardOptions& o = t.options;
  o.causal = t.cached || r.chance(0.4);
  o.need_weights = r.chance(0.6);
  o.average_weights = r.chance(0.5);
  const mha::Shape kpm_shape = t.batched ? mha::Shape{t.B, t.S} : mha::Shape{t.S};
  if (!t.cached && r.chance(0.3)) {
    if (r.chance(0.5)) {
      t.kpm_bool.resize(static_cast<size_t>(t.B * t.S));
      for (auto& m : t.kpm_bool) m = r.chance(0.3);
      o.key_padding_mask = {mha::MaskType::kBool, t.kpm_bool.data(), kpm_shape};
    } else {
      t.kpm_float = r.floats(t.B * t.S);
      for (auto& m : t.kpm_float) if (r.chance(0.2)) m = -INFINITY;
      o.key_padding_mask = {mha::MaskType::kFloat, t.kpm_float.data(), kpm_shape};
    }
  }
  if (!t.cached && r.chance(0.3)) {
    const int64_t H = c.num_heads;
    t.am_per_head = r.chance(0.4);
    const mha::Shape shape = t.am_per_head ? (t.batched ? mha::Shape{t.B * H, t.L, t.S} : mha::Shape{H, t.L, t.S})
                                           : mha::Shape{t.L, t.S};
    const int64_t n = mha::element_count(shape);
    if (r.chance(0.5)) {
      t.am_bool.resize(static_cast<size_t>(n));
      for (auto& m : t.am_bool) m = r.chance(0.25);
      o.attn_mask = {mha::MaskType::kBool, t.am_bool.data(), shape};
    } else {
      t.am_float = r.floats(n);
      for (auto& m : t.am_float) if (r.chance(0.1)) m = -INFINITY;
      o.attn_mask = {mha::MaskType::kFloat, t.am_float.data(), shape};
    }
  }
  if (!t.cross && !t.cached && c.rotary.dim > 0 && r.chance(0.4)) {
    t.positions.resize(static_cast<size_t>(t.B * t.L));
    for (auto& p : t.positions) p = static_cast<int32_t>(r.between(0, 300));
    o.positions = t.positions.data();
    o.positions_shape = t.batched ? mha::Shape{t.B, t.L} : mha::Shape{t.L};
  }
  if (r.chance(0.3)) c.dropout = static_cast<float>(r.between(1, 9)) / 10.0f;
  o.training = r.chance(0.7);
  o.seed = (static_cast<uint64_t>(r.rng()) << 32) | r.rng();
  o.weights_before_dropout = r.chance(0.3);  // Keras' weights
  c.gate = r.chance(0.25);                   // the output gate (drawn last: the earlier draws stay)
  if (max.qk_norm && r.chance(0.25)) c.qk_norm = {r.chance(0.5) ? "head" : "projection", r.chance(0.5) ? 1e-6 : 0.5};
  return t;
}

// The trial's key and value (null for self-attention) and their shapes.
inline mha::TensorRef query_ref(const Trial& t, const mha::ResolvedConfig& c) {
  return {t.query.data(), t.batched ? mha::Shape{t.B, t.L, c.embed_dim} : mha::Shape{t.L, c.embed_dim}};
}
inline mha::TensorRef key_ref(const Trial& t, const mha::ResolvedConfig& c) {
  if (!t.cross) return {};
  return {t.key.data(), t.batched ? mha::Shape{t.B, t.S, c.kdim} : mha::Shape{t.S, c.kdim}};
}
inline mha::TensorRef value_ref(const Trial& t, const mha::ResolvedConfig& c) {
  if (!t.cross) return {};
  return {t.value.data(), t.batched ? mha::Shape{t.B, t.S, c.vdim} : mha::Shape{t.S, c.vdim}};
}

// The layer of a trial with random weights (the entries of nn.Linear's scale), and its threads.
inline std::unique_ptr<mha::MultiheadAttention> layer_for(const Trial& t, Random& r) {
  auto layer = std::make_unique<mha::MultiheadAttention>(t.config);
  std::vector<std::vector<float>> storage;
  mha::StateDict sd;
  for (const auto& [key, shape] : mha::state_dict_layout(layer->config())) {
    const float scale = shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(shape[1])) : 0.5f;
    storage.push_back(r.floats(mha::element_count(shape), scale));
    sd[key] = {storage.back().data(), static_cast<int64_t>(storage.back().size())};
  }
  layer->load_state_dict(sd);  // copies
  if (t.threads > 1) layer->set_thread_pool(std::make_shared<mha::ThreadPool>(t.threads));
  return layer;
}

// A configuration in one line, for a failure's message.
inline std::string describe(const Trial& t, const mha::ResolvedConfig& c) {
  const auto mask = [](const mha::MaskRef& m) { return m.type == mha::MaskType::kBool ? "bool" : "float"; };
  std::string s = "B " + std::to_string(t.B) + (t.batched ? "" : " (unbatched)") + ", L " + std::to_string(t.L) +
                  ", S " + std::to_string(t.S) + ", E " + std::to_string(c.embed_dim) + ", H " +
                  std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) + " kv, Dh " +
                  std::to_string(c.head_dim) + ", Dv " + std::to_string(c.value_head_dim) + ", out " +
                  std::to_string(c.output_dim) + (t.cross ? ", cross kdim " + std::to_string(c.kdim) + " vdim " +
                                                                std::to_string(c.vdim)
                                                          : ", self");
  if (!c.bias) s += ", no bias";
  if (t.options.causal) s += ", causal";
  if (t.options.key_padding_mask.present()) s += std::string(", key_padding_mask ") + mask(t.options.key_padding_mask);
  if (t.options.attn_mask.present())
    s += std::string(", attn_mask ") + mask(t.options.attn_mask) + (t.am_per_head ? " per head" : "");
  if (c.rotary.dim) s += ", rotary " + std::to_string(c.rotary.dim) + (c.rotary.interleaved ? " pairs" : " halves");
  if (t.options.positions) s += " at positions";
  if (c.sliding_window) s += ", window " + std::to_string(c.sliding_window);
  if (!c.alibi_slopes.empty()) s += ", ALiBi";
  if (c.softcap > 0) s += ", softcap " + mha::number_text(c.softcap);
  if (c.sinks) s += ", sinks";
  if (c.gate) s += ", gate";
  if (c.qk_norm) s += std::string(", qk norm ") + (c.qk_norm.over == mha::QkNormScope::kHead ? "per head" : "over the projection");
  if (c.dropout > 0) s += std::string(", dropout ") + mha::number_text(c.dropout) + (t.options.training ? "" : " (not training)");
  if (t.options.need_weights)
    s += std::string(t.options.average_weights ? ", weights averaged" : ", weights per head") +
         (t.options.weights_before_dropout ? " before dropout" : "");
  if (t.threads > 1) s += ", " + std::to_string(t.threads) + " threads";
  return s;
}

// Compares ours (float) with the oracle (double): |ours - oracle| <= scale * (1 + |oracle|) for
// each entry; returns an empty string or the first mismatch.
template <typename Ours>
std::string compare(const std::string& what, const Ours* ours, const std::vector<double>& want, size_t offset, size_t n,
                    double scale) {
  for (size_t i = 0; i < n; ++i) {
    const double w = want[offset + i], g = ours[i];
    if (!(std::abs(g - w) <= scale * (1.0 + std::abs(w))))
      return what + "[" + std::to_string(i) + "]: " + std::to_string(g) + " vs oracle " + std::to_string(w);
  }
  return "";
}

// The dropout a trial's call applies, for the oracle: the kernels' own mask (dropout.hpp, keyed
// by the call's seed, stream b * H + h, query row i, key j), or none unless the call trains with
// config.dropout > 0.
inline oracle::Dropout layer_dropout(const Trial& t, const mha::ResolvedConfig& c) {
  if (!t.options.training || c.dropout == 0.0f) return {};
  const float p = c.dropout;
  const uint64_t seed = t.options.seed;
  const int64_t H = c.num_heads;
  return {p, [p, seed, H](int64_t b, int64_t h, int64_t i, int64_t j) {
            return mha::kernels::keep({p, seed, static_cast<uint64_t>(b * H + h)}, i, j);
          }};
}

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

}  // namespace oracle_trial
