#include <cmath>
#include <limits>
#include <vector>

#include "attention_kernel.hpp"

namespace mha::kernels {

void attention_head_reference(const AttentionHeadArgs& a) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t S = a.key_len, Dh = a.head_dim;
  std::vector<float> scores(S);  // one row at a time: memory O(S), never O(L*S)
  for (int64_t i = 0; i < a.query_len; ++i) {
    const float* q = a.q + i * a.q_stride;
    float* out = a.out + i * a.out_stride;
    float row_max = kNegInf;
    bool any_key = false;  // NaN scores are not "blocked": they must reach the output as NaN
    for (int64_t j = 0; j < S; ++j) {
      float bias = 0.0f;
      if (a.causal && j > a.first_query + i) bias = kNegInf;
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
      scores[j] = dot * a.scale + bias;
      if (scores[j] > row_max) row_max = scores[j];
    }
    for (int64_t d = 0; d < Dh; ++d) out[d] = 0.0f;
    if (!any_key) continue;  // every key blocked: zero result, zero weights

    float sum = 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      scores[j] = scores[j] == kNegInf ? 0.0f : std::exp(scores[j] - row_max);
      sum += scores[j];
    }
    const float inv_sum = 1.0f / sum;
    for (int64_t j = 0; j < S; ++j) {
      if (scores[j] == 0.0f) continue;
      const float p = scores[j] * inv_sum;
      const float* v = a.v + j * a.v_stride;
      for (int64_t d = 0; d < Dh; ++d) out[d] += p * v[d];
    }
    if (a.weights) {
      float* w = a.weights + i * S;
      for (int64_t j = 0; j < S; ++j) w[j] += a.weights_factor * (scores[j] * inv_sum);
    }
  }
}

}  // namespace mha::kernels
