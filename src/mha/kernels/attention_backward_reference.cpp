#include <cmath>
#include <limits>
#include <vector>

#include "attention_kernel.hpp"
#include "dropout.hpp"

namespace mha::kernels {

// The backward contract stated plainly (attention_kernel.hpp), one query row at a time. It
// recomputes each row's whole softmax from q and k (it does not read lse), so it also checks the
// forward's log-sum-exps when the fast kernel is compared with it.
void attention_head_backward_reference(const AttentionBackwardArgs& b) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const AttentionHeadArgs& a = b.forward;
  ScoreEpilogue e = a.epilogue;
  e.causal = a.causal;
  const int64_t S = a.key_len, Dh = a.head_dim, Dv = a.value_head_dim > 0 ? a.value_head_dim : a.head_dim;
  const int64_t key_begin = b.key_begin, key_end = b.key_end < 0 ? S : b.key_end;
  const DropoutMask dropout(a.dropout);
  std::vector<float> capped(S), p(S), dp(S);  // one row at a time: O(S), never O(L*S)
  for (int64_t i = 0; i < a.query_len; ++i) {
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(e, position, S);
    const float* q = a.q + i * a.q_stride;
    const float* o = a.out + i * a.out_stride;
    const float* d_o = b.d_out + i * b.d_out_stride;
    // The row's scores over all keys (the softmax needs them all), as the forward computes them.
    float row_max = e.sink;
    bool any_key = false;
    for (int64_t j = 0; j < S; ++j) {
      float bias = j < visible.begin || j >= visible.end ? kNegInf : 0.0f;
      if (a.key_bias) bias += a.key_bias[j];
      if (a.attn_bias) bias += a.attn_bias[i * S + j];
      if (bias == kNegInf) {
        p[j] = kNegInf;
        continue;
      }
      any_key = true;
      const float* k = a.k + j * a.k_stride;
      float dot = 0.0f;
      for (int64_t d = 0; d < Dh; ++d) dot += q[d] * k[d];
      float s = dot * a.scale;
      if (e.softcap > 0.0f) s = e.softcap * std::tanh(s / e.softcap);
      capped[j] = s;
      p[j] = transform_score(e, dot * a.scale, position, j) + bias;
      if (p[j] > row_max) row_max = p[j];
    }
    if (!any_key) continue;  // every key blocked: zero gradients
    float sum = e.has_sink() ? std::exp(e.sink - row_max) : 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      p[j] = p[j] == kNegInf ? 0.0f : std::exp(p[j] - row_max);
      sum += p[j];
    }
    for (int64_t j = 0; j < S; ++j) p[j] /= sum;
    const float p_sink = e.has_sink() ? std::exp(e.sink - row_max) / sum : 0.0f;

    // D = dO . O (= sum_j P[j] dP[j] over the row, dropout included).
    float D = 0.0f;
    for (int64_t d = 0; d < Dv; ++d) D += d_o[d] * o[d];
    if (b.d_sink && key_begin == 0) *b.d_sink -= p_sink * D;  // the sink once per row, by the chunk holding key 0

    float* dq = b.d_q + i * b.d_q_stride;
    for (int64_t j = key_begin; j < key_end; ++j) {
      if (p[j] == 0.0f) continue;  // blocked (or underflowed): k_j and v_j are not read
      const float factor = a.dropout.active() ? (dropout.keep(position, j) ? dropout.scale() : 0.0f) : 1.0f;
      const float* v = a.v + j * a.v_stride;
      float* dv = b.d_v + j * b.d_v_stride;
      float dpj = 0.0f;
      for (int64_t d = 0; d < Dv; ++d) {
        dv[d] += p[j] * factor * d_o[d];
        dpj += d_o[d] * v[d];
      }
      dpj *= factor;
      // Through the softmax, then the score step (softcap's derivative; ALiBi and masks add
      // constants), then the scale.
      const float ds = p[j] * (dpj - D) * score_step_derivative(e, capped[j]) * a.scale;
      const float* k = a.k + j * a.k_stride;
      float* dk = b.d_k + j * b.d_k_stride;
      for (int64_t d = 0; d < Dh; ++d) {
        dq[d] += ds * k[d];
        dk[d] += ds * q[d];
      }
    }
  }
}

}  // namespace mha::kernels
