#include <cmath>
#include <limits>
#include <vector>

#include "attention_kernel.hpp"
#include "dropout.hpp"

namespace mha::kernels {

// The contract stated plainly, one query row at a time (score step: score_epilogue.hpp).
void attention_head_reference(const AttentionHeadArgs& a) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  ScoreEpilogue e = a.epilogue;
  e.causal = a.causal;
  const int64_t S = a.key_len, Dh = a.head_dim, Dv = a.value_head_dim > 0 ? a.value_head_dim : a.head_dim;
  const DropoutMask dropout(a.dropout);
  std::vector<float> scores(S);  // one row at a time: memory O(S), never O(L*S)
  for (int64_t i = 0; i < a.query_len; ++i) {
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(e, position, S);
    const float* q = a.q + i * a.q_stride;
    float* out = a.out + i * a.out_stride;
    float row_max = e.sink;  // -inf without a sink
    bool any_key = false;  // NaN scores are not "blocked": they must reach the output as NaN
    for (int64_t j = 0; j < S; ++j) {
      float bias = j < visible.begin || j >= visible.end ? kNegInf : 0.0f;
      if (a.key_bias) bias += a.key_bias[j];
      if (a.attn_bias) bias += a.attn_bias[i * S + j];
      if (bias == kNegInf) {
        scores[j] = kNegInf;
        continue;
      }
      any_key = true;
      const float* k = a.k + j * a.k_stride;
      float dot = 0.0f;
      for (int64_t d = 0; d < Dh; ++d) dot += q[d] * k[d];
      scores[j] = transform_score(e, dot * a.scale, position, j) + bias;
      if (scores[j] > row_max) row_max = scores[j];
    }
    for (int64_t d = 0; d < Dv; ++d) out[d] = 0.0f;
    if (!any_key) {  // every key blocked: zero result, zero weights
      if (a.lse) a.lse[i] = kNegInf;
      continue;
    }

    float sum = e.has_sink() ? std::exp(e.sink - row_max) : 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      scores[j] = scores[j] == kNegInf ? 0.0f : std::exp(scores[j] - row_max);
      sum += scores[j];
    }
    if (a.lse) a.lse[i] = row_max + std::log(sum);
    const float inv_sum = 1.0f / sum;
    for (int64_t j = 0; j < S; ++j) scores[j] *= inv_sum;  // the probabilities
    if (a.weights && a.weights_before_dropout) {
      float* w = a.weights + i * S;
      for (int64_t j = 0; j < S; ++j) w[j] += a.weights_factor * scores[j];
    }
    if (a.dropout.active())  // training: after dropout
      for (int64_t j = 0; j < S; ++j) scores[j] = dropout.keep(position, j) ? scores[j] * dropout.scale() : 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      if (scores[j] == 0.0f) continue;
      const float p = scores[j];
      const float* v = a.v + j * a.v_stride;
      for (int64_t d = 0; d < Dv; ++d) out[d] += p * v[d];
    }
    if (a.weights && !a.weights_before_dropout) {
      float* w = a.weights + i * S;
      for (int64_t j = 0; j < S; ++j) w[j] += a.weights_factor * scores[j];
    }
  }
}

}  // namespace mha::kernels
