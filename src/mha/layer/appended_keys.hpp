// The keys and values that do not come from the key and value projections (PyTorch's options).
//
// add_bias_kv and add_zero_attn (config): after each sequence's given keys and values,
// the learned rows bias_k / bias_v, then a zero key and value row. Appended to the projected keys
// [B, S, Hkv*Dh] and values [B, S, Hkv*Dv] (S counting them), so every head sees them; the
// masks are padded for them by AdditiveMask, and the backward pass sums bias_k's and bias_v's
// gradients over the batch (collect_appended_gradients).
#pragma once

#include <algorithm>
#include <cstdint>

#include "mha/plan/attention_config.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

// Fills rows S - extra_keys .. S - 1 of every sequence of k and v.
inline void append_keys(const ResolvedConfig& c, const AttentionParameters& params, float* k, float* v, int64_t B,
                        int64_t S) {
  const int64_t KV = c.kv_dim(), VKV = c.value_kv_dim();
  for (int64_t b = 0; b < B; ++b) {
    int64_t row = b * S + S - c.extra_keys();
    if (c.add_bias_kv) {
      std::copy(params.bias_k.begin(), params.bias_k.end(), k + row * KV);
      std::copy(params.bias_v.begin(), params.bias_v.end(), v + row * VKV);
      ++row;
    }
    if (c.add_zero_attn) {
      std::fill_n(k + row * KV, KV, 0.0f);
      std::fill_n(v + row * VKV, VKV, 0.0f);
    }
  }
}

// The backward pass's side: from dK [B, S, KV] and dV [B, S, VKV] (S counting the appended
// rows), d_bias_k / d_bias_v (the sums of the bias rows' gradients over the batch, when given:
// null skips them) and the given keys' rows, packed to [B, S - extra_keys, ·] in place.
inline void collect_appended_gradients(const ResolvedConfig& c, float* dk, float* dv, int64_t B, int64_t S,
                                       float* d_bias_k, float* d_bias_v) {
  const int64_t KV = c.kv_dim(), VKV = c.value_kv_dim(), given = S - c.extra_keys();
  if (c.add_bias_kv && d_bias_k) {
    std::fill_n(d_bias_k, KV, 0.0f);
    std::fill_n(d_bias_v, VKV, 0.0f);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < KV; ++i) d_bias_k[i] += dk[(b * S + given) * KV + i];
      for (int64_t i = 0; i < VKV; ++i) d_bias_v[i] += dv[(b * S + given) * VKV + i];
    }
  }
  for (int64_t b = 1; b < B; ++b) {  // (row blocks move left only: in place, in order)
    std::copy_n(dk + b * S * KV, given * KV, dk + b * given * KV);
    std::copy_n(dv + b * S * VKV, given * VKV, dv + b * given * VKV);
  }
}

// PyTorch's static_k / static_v (forward options): per-head rows [B*Hkv, S', D] written over the
// given keys' (values') rows of k [B, S, Hkv*D], S' = S - extra_keys.
inline void use_static_rows(const TensorRef& rows, float* k, int64_t B, int64_t S, int64_t heads, int64_t D) {
  if (!rows.present()) return;
  const int64_t given = rows.shape[1];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < given; ++j)
        std::copy_n(rows.data + ((b * heads + h) * given + j) * D, D, k + (b * S + j) * heads * D + h * D);
}

}  // namespace mha
