// The score step of every attention variant, in one place, in the order every anchor applies it
// (Gemma 2, ONNX Attention-23, onnxruntime GroupQueryAttention, FlashAttention):
//
//   s = scale * q.k  ->  softcap: c * tanh(s / c)  ->  + ALiBi: -slope * |i - j|
//     ->  + masks (key padding, attn_mask)  ->  keys outside visible_keys() blocked
//     ->  softmax, with an optional sink logit in the denominator
//
// i and j are absolute positions: query row r of a call is at first_query + r (so a KV cache
// puts its new queries after the cached keys), key j at j. Both kernels call these functions
// (and both backward kernels transform_score_derivative);
// the flash kernel also uses visible_keys() to skip whole key tiles (causal, sliding window).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mha::kernels {

struct ScoreEpilogue {
  bool causal = false;       // key j is blocked for query i when j > i
  int64_t window = 0;        // sliding window W > 0: causal: i-W < j <= i; otherwise |i - j| < W
  float softcap = 0.0f;      // c > 0: scores become c * tanh(scores / c)
  float alibi_slope = 0.0f;  // this head's ALiBi slope: adds -slope * |i - j|
  float sink = -std::numeric_limits<float>::infinity();  // this head's sink logit, joins the denominator

  // Whether each score needs per-element work beyond the masks.
  bool transforms_scores() const { return softcap > 0.0f || alibi_slope != 0.0f; }
  bool has_sink() const { return sink != -std::numeric_limits<float>::infinity(); }
};

struct KeyRange {
  int64_t begin, end;  // keys begin .. end-1 may be seen; empty when begin >= end
};

// The keys query position i may see among S keys: causal and sliding-window limits.
inline KeyRange visible_keys(const ScoreEpilogue& e, int64_t i, int64_t S) {
  int64_t begin = 0, end = S;
  if (e.causal) end = std::min(S, i + 1);
  if (e.window > 0) {
    begin = std::min(S, std::max<int64_t>(0, i - e.window + 1));
    if (!e.causal) end = std::min(S, i + e.window);
  }
  return {begin, std::max(begin, end)};
}

// softcap then ALiBi on one scaled score of query position i and key j.
inline float transform_score(const ScoreEpilogue& e, float s, int64_t i, int64_t j) {
  if (e.softcap > 0.0f) s = e.softcap * std::tanh(s / e.softcap);
  if (e.alibi_slope != 0.0f) s -= e.alibi_slope * static_cast<float>(i > j ? i - j : j - i);
  return s;
}

// The score step's derivative (the backward pass: dS of the scaled score = dS of the final
// score times this), given `capped` = c * tanh(s / c), the score after softcap and before ALiBi
// (s itself without softcap): d(c tanh(s / c))/ds = 1 - tanh^2 = 1 - (capped / c)^2. ALiBi and the
// masks add constants (derivative 1). T: float (the reference) or a SIMD vector (the flash kernel).
template <class T>
inline T transform_score_derivative(const ScoreEpilogue& e, T capped) {
  if (!(e.softcap > 0.0f)) return T(1.0f);
  const T y = capped * T(1.0f / e.softcap);
  return T(1.0f) - y * y;
}

}  // namespace mha::kernels
