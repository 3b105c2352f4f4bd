// The attention kernel for a few query rows (decoding: one new token per call). The flash kernel
// repacks a head's keys and values and computes tiles of 4-8 query rows; for one row that is a
// copy of the whole cache and mostly idle lanes. Here the query heads that share a key/value
// head (GQA) read its keys and values in place, once for the whole group: per key row, every
// head's score (the score step of score_epilogue.hpp); per head, the softmax; per value row,
// every head's weighted sum. Same contract as attention_head_reference (attention_kernel.hpp),
// head by head, including never multiplying a blocked key's value into a row.
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

void attention_heads_decode(const AttentionHeadArgs* heads, int64_t count) {
  // Shared by the group: keys, values, their sizes, the rows and positions, causal and window.
  const AttentionHeadArgs& a = heads[0];
  ScoreEpilogue shared = a.epilogue;
  shared.causal = a.causal;
  const int64_t S = a.key_len, Dh = a.head_dim, Dv = a.value_head_dim > 0 ? a.value_head_dim : a.head_dim;
  std::vector<ScoreEpilogue> e(static_cast<size_t>(count));
  for (int64_t g = 0; g < count; ++g) {
    e[g] = heads[g].epilogue;
    e[g].causal = a.causal;
  }
  // Scores, then probabilities: [count][S].
  std::vector<float> own;
  float* scores = a.scratch;
  if (!scores || count * S > attention_scratch_floats(a)) {
    own.resize(static_cast<size_t>(std::max<int64_t>(count * S, 1)));
    scores = own.data();
  }
  std::vector<float> row_max(static_cast<size_t>(count)), inv_sum(static_cast<size_t>(count));
  std::vector<char> live(static_cast<size_t>(count));
  for (int64_t i = 0; i < a.query_len; ++i) {
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(shared, position, S);
    for (int64_t g = 0; g < count; ++g) {
      row_max[g] = e[g].sink;
      live[g] = false;
      std::fill(heads[g].out + i * heads[g].out_stride, heads[g].out + i * heads[g].out_stride + Dv, 0.0f);
    }
    // Each key row is read once for the whole group.
    for (int64_t j = visible.begin; j < visible.end; ++j) {
      const float key_bias = a.key_bias ? a.key_bias[j] : 0.0f;
      const float* kj = a.k + j * a.k_stride;
      for (int64_t g = 0; g < count; ++g) {
        const float bias = key_bias + (heads[g].attn_bias ? heads[g].attn_bias[i * S + j] : 0.0f);
        float& s = scores[g * S + j];
        if (bias == kNegInf) {
          s = kNegInf;
          continue;
        }
        live[g] = true;
        s = transform_score(e[g], dot(heads[g].q + i * heads[g].q_stride, kj, Dh) * a.scale, position, j) + bias;
        row_max[g] = std::max(row_max[g], s);
      }
    }
    for (int64_t g = 0; g < count; ++g) {
      if (!live[g]) continue;  // every key blocked: zero result, zero weights
      float* p = scores + g * S;
      // Only NaN scores: a max of 0 keeps blocked keys at 0 and lets NaN reach the output.
      const float m = row_max[g] == kNegInf ? 0.0f : row_max[g];
      Vec vsum(0.0f);
      int64_t j = visible.begin;
      for (; j + kW <= visible.end; j += kW) {
        const Vec pj = fast_exp(simd::load(p + j) - Vec(m));
        simd::store(p + j, pj);
        vsum += pj;
      }
      float sum = simd::hsum(vsum) + (e[g].has_sink() ? std::exp(e[g].sink - m) : 0.0f);
      for (; j < visible.end; ++j) {
        p[j] = p[j] == kNegInf ? 0.0f : std::exp(p[j] - m);
        sum += p[j];
      }
      inv_sum[g] = 1.0f / sum;
    }
    // out_g = sum_j p_gj v_j / sum_g, each value row read once for the group (the outputs stay
    // in L1); a blocked key (p = 0) is skipped, so its value is never read into that row.
    const int64_t full = Dv / kW * kW;
    for (int64_t j = visible.begin; j < visible.end; ++j) {
      const float* vj = a.v + j * a.v_stride;
      for (int64_t g = 0; g < count; ++g) {
        const float pj = scores[g * S + j];
        if (!live[g] || pj == 0.0f) continue;
        float* out = heads[g].out + i * heads[g].out_stride;
        const Vec vp(pj);
        for (int64_t d = 0; d < full; d += kW) simd::store(out + d, simd::fmadd(vp, simd::load(vj + d), simd::load(out + d)));
        for (int64_t d = full; d < Dv; ++d) out[d] += pj * vj[d];
      }
    }
    for (int64_t g = 0; g < count; ++g) {
      if (!live[g]) continue;
      float* out = heads[g].out + i * heads[g].out_stride;
      for (int64_t d = 0; d < Dv; ++d) out[d] *= inv_sum[g];
      if (heads[g].weights) {
        float* w = heads[g].weights + i * S;
        const float* p = scores + g * S;
        for (int64_t j = visible.begin; j < visible.end; ++j) w[j] += heads[g].weights_factor * (p[j] * inv_sum[g]);
      }
    }
  }
}

void attention_head_decode(const AttentionHeadArgs& args) { attention_heads_decode(&args, 1); }

}  // namespace mha::kernels
