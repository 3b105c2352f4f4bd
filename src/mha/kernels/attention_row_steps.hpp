// One query row of one head, step by step, in float32 and the order of score_epilogue.hpp:
// what the step paths record (the layer's forward_steps, attention_steps.cpp; the attention
// function's `capture`, attention_function.cpp). The fast kernels never come here; they compute
// the same values tile by tile, so this is the plain statement of the contract, one row at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "attention_kernel.hpp"

namespace mha::kernels {

// Row i of head `a` (its first_query, masks, score step): scores[j] = scale * q.k_j; capped[j]
// after softcap (null: not kept); logits[j] after ALiBi and the masks, -inf where blocked;
// pattern[j] the softmax before dropout (0 everywhere when every key is blocked, ONNX's rule),
// the sink in its denominator. A blocked key's score is recorded but reaches neither the logits
// nor the pattern (NaN there cannot leak). Returns the row's log-sum-exp (-inf when every key is
// blocked), what a backward pass reads.
inline float attention_row_steps(const AttentionHeadArgs& a, int64_t i, float* scores, float* capped, float* logits,
                                float* pattern) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  ScoreEpilogue e = a.epilogue;
  e.causal = a.causal;
  ScoreEpilogue softcap_only;
  softcap_only.softcap = e.softcap;
  const int64_t S = a.key_len, position = a.first_query + i;
  const KeyRange visible = visible_keys(e, position, S);
  const float* qi = a.q + i * a.q_stride;
  float row_max = e.sink;  // -inf without a sink
  bool any_key = false;    // NaN logits are not "blocked": they reach the pattern as NaN
  for (int64_t j = 0; j < S; ++j) {
    float bias = j < visible.begin || j >= visible.end ? kNegInf : 0.0f;
    if (a.key_bias) bias += a.key_bias[j];
    if (a.attn_bias) bias += a.attn_bias[i * S + j] == kNegInf ? kNegInf : a.attn_bias[i * S + j];
    float dot = 0.0f;
    const float* kj = a.k + j * a.k_stride;
    for (int64_t d = 0; d < a.head_dim; ++d) dot += qi[d] * kj[d];
    scores[j] = dot * a.scale;  // every key's (scores are before the masks); a blocked one stops here
    if (capped) capped[j] = transform_score(softcap_only, scores[j], position, j);
    logits[j] = bias == kNegInf ? kNegInf : transform_score(e, scores[j], position, j) + bias;
    if (bias == kNegInf) continue;
    any_key = true;
    if (logits[j] > row_max) row_max = logits[j];
  }
  if (!any_key) {
    for (int64_t j = 0; j < S; ++j) pattern[j] = 0.0f;
    return kNegInf;
  }
  float sum = e.has_sink() ? std::exp(e.sink - row_max) : 0.0f;
  for (int64_t j = 0; j < S; ++j) {
    pattern[j] = logits[j] == kNegInf ? 0.0f : std::exp(logits[j] - row_max);
    sum += pattern[j];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t j = 0; j < S; ++j) pattern[j] *= inv_sum;
  return row_max + std::log(sum);
}

}  // namespace mha::kernels
