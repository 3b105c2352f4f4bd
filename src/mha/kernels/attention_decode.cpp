// The attention kernel for a few query rows (decoding: one new token per call). The flash kernel
// repacks a head's keys and values and computes tiles of 4-8 query rows; for one row that is a
// copy of the whole cache and mostly idle lanes. Here the query heads that share a key/value
// head (GQA) read its keys and values in place, once for the whole group: per key row, every
// head's score (the score step of score_epilogue.hpp); per head, the softmax; per value row,
// every head's weighted sum. Same contract as attention_head_reference (attention_kernel.hpp),
// head by head, including never multiplying a blocked key's value into a row.
//
// The keys and values go by in blocks of kKeyBlock rows (16 KiB each at head size 64), which
// stay in L1 while every head of the group uses them:
//   scores  kWidth keys at a time per head (or pair of heads): one query load feeds kWidth key rows, and one
//           transposing reduction (hsum_rows) gives their kWidth scores;
//   values  per head, its output row in registers (kOutVecs vectors at a time) across the block,
//           so an output element is loaded and stored once per block, not once per key.
// One GQA group of 7 heads, 4096 keys, head size 64 (`npm run bench:kernels`, one thread): wasm
// 0.51 -> 0.32 ms (14.4 -> 22.8 GFLOPS), native AVX-512 0.25 -> 0.16 ms (29.5 -> 45.7 GFLOPS),
// against a score and a value per key loaded and stored for every key before; then, with the
// value loop kept within V8's registers (accumulate_values), wasm 0.23 ms and native 0.11 ms;
// then with the heads of a group in pairs, so one load of a key or value row feeds two heads'
// products (dot_keys_2 in wasm only, accumulate_values_2 everywhere): wasm 0.18-0.19 ms (40
// GFLOPS, near the GEMM's 49), native 0.06-0.07 ms.
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
constexpr int64_t kKeyBlock = 64;
// Scores of two heads per key load where 2 x kW accumulators + 3 fit the registers: wasm's 4 lanes
// (11 of V8's 15); with AVX-512's 16 lanes the pair's 32 accumulators spill (native one GQA
// group: 0.07 ms unpaired, 0.12 paired).
constexpr bool kPairScores = 2 * kW + 3 <= 15;
constexpr int kOutVecs = 6;  // output vectors held in registers while a value block goes by (see accumulate_values)

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

// scores[j] = q . k_j for keys j0 .. j1-1 (rows k_stride apart): kW keys share each load of q.
void dot_keys(const float* q, const float* k, int64_t k_stride, int64_t Dh, int64_t j0, int64_t j1, float* scores) {
  const int64_t full = Dh / kW * kW;
  int64_t j = j0;
  for (; j + kW <= j1; j += kW) {
    Vec acc[kW];
    for (int r = 0; r < kW; ++r) acc[r] = Vec(0.0f);
    for (int64_t d = 0; d < full; d += kW) {
      const Vec qd = simd::load(q + d);
      for (int r = 0; r < kW; ++r) acc[r] = simd::fmadd(qd, simd::load(k + (j + r) * k_stride + d), acc[r]);
    }
    Vec sums = simd::hsum_rows(acc);
    if (full < Dh) {  // head sizes that are not a multiple of the vector width
      alignas(64) float tail[kW];
      for (int r = 0; r < kW; ++r) {
        float t = 0.0f;
        for (int64_t d = full; d < Dh; ++d) t += q[d] * k[(j + r) * k_stride + d];
        tail[r] = t;
      }
      sums = sums + simd::load(tail);
    }
    simd::store(scores + j, sums);
  }
  for (; j < j1; ++j) scores[j] = dot(q, k + j * k_stride, Dh);
}

// dot_keys for two heads of a group at once: each key load feeds both heads' products.
void dot_keys_2(const float* q0, const float* q1, const float* k, int64_t k_stride, int64_t Dh, int64_t j0, int64_t j1,
                float* s0, float* s1) {
  const int64_t full = Dh / kW * kW;
  if (full < Dh) {
    dot_keys(q0, k, k_stride, Dh, j0, j1, s0);
    dot_keys(q1, k, k_stride, Dh, j0, j1, s1);
    return;
  }
  int64_t j = j0;
  for (; j + kW <= j1; j += kW) {
    Vec a0[kW], a1[kW];
    for (int r = 0; r < kW; ++r) a0[r] = a1[r] = Vec(0.0f);
    const float* kj = k + j * k_stride;
    for (int64_t d = 0; d < full; d += kW) {
      const Vec x0 = simd::load(q0 + d), x1 = simd::load(q1 + d);
      for (int r = 0; r < kW; ++r) {
        const Vec kr = simd::load(kj + r * k_stride + d);
        a0[r] = simd::fmadd(x0, kr, a0[r]);
        a1[r] = simd::fmadd(x1, kr, a1[r]);
      }
    }
    simd::store(s0 + j, simd::hsum_rows(a0));
    simd::store(s1 + j, simd::hsum_rows(a1));
  }
  for (; j < j1; ++j) {
    s0[j] = dot(q0, k + j * k_stride, Dh);
    s1[j] = dot(q1, k + j * k_stride, Dh);
  }
}

