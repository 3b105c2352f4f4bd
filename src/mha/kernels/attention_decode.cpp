// The attention kernel for a few query rows (decoding: one new token per call). The flash kernel
// repacks a head's keys and values and computes tiles of 4-8 query rows; for one row that is a
// copy of the whole cache and mostly idle lanes. Here each row reads the keys and values in
// place, once: scores for the visible keys (a dot product per key, four keys at a time), the
// score step of score_epilogue.hpp, the softmax, then the weighted sum of the value rows. Same
// contract as attention_head_reference (attention_kernel.hpp), including never multiplying a
// blocked key's value into a row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_kernel.hpp"
#include "fast_exp.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

using simd::Vec;
constexpr int kW = simd::kWidth;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// q . k for Dh-long rows, vector lanes then one horizontal sum.
float dot(const float* q, const float* k, int64_t Dh) {
  Vec acc0(0.0f), acc1(0.0f);
  int64_t d = 0;
  for (; d + 2 * kW <= Dh; d += 2 * kW) {
    acc0 = simd::fmadd(simd::load(q + d), simd::load(k + d), acc0);
    acc1 = simd::fmadd(simd::load(q + d + kW), simd::load(k + d + kW), acc1);
  }
  float sum = simd::hsum(acc0 + acc1);
  for (; d < Dh; ++d) sum += q[d] * k[d];
  return sum;
}

}  // namespace

void attention_head_decode(const AttentionHeadArgs& a) {
  ScoreEpilogue e = a.epilogue;
  e.causal = a.causal;
  const int64_t S = a.key_len, Dh = a.head_dim, Dv = a.value_head_dim > 0 ? a.value_head_dim : a.head_dim;
  std::vector<float> own;
  float* p = a.scratch;  // S scores, then probabilities
  if (!p) {
    own.resize(static_cast<size_t>(std::max<int64_t>(S, 1)));
    p = own.data();
  }
  for (int64_t i = 0; i < a.query_len; ++i) {
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(e, position, S);
    const float* q = a.q + i * a.q_stride;
    float* out = a.out + i * a.out_stride;
    std::fill(out, out + Dv, 0.0f);
    // Scores of the visible keys (p[j] for j in [begin, end)); blocked ones are -inf.
    float row_max = e.sink;
    bool any_key = false;
    for (int64_t j = visible.begin; j < visible.end; ++j) {
      float bias = a.key_bias ? a.key_bias[j] : 0.0f;
      if (a.attn_bias) bias += a.attn_bias[i * S + j];
      if (bias == kNegInf) {
        p[j] = kNegInf;
        continue;
      }
      any_key = true;
      p[j] = transform_score(e, dot(q, a.k + j * a.k_stride, Dh) * a.scale, position, j) + bias;
      row_max = std::max(row_max, p[j]);
    }
    if (!any_key) continue;  // every key blocked: zero result, zero weights
    if (row_max == kNegInf) row_max = 0.0f;  // only NaN scores: let them reach the output as NaN
    // Probabilities (unnormalized), vector by vector over the visible range.
    const Vec m(row_max);
    Vec vsum(0.0f);
    int64_t j = visible.begin;
    for (; j + kW <= visible.end; j += kW) {
      const Vec pj = fast_exp(simd::load(p + j) - m);
      simd::store(p + j, pj);
      vsum += pj;
    }
    float sum = simd::hsum(vsum) + (e.has_sink() ? std::exp(e.sink - row_max) : 0.0f);
    for (; j < visible.end; ++j) {
      p[j] = p[j] == kNegInf ? 0.0f : std::exp(p[j] - row_max);
      sum += p[j];
    }
    const float inv_sum = 1.0f / sum;
    // out = sum_j p_j v_j / sum, one pass over the value rows (out stays in L1); blocked keys
    // (p = 0) are skipped, so their values are never read.
    const int64_t full = Dv / kW * kW;
    for (int64_t k = visible.begin; k < visible.end; ++k) {
      if (p[k] == 0.0f) continue;
      const float* vk = a.v + k * a.v_stride;
      const Vec pk(p[k]);
      for (int64_t d = 0; d < full; d += kW) simd::store(out + d, simd::fmadd(pk, simd::load(vk + d), simd::load(out + d)));
      for (int64_t d = full; d < Dv; ++d) out[d] += p[k] * vk[d];
    }
    for (int64_t d = 0; d < Dv; ++d) out[d] *= inv_sum;
    if (a.weights) {
      float* w = a.weights + i * S;
      for (int64_t k = visible.begin; k < visible.end; ++k) w[k] += a.weights_factor * (p[k] * inv_sum);
    }
  }
}

}  // namespace mha::kernels
