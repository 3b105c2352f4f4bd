// The backward pass's contract stated plainly (attention_kernel.hpp), one query row at a time:
// the twin the fast kernel (attention_backward_flash.cpp) is tested against. With s the final
// score of (i, j), P = exp(s - lse_i), Z the dropout factor keep / (1 - p) (1 without dropout):
//   dV_j += P Z dO_i;   dP = Z (dO_i . V_j);   dS = P (dP - D_i),  D_i = dO_i . O_i
//   dS *= the score step's derivative (softcap);  dQ_i += scale dS K_j;  dK_j += scale dS Q_i
//   d_sink += -P_sink,i D_i, P_sink,i = exp(sink - lse_i)
// A blocked (i, j) is skipped before k_j or v_j is read; a row with lse = -inf (every key
// blocked) contributes nothing.
#include <cmath>
#include <limits>

#include "attention_kernel.hpp"
#include "dropout.hpp"

namespace mha::kernels {

void attention_head_backward_reference(const AttentionBackwardArgs& b) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const AttentionHeadArgs& a = b.forward;
  ScoreEpilogue e = a.epilogue;
  e.causal = a.causal;
  const int64_t S = a.key_len, Dh = a.head_dim, Dv = a.value_head_dim > 0 ? a.value_head_dim : a.head_dim;
  const int64_t key_begin = b.key_begin, key_end = b.key_end < 0 ? S : b.key_end;
  const DropoutMask dropout(a.dropout);
  for (int64_t i = 0; i < a.query_len; ++i) {
    const float lse = b.lse[i];
    if (lse == kNegInf) continue;  // every key blocked: output 0 whatever q, k, v
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(e, position, S);
    const float* q = a.q + i * a.q_stride;
    const float* o = a.out + i * a.out_stride;
    const float* d_o = b.d_out + i * b.d_out_stride;
    float* d_q = b.d_q + i * b.d_q_stride;
    float D = 0.0f;
    for (int64_t d = 0; d < Dv; ++d) D += d_o[d] * o[d];
    if (e.has_sink() && key_begin == 0 && b.d_sink) *b.d_sink -= std::exp(e.sink - lse) * D;

    for (int64_t j = key_begin; j < key_end; ++j) {
      float bias = j < visible.begin || j >= visible.end ? kNegInf : 0.0f;
      if (a.key_bias) bias += a.key_bias[j];
      if (a.attn_bias) bias += a.attn_bias[i * S + j];
      if (bias == kNegInf) continue;
      const float* k = a.k + j * a.k_stride;
      const float* v = a.v + j * a.v_stride;
      float dot = 0.0f;
      for (int64_t d = 0; d < Dh; ++d) dot += q[d] * k[d];
      const float scaled = dot * a.scale;
      const float capped = e.softcap > 0.0f ? e.softcap * std::tanh(scaled / e.softcap) : scaled;
      const float score = transform_score(e, scaled, position, j) + bias;
      const float p = std::exp(score - lse);
      const float z = a.dropout.active() ? (dropout.keep(position, j) ? dropout.scale() : 0.0f) : 1.0f;

      float* d_v = b.d_v + j * b.d_v_stride;
      float dp = 0.0f;
      for (int64_t d = 0; d < Dv; ++d) {
        d_v[d] += p * z * d_o[d];
        dp += d_o[d] * v[d];
      }
      const float ds = p * (z * dp - D) * transform_score_derivative(e, capped) * a.scale;
      float* d_k = b.d_k + j * b.d_k_stride;
      for (int64_t d = 0; d < Dh; ++d) {
        d_q[d] += ds * k[d];
        d_k[d] += ds * q[d];
      }
    }
  }
}

}  // namespace mha::kernels