// out[0 .. N*kW) += sum over keys j0 .. j1-1 of p[j] v_j[0 .. N*kW), the N vectors in registers.
// kSkipBlocked (a mask may block keys inside the visible range): keys with p = 0 are skipped, so
// a blocked key's value is never read. Without masks p is 0 only by underflow, and adding 0 * v
// is exact, so that loop has no test.
// N is 6 (kOutVecs) at most: N accumulators + N loads in flight + the broadcast must fit V8's 15
// vector registers. With 8 (and the test's zero register) V8 kept one accumulator on the stack,
// a store-load chain every key. One GQA group of 7 heads, 4096 keys (`npm run bench:kernels`): wasm
// 0.30 -> 0.23 ms with this and the untested loop; native 0.16 -> 0.11 ms (its 64-float rows of 4
// AVX-512 vectors went one vector at a time before).
template <int N, bool kSkipBlocked>
void accumulate_values(const float* p, const float* v, int64_t v_stride, int64_t j0, int64_t j1, float* out) {
  Vec acc[N];
  for (int c = 0; c < N; ++c) acc[c] = simd::load(out + c * kW);
  const float* vj = v + j0 * v_stride;
  for (int64_t j = j0; j < j1; ++j, vj += v_stride) {
    if (kSkipBlocked && p[j] == 0.0f) continue;
    const Vec pj = simd::splat(p[j]);
    for (int c = 0; c < N; ++c) acc[c] = simd::fmadd(pj, simd::load(vj + c * kW), acc[c]);
  }
  for (int c = 0; c < N; ++c) simd::store(out + c * kW, acc[c]);
}

// accumulate_values for two heads at once (probabilities p0, p1; outputs out0, out1): each value
// load feeds both heads. No masks (p = 0 only by underflow), so no test.
template <int N>
void accumulate_values_2(const float* p0, const float* p1, const float* v, int64_t v_stride, int64_t j0, int64_t j1,
                         float* out0, float* out1) {
  Vec a0[N], a1[N];
  for (int c = 0; c < N; ++c) a0[c] = simd::load(out0 + c * kW), a1[c] = simd::load(out1 + c * kW);
  const float* vj = v + j0 * v_stride;
  for (int64_t j = j0; j < j1; ++j, vj += v_stride) {
    const Vec x0 = simd::splat(p0[j]), x1 = simd::splat(p1[j]);
    for (int c = 0; c < N; ++c) {
      const Vec vc = simd::load(vj + c * kW);
      a0[c] = simd::fmadd(x0, vc, a0[c]);
      a1[c] = simd::fmadd(x1, vc, a1[c]);
    }
  }
  for (int c = 0; c < N; ++c) simd::store(out0 + c * kW, a0[c]), simd::store(out1 + c * kW, a1[c]);
}

// Two heads' output rows (Dv a multiple of kW), 4 vectors of each at a time: 8 accumulators.
void accumulate_value_rows_2(const float* p0, const float* p1, const float* v, int64_t v_stride, int64_t j0, int64_t j1,
                             int64_t Dv, float* out0, float* out1) {
  int64_t d = 0;
  for (; d + 4 * kW <= Dv; d += 4 * kW) accumulate_values_2<4>(p0, p1, v + d, v_stride, j0, j1, out0 + d, out1 + d);
  for (; d < Dv; d += kW) accumulate_values_2<1>(p0, p1, v + d, v_stride, j0, j1, out0 + d, out1 + d);
}

