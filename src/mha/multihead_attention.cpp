#include "multihead_attention.hpp"

#include <algorithm>

#include "additive_mask.hpp"
#include "errors.hpp"
#include "memory_budget.hpp"
#include "kernels/attention_kernel.hpp"
#include "kernels/linear.hpp"

namespace mha {

MultiheadAttention::MultiheadAttention(const AttentionConfig& config) : config_(resolve(config)) {
  check_fits("the weights", weight_memory(config_), 0, addressable_bytes());
}

void MultiheadAttention::load_state_dict(const StateDict& state) {
  params_ = parameters_from_state_dict(config_, state);
  loaded_ = true;
}

ForwardPlan MultiheadAttention::plan(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                     const ForwardOptions& options) const {
  if (!loaded_) throw type_error("the layer has no weights yet; call loadStateDict() first");
  ForwardPlan p = plan_forward(config_, query, key, value, options);
  // Before anything is allocated: a call that cannot fit fails here, naming its buffers.
  check_fits("the buffers", forward_memory(config_, p, options, !key.present(), false), 0, addressable_bytes());
  return p;
}

ForwardResult MultiheadAttention::forward(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                          const ForwardOptions& options) const {
  ForwardPlan p = plan(query, key, value, options);
  ForwardResult r;
  r.output_shape = p.output_shape;
  r.weights_shape = p.weights_shape;
  r.output.resize(static_cast<size_t>(element_count(p.output_shape)));
  if (options.need_weights) r.weights.resize(static_cast<size_t>(element_count(p.weights_shape)));
  forward_into(p, query, key, value, options, r.output.data(), options.need_weights ? r.weights.data() : nullptr);
  return r;
}

void MultiheadAttention::forward_into(const ForwardPlan& p, const TensorRef& query, const TensorRef& key_in,
                                      const TensorRef& value_in, const ForwardOptions& options, float* output,
                                      float* weights) const {
  const ResolvedConfig& c = config_;
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, E = c.embed_dim, H = c.num_heads;
  const int64_t Dh = c.head_dim, KV = c.kv_dim();
  const bool self_attention = !key_in.present();
  const float* key = self_attention ? query.data : key_in.data;
  const float* value = self_attention ? query.data : value_in.data;
  const auto bias = [&](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };

  // 1. Project: Q [B*L, E], K and V [B*S, Hkv*Dh].
  std::vector<float> q(static_cast<size_t>(B * L * E)), k(static_cast<size_t>(B * S * KV)),
      v(static_cast<size_t>(B * S * KV)), attended(static_cast<size_t>(B * L * E));
  kernels::linear({query.data, params_.q_weight.data(), bias(params_.q_bias), q.data(), B * L, E, E});
  kernels::linear({key, params_.k_weight.data(), bias(params_.k_bias), k.data(), B * S, c.kdim, KV});
  kernels::linear({value, params_.v_weight.data(), bias(params_.v_bias), v.data(), B * S, c.vdim, KV});

  // 2. Attend, one (batch, head) at a time; head h reads key/value head h / (H / Hkv).
  AdditiveMask key_padding(options.key_padding_mask, S);
  AdditiveMask attn_mask(options.attn_mask, L * S);
  if (weights) std::fill(weights, weights + element_count(p.weights_shape), 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / c.heads_per_kv();
      kernels::AttentionHeadArgs a{};
      a.q = q.data() + b * L * E + h * Dh;
      a.k = k.data() + b * S * KV + kvh * Dh;
      a.v = v.data() + b * S * KV + kvh * Dh;
      a.out = attended.data() + b * L * E + h * Dh;
      a.q_stride = E;
      a.k_stride = KV;
      a.v_stride = KV;
      a.out_stride = E;
      a.query_len = L;
      a.key_len = S;
      a.head_dim = Dh;
      a.scale = c.scale;
      a.causal = options.causal;
      a.key_bias = key_padding.rows(b);
      a.attn_bias = attn_mask.rows(p.attn_mask_per_head ? b * H + h : 0);
      if (weights) {
        const bool average = options.average_weights;
        a.weights = weights + (average ? b * L * S : (b * H + h) * L * S);
        a.weights_factor = average ? 1.0f / static_cast<float>(H) : 1.0f;
      }
      kernels::attention_head(a);
    }
  }

  // 3. Output projection.
  kernels::linear({attended.data(), params_.out_weight.data(), bias(params_.out_bias), output, B * L, E, E});
}

}  // namespace mha
