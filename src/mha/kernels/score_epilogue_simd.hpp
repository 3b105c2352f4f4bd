// The score step (score_epilogue.hpp) on a row of scaled scores, whole vectors at a time: what
// the flash forward and backward kernels both run on their tiles, so they compute the same scores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "fast_exp.hpp"
#include "score_epilogue.hpp"
#include "simd.hpp"

namespace mha::kernels {

// The scores sr[0..n) (n a multiple of the vector width) of keys j0 .. j0+n-1 for query
// position `position`, in the order of score_epilogue.hpp:
// - softcap as c * tanh(s / c), tanh|y| = (1 - e) / (1 + e) with e = exp(-2|y|) in fast_exp's
//   domain (absolute error of the capped score about c * 1e-7); when `derivative` is not null it
//   gets transform_score_derivative of each capped score (the backward pass);
// - ALiBi's -slope * |i - j|;
// - key_bias[0..n) (the key padding mask, -inf past the keys): -inf blocks whatever the score
//   (NaN or Inf in a blocked key cannot leak);
// - attn_row[0..keys) (the attention mask's row, or null);
// - -inf outside the keys visible_keys(e, position, key_len) allows.
inline void score_epilogue_row(const ScoreEpilogue& e, float* sr, int64_t n, int64_t position, int64_t j0,
                               int64_t keys, int64_t key_len, const float* key_bias, const float* attn_row,
                               float* derivative) {
  using simd::Vec;
  constexpr int kW = simd::kWidth;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (e.transforms_scores()) {
    const Vec cap(e.softcap), inv_cap(e.softcap > 0.0f ? 1.0f / e.softcap : 0.0f), one(1.0f), minus_two(-2.0f);
    const Vec slope(e.alibi_slope), lanes = simd::iota();
    for (int64_t j = 0; j < n; j += kW) {
      Vec s = simd::load(sr + j);
      if (e.softcap > 0.0f) {
        const Vec y = s * inv_cap, t = fast_exp(minus_two * simd::abs(y));
        s = cap * simd::copysign((one - t) / (one + t), y);
        if (derivative) simd::store(derivative + j, transform_score_derivative(e, s));
      }
      if (e.alibi_slope != 0.0f) {
        const Vec distance = simd::abs(Vec(static_cast<float>(position - j0 - j)) - lanes);
        s = s - slope * distance;
      }
      simd::store(sr + j, s);
    }
  }
  const Vec neg_inf(kNegInf);
  for (int64_t j = 0; j < n; j += kW) {
    const Vec bias = simd::load(key_bias + j);
    simd::store(sr + j, simd::select_eq(bias, neg_inf, neg_inf, simd::load(sr + j) + bias));
  }
  if (attn_row)
    for (int64_t j = 0; j < keys; ++j) sr[j] = attn_row[j] == kNegInf ? kNegInf : sr[j] + attn_row[j];
  const KeyRange visible = visible_keys(e, position, key_len);
  for (int64_t j = 0; j < std::min(n, visible.begin - j0); ++j) sr[j] = kNegInf;
  for (int64_t j = std::max<int64_t>(0, visible.end - j0); j < n; ++j) sr[j] = kNegInf;
}

}  // namespace mha::kernels