template <bool kSkipBlocked>
void accumulate_value_row(const float* p, const float* v, int64_t v_stride, int64_t j0, int64_t j1, int64_t Dv,
                          float* out) {
  const int64_t full = Dv / kW * kW;
  int64_t d = 0;
  for (; d + kOutVecs * kW <= full; d += kOutVecs * kW)
    accumulate_values<kOutVecs, kSkipBlocked>(p, v + d, v_stride, j0, j1, out + d);
  for (; d + 4 * kW <= full; d += 4 * kW) accumulate_values<4, kSkipBlocked>(p, v + d, v_stride, j0, j1, out + d);
  for (; d < full; d += kW) accumulate_values<1, kSkipBlocked>(p, v + d, v_stride, j0, j1, out + d);
  for (; d < Dv; ++d) {
    for (int64_t j = j0; j < j1; ++j) {
      if (p[j] != 0.0f) out[d] += p[j] * v[j * v_stride + d];
    }
  }
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
  if (!scores) {
    own.resize(static_cast<size_t>(attention_decode_scratch_floats(a, count)));
    scores = own.data();
  }
  std::vector<float> row_max(static_cast<size_t>(count)), inv_sum(static_cast<size_t>(count));
  std::vector<char> live(static_cast<size_t>(count));
  for (int64_t i = 0; i < a.query_len; ++i) {
    const int64_t position = a.first_query + i;
    const KeyRange visible = visible_keys(shared, position, S);
    for (int64_t g = 0; g < count; ++g) {
      row_max[g] = e[g].sink;
      live[g] = visible.begin < visible.end && !a.key_bias && !heads[g].attn_bias;  // else: some key unmasked
      std::fill(heads[g].out + i * heads[g].out_stride, heads[g].out + i * heads[g].out_stride + Dv, 0.0f);
    }
    // 1. Scores, a block of key rows at a time for the whole group.
    for (int64_t j0 = visible.begin; j0 < visible.end; j0 += kKeyBlock) {
      const int64_t j1 = std::min(visible.end, j0 + kKeyBlock);
      int64_t g2 = 0;
      for (; kPairScores && g2 + 2 <= count; g2 += 2)
        dot_keys_2(heads[g2].q + i * heads[g2].q_stride, heads[g2 + 1].q + i * heads[g2 + 1].q_stride, a.k, a.k_stride,
                   Dh, j0, j1, scores + g2 * S, scores + (g2 + 1) * S);
      for (; g2 < count; ++g2) dot_keys(heads[g2].q + i * heads[g2].q_stride, a.k, a.k_stride, Dh, j0, j1, scores + g2 * S);
      for (int64_t g = 0; g < count; ++g) {
        float* s = scores + g * S;
        const float* mask = heads[g].attn_bias ? heads[g].attn_bias + i * S : nullptr;
        const bool per_score = e[g].transforms_scores() || a.key_bias || mask;
        Vec vmax(row_max[g]);
        int64_t j = j0;
        if (!per_score) {  // plain scores: scale and running max in vectors
          const Vec scale(a.scale);
          for (; j + kW <= j1; j += kW) {
            const Vec sj = simd::load(s + j) * scale;
            simd::store(s + j, sj);
            vmax = simd::max(vmax, sj);  // a NaN score leaves the max alone, as std::max below
          }
        }
        float m = simd::hmax(vmax);
        if (!(m > row_max[g])) m = row_max[g];
        for (; j < j1; ++j) {
          const float bias = (a.key_bias ? a.key_bias[j] : 0.0f) + (mask ? mask[j] : 0.0f);
          if (bias == kNegInf) {
            s[j] = kNegInf;
            continue;
          }
          live[g] = true;
          s[j] = transform_score(e[g], s[j] * a.scale, position, j) + bias;
          m = std::max(m, s[j]);
        }
        row_max[g] = m;
      }
    }
    // 2. Softmax numerators and sums, per head.
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
    // 3. out_g = sum_j p_gj v_j / sum_g, a block of value rows at a time for the whole group.
    for (int64_t j0 = visible.begin; j0 < visible.end; j0 += kKeyBlock) {
      const int64_t j1 = std::min(visible.end, j0 + kKeyBlock);
      // Heads in pairs while both are unmasked and live, then one by one.
      int64_t g0 = 0;
      for (; Dv % kW == 0 && !a.key_bias && g0 + 2 <= count; g0 += 2) {
        if (!live[g0] || !live[g0 + 1] || heads[g0].attn_bias || heads[g0 + 1].attn_bias) break;
        accumulate_value_rows_2(scores + g0 * S, scores + (g0 + 1) * S, a.v, a.v_stride, j0, j1, Dv,
                                heads[g0].out + i * heads[g0].out_stride, heads[g0 + 1].out + i * heads[g0 + 1].out_stride);
      }
      for (int64_t g = g0; g < count; ++g) {
        if (!live[g]) continue;
        const float* p = scores + g * S;
        float* out = heads[g].out + i * heads[g].out_stride;
        if (a.key_bias || heads[g].attn_bias)
          accumulate_value_row<true>(p, a.v, a.v_stride, j0, j1, Dv, out);
        else
          accumulate_value_row<false>(p, a.v, a.v_stride, j0, j1, Dv, out);
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

int64_t attention_decode_scratch_floats(const AttentionHeadArgs& args, int64_t count) {
  return std::max<int64_t>(count * args.key_len, 1);
}

}  // namespace mha::kernels
