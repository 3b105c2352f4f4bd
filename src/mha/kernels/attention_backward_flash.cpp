// The fast backward kernel of one head (FlashAttention-2's backward, Dao 2023, algorithm 2): key
// blocks outer, their dK and dV accumulated in scratch while every query block that may see them
// passes (dQ too, for the whole call, added to the caller's once at the end); the probabilities recomputed tile by tile as P = exp(s - lse), never
// stored beyond a kQueryBlock x kKeyBlock tile. Per (query block, key block) pair, five products
// with the forward's register tiles (kRows x kCols, simd.hpp), the element-wise steps between them:
//   S = scale Q K^T      -> the score step (score_epilogue.hpp), P = exp(S - lse), dropout Z
//   dP = dO V^T          -> dS = P (Z dP - D) * softcap' * scale   (D_i = dO_i . O_i, once per row)
//   dV += (P Z)^T dO,  dK += dS^T Q,  dQ += dS K
// 10 L S Dh flops per head (Dh = Dv). Pairs of blocks that no row may see (causal, sliding
// window) are skipped whole, as in the forward kernel.
//
// NaN in blocked keys: keys blocked for every row (key bias -inf) are zeroed when packed; a pair
// blocked for some rows only (attn_bias, causal, window) gets score -inf whatever k holds, dS is
// forced to 0 where P = 0 (so dO . v_j = NaN reaches nothing), and dQ += dS K takes a guarded
// per-key path when a key block holds a non-finite k.
//
// Where the time goes (one head, L = S = 2048, Dh = Dv = 64, wasm SIMD, one thread; the best of 7
// calls' CPU time, on a machine loaded by other jobs, so ratios matter: copies of this file built
// with one stage compiled out, 3 rounds each): the whole pass 59.7-62.0 ms (43-45 GFLOPS; the
// forward kernel 26.4-27.0 ms, 40 GFLOPS, in the same session), and without
//     S = Q K^T      49.3-55.0 ms  (so ~10 ms)      dV and dK     36.0-37.6 ms  (~24 ms, 12 each)
//     dP and dS      48.8-50.2 ms  (~11 ms)          dQ            50.0-50.8 ms  (~10 ms)
//     the exp        58.7-63.6 ms  (within noise)
// so each of the five products runs at about the GEMM's rate (0.54 GFLOP in 10-12 ms: 45-54
// GFLOPS, the 128-bit machine's limit without FMA), and the packing, the score step and the
// element-wise dS take the remaining ~5 ms (~9%). Natively (AVX-512, 16 lanes): 16.3-20.5 ms,
// 130-165 GFLOPS, against the forward's 135-160 in the same runs. The causal head skips the
// pairs of blocks above the diagonal and runs at the same rate. Other block sizes (query blocks
// of 8 or 32 micro-tile rows, key blocks of 32) moved the wasm rate by less than the noise.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "attention_kernel.hpp"
#include "dropout.hpp"
#include "fast_exp.hpp"
#include "score_epilogue_simd.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

using simd::Vec;
constexpr int kRows = simd::kTileRows, kCols = simd::kTileCols, kW = simd::kWidth;
constexpr int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }
constexpr int64_t kQueryBlock = kRows * 16;  // rows passing over one key block together
// Keys whose dK and dV stay in scratch while the query blocks pass: whole micro-tiles both as
// columns (kCols, the scores) and as rows (kRows, dK and dV).
constexpr int64_t kKeyBlock = round_up(std::max<int64_t>(64, 4 * kCols), std::lcm(kRows, kCols));
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kInf = std::numeric_limits<float>::infinity();

int64_t value_head_dim(const AttentionHeadArgs& a) { return a.value_head_dim > 0 ? a.value_head_dim : a.head_dim; }

// The scratch, laid out once per call (floats; Lp = L rounded up to kQueryBlock, Dhp and Dvp the
// head sizes rounded up to kCols; rows past L and columns past Dh/Dv are zeros):
//   queries, packed once:      q_tiles  [Lp / kRows][Dh][kRows]   S's broadcasts (as the forward's)
//                              do_tiles [Lp / kRows][Dv][kRows]   dP's broadcasts
//                              q_rows   [Lp][Dhp], do_rows [Lp][Dvp]   dK's and dV's loads
//                              dq       [Lp][Dhp]                 dQ's accumulators
//                              shift [Lp] (lse, or +inf: a fully blocked row gets P = 0), delta [Lp] (D)
//   one key block at a time:   kt [kKeyBlock / kCols][Dh][kCols], vt [.. ][Dv][kCols]   (S's, dP's panels)
//                              k_rows [kKeyBlock][Dhp]            dQ's loads
//                              dk [kKeyBlock][Dhp], dv [kKeyBlock][Dvp], key_bias [kKeyBlock]
//   one pair of blocks:        p, ds, z (dropout factors), pz (p z), g (softcap'), [kQueryBlock][kKeyBlock] each
// Every broadcast in the micro-kernels then sits at a compile-time offset from one pointer
// (kRows floats, or kKeyBlock floats apart), as in the forward kernel.
struct Layout {
  int64_t L, Lp, Dh, Dv, Dhp, Dvp;
  explicit Layout(const AttentionBackwardArgs& b)
      : L(b.forward.query_len), Lp(round_up(b.forward.query_len, kQueryBlock)), Dh(b.forward.head_dim),
        Dv(value_head_dim(b.forward)), Dhp(round_up(Dh, kCols)), Dvp(round_up(Dv, kCols)) {}
  int64_t query_floats() const { return Lp * (Dh + Dv + Dhp + Dvp + Dhp + 2); }
  int64_t key_floats() const { return kKeyBlock * (Dh + Dv + Dhp + Dhp + Dvp + 1); }
  static constexpr int64_t tile_floats() { return 5 * kQueryBlock * kKeyBlock; }
  int64_t floats() const { return query_floats() + key_floats() + tile_floats(); }
};

// Points each region at rows x its width floats of the scratch from `next`, one after another;
// returns the end.
inline float* carve(float* next, int64_t rows, std::initializer_list<std::pair<float**, int64_t>> regions) {
  for (const auto& [region, width] : regions) {
    *region = next;
    next += rows * width;
  }
  return next;
}

// acc[r][0..1] = sum_d a[d][r] * panel[d][0..kCols): a kRows x kCols tile of a product whose
// operands are packed with the reduced dimension outermost.
inline void dot_tile(const float* a, const float* panel, int64_t depth, Vec (&acc)[kRows][2]) {
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = Vec(0.0f);
  for (int64_t d = 0; d < depth; ++d, a += kRows, panel += kCols) {
    const Vec b0 = simd::load(panel), b1 = simd::load(panel + kW);
    for (int r = 0; r < kRows; ++r) {
      const Vec ar = simd::splat(a[r]);
      acc[r][0] = simd::fmadd(ar, b0, acc[r][0]);
      acc[r][1] = simd::fmadd(ar, b1, acc[r][1]);
    }
  }
}

// For each kRows x kCols register tile (rows t.., keys jc..) of a query block's product with the
// key block: `tiles` the block's rows packed as dot_tile's a (kRows rows of `depth` features a
// tile), `panels` the key block's; visit(t, jc, acc) with the tile's sums.
template <typename Visit>
inline void for_each_tile(const float* tiles, const float* panels, int64_t depth, Visit&& visit) {
  for (int64_t t = 0; t < kQueryBlock; t += kRows) {
    for (int64_t jc = 0; jc < kKeyBlock; jc += kCols) {
      Vec acc[kRows][2];
      dot_tile(tiles + t * depth, panels + jc * depth, depth, acc);
      visit(t, jc, acc);
    }
  }
}

// out[r][0..kCols) += sum_t coef[t * kStep + r * kRowStep] * b[t][0..kCols) for r < kRows, t < n:
// dV, dK (t a query row, r a key) and dQ (t a key, r a query row). b's rows b_stride apart,
// out's out_stride apart.
template <int64_t kStep, int64_t kRowStep>
inline void rank_update(const float* coef, int64_t n, const float* b, int64_t b_stride, float* out,
                        int64_t out_stride) {
  Vec acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = simd::load(out + r * out_stride);
    acc[r][1] = simd::load(out + r * out_stride + kW);
  }
  for (int64_t t = 0; t < n; ++t, coef += kStep, b += b_stride) {
    const Vec b0 = simd::load(b), b1 = simd::load(b + kW);
    for (int r = 0; r < kRows; ++r) {
      const Vec c = simd::splat(coef[r * kRowStep]);
      acc[r][0] = simd::fmadd(c, b0, acc[r][0]);
      acc[r][1] = simd::fmadd(c, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    simd::store(out + r * out_stride, acc[r][0]);
    simd::store(out + r * out_stride + kW, acc[r][1]);
  }
}

class FlashBackward {
 public:
  explicit FlashBackward(const AttentionBackwardArgs& b)
      : b_(b), a_(b.forward), e_(epilogue_of(b.forward)), n_(b), dropout_(b.forward.dropout) {
    float* base = b.scratch;
    if (!base) {
      own_.resize(static_cast<size_t>(n_.floats()));
      base = own_.data();
    }
    // The layout above, region by region: per query row, per key of a block, per pair of blocks.
    float* next = carve(base, n_.Lp, {{&q_tiles_, n_.Dh}, {&do_tiles_, n_.Dv}, {&q_rows_, n_.Dhp}, {&do_rows_, n_.Dvp},
                                      {&dq_, n_.Dhp}, {&shift_, 1}, {&delta_, 1}});
    next = carve(next, kKeyBlock, {{&kt_, n_.Dh}, {&vt_, n_.Dv}, {&k_rows_, n_.Dhp}, {&dk_, n_.Dhp}, {&dv_, n_.Dvp},
                                   {&key_bias_, 1}});
    carve(next, kQueryBlock * kKeyBlock, {{&p_, 1}, {&ds_, 1}, {&z_, 1}, {&pz_, 1}, {&g_, 1}});
  }

  void run() {
    pack_queries();
    const int64_t key_end = b_.key_end < 0 ? a_.key_len : b_.key_end;
    for (int64_t j0 = b_.key_begin; j0 < key_end; j0 += kKeyBlock) {
      const int64_t keys = std::min(kKeyBlock, key_end - j0);
      pack_keys(j0, keys);
      for (int64_t i0 = 0; i0 < n_.L; i0 += kQueryBlock)
        if (pair_visible(i0, j0, keys)) pair(i0, j0, keys);
      for (int64_t j = 0; j < keys; ++j) {
        float* d_k = b_.d_k + (j0 + j) * b_.d_k_stride;
        float* d_v = b_.d_v + (j0 + j) * b_.d_v_stride;
        for (int64_t d = 0; d < n_.Dh; ++d) d_k[d] += dk_[j * n_.Dhp + d];
        for (int64_t d = 0; d < n_.Dv; ++d) d_v[d] += dv_[j * n_.Dvp + d];
      }
    }
    for (int64_t i = 0; i < n_.L; ++i) {
      if (shift_[i] == kInf) continue;  // a fully blocked row: no gradient
      float* d_q = b_.d_q + i * b_.d_q_stride;
      for (int64_t d = 0; d < n_.Dh; ++d) d_q[d] += dq_[i * n_.Dhp + d];
    }
  }

 private:
  static ScoreEpilogue epilogue_of(const AttentionHeadArgs& a) {
    ScoreEpilogue e = a.epilogue;
    e.causal = a.causal;
    return e;
  }

  // The queries and dO in the layouts above, D_i, lse (or +inf) per row, and the sink's gradient.
  void pack_queries() {
    const int64_t Dh = n_.Dh, Dv = n_.Dv;
    std::fill(q_tiles_, shift_, 0.0f);  // q_tiles .. dq
    for (int64_t i = 0; i < n_.Lp; ++i) {
      const float lse = i < n_.L ? b_.lse[i] : kNegInf;
      shift_[i] = kInf;
      delta_[i] = 0.0f;
      if (lse == kNegInf) continue;  // every key blocked (or a padding row): zeros everywhere
      const float* q = a_.q + i * a_.q_stride;
      const float* o = a_.out + i * a_.out_stride;
      const float* d_o = b_.d_out + i * b_.d_out_stride;
      float* qt = q_tiles_ + (i / kRows) * Dh * kRows + i % kRows;
      float* dot = do_tiles_ + (i / kRows) * Dv * kRows + i % kRows;
      for (int64_t d = 0; d < Dh; ++d) qt[d * kRows] = q[d];
      for (int64_t d = 0; d < Dv; ++d) dot[d * kRows] = d_o[d];
      std::copy(q, q + Dh, q_rows_ + i * n_.Dhp);
      std::copy(d_o, d_o + Dv, do_rows_ + i * n_.Dvp);
      float D = 0.0f;
      for (int64_t d = 0; d < Dv; ++d) D += d_o[d] * o[d];
      shift_[i] = lse;
      delta_[i] = D;
      if (e_.has_sink() && b_.key_begin == 0 && b_.d_sink) *b_.d_sink -= std::exp(e_.sink - lse) * D;
    }
  }

  // Keys j0 .. j0+keys-1 in the layouts above; keys blocked for every row (key bias -inf) and the
  // padding past `keys` are zeros with bias -inf. Notes whether every packed k is finite.
  void pack_keys(int64_t j0, int64_t keys) {
    const int64_t Dh = n_.Dh, Dv = n_.Dv;
    std::fill(kt_, p_, 0.0f);  // kt .. key_bias
    k_finite_ = true;
    for (int64_t j = 0; j < kKeyBlock; ++j) {
      const bool blocked = j >= keys || (a_.key_bias && a_.key_bias[j0 + j] == kNegInf);
      key_bias_[j] = blocked ? kNegInf : a_.key_bias ? a_.key_bias[j0 + j] : 0.0f;
      if (blocked) continue;
      const float* k = a_.k + (j0 + j) * a_.k_stride;
      const float* v = a_.v + (j0 + j) * a_.v_stride;
      float* kt = kt_ + (j / kCols) * Dh * kCols + j % kCols;
      float* vt = vt_ + (j / kCols) * Dv * kCols + j % kCols;
      for (int64_t d = 0; d < Dh; ++d) {
        kt[d * kCols] = k[d];
        k_finite_ = k_finite_ && std::isfinite(k[d]);
      }
      for (int64_t d = 0; d < Dv; ++d) vt[d * kCols] = v[d];
      std::copy(k, k + Dh, k_rows_ + j * n_.Dhp);
    }
  }

  int64_t position(int64_t i) const { return a_.first_query + i; }

  // Whether some row of the query block may see some key of the block (causal, window).
  bool pair_visible(int64_t i0, int64_t j0, int64_t keys) const {
    const int64_t last = std::min(i0 + kQueryBlock, n_.L) - 1;
    return visible_keys(e_, position(last), a_.key_len).end > j0 &&
           visible_keys(e_, position(i0), a_.key_len).begin < j0 + keys;
  }

  // Whether a mask may block some (row, key) of the pair (the forward's tile_may_block).
  bool pair_may_block(int64_t i0, int64_t j0, int64_t keys) const {
    if (a_.key_bias || a_.attn_bias || keys < kKeyBlock) return true;
    const int64_t last = std::min(i0 + kQueryBlock, n_.L) - 1;
    return j0 < visible_keys(e_, position(last), a_.key_len).begin ||
           j0 + keys > visible_keys(e_, position(i0), a_.key_len).end;
  }

  // The score step on row i's scores sr of keys j0.. (score_epilogue_simd.hpp, as in the forward
  // kernel), softcap's derivative into gr.
  void epilogue_row(float* sr, float* gr, int64_t i, int64_t j0, int64_t keys) const {
    score_epilogue_row(e_, sr, kKeyBlock, position(i), j0, keys, a_.key_len, key_bias_,
                       a_.attn_bias ? a_.attn_bias + i * a_.key_len + j0 : nullptr, gr);
  }

  // Query rows i0 .. i0+kQueryBlock-1 against the packed key block.
  void pair(int64_t i0, int64_t j0, int64_t keys) {
    constexpr int64_t B = kKeyBlock;
    const int64_t Dh = n_.Dh, Dv = n_.Dv, Dhp = n_.Dhp, Dvp = n_.Dvp;
    const int64_t rows = std::min(kQueryBlock, n_.L - i0);
    const bool may_block = pair_may_block(i0, j0, keys);
    const bool softcap = e_.softcap > 0.0f, dropout = a_.dropout.active();
    const Vec scale(a_.scale);

    // S = scale Q K^T, a kRows x kCols register tile at a time.
    for_each_tile(q_tiles_ + i0 * Dh, kt_, Dh, [&](int64_t t, int64_t jc, const Vec (&acc)[kRows][2]) {
      for (int r = 0; r < kRows; ++r) {
        simd::store(p_ + (t + r) * B + jc, acc[r][0] * scale);
        simd::store(p_ + (t + r) * B + jc + kW, acc[r][1] * scale);
      }
    });
    // The score step, then P = exp(S - lse) (0 for blocked pairs and fully blocked rows).
    for (int64_t r = 0; r < kQueryBlock; ++r) {
      float* sr = p_ + r * B;
      if (r >= rows) {  // past the last row (whose scores may be 0 * a NaN key)
        std::fill(sr, sr + B, 0.0f);
      } else {
        if (may_block || e_.transforms_scores()) epilogue_row(sr, g_ + r * B, i0 + r, j0, keys);
        const Vec shift(shift_[i0 + r]);
        for (int64_t j = 0; j < B; j += kW) simd::store(sr + j, fast_exp(simd::load(sr + j) - shift));
      }
      if (!dropout) continue;
      float* zr = z_ + r * B;
      if (r < rows)
        dropout_.factors(position(i0 + r), j0, B, zr);
      else
        std::fill(zr, zr + B, 0.0f);
      for (int64_t j = 0; j < B; j += kW) simd::store(pz_ + r * B + j, simd::load(sr + j) * simd::load(zr + j));
    }
    // dP = dO V^T, and at once dS = P (Z dP - D) softcap' scale; 0 where P = 0, so a NaN in a
    // blocked value reaches nothing.
    const Vec zero(0.0f);
    for_each_tile(do_tiles_ + i0 * Dv, vt_, Dv, [&](int64_t t, int64_t jc, const Vec (&acc)[kRows][2]) {
      for (int r = 0; r < kRows; ++r) {
        const int64_t at = (t + r) * B + jc;
        const Vec D(delta_[i0 + t + r]);
        for (int h = 0; h < 2; ++h) {
          const Vec p = simd::load(p_ + at + h * kW);
          Vec dp = acc[r][h];
          if (dropout) dp = dp * simd::load(z_ + at + h * kW);
          Vec ds = p * (dp - D);
          if (softcap) ds = ds * simd::load(g_ + at + h * kW);
          simd::store(ds_ + at + h * kW, simd::select_eq(p, zero, zero, ds * scale));
        }
      }
    });
    // dV += (P Z)^T dO and dK += dS^T Q: kRows keys x kCols columns, summed over the block's rows.
    const float* pz = dropout ? pz_ : p_;
    for (int64_t jr = 0; jr < B; jr += kRows) {
      for (int64_t dc = 0; dc < Dvp; dc += kCols)
        rank_update<B, 1>(pz + jr, kQueryBlock, do_rows_ + i0 * Dvp + dc, Dvp, dv_ + jr * Dvp + dc, Dvp);
      for (int64_t dc = 0; dc < Dhp; dc += kCols)
        rank_update<B, 1>(ds_ + jr, kQueryBlock, q_rows_ + i0 * Dhp + dc, Dhp, dk_ + jr * Dhp + dc, Dhp);
    }
    // dQ += dS K: kRows rows x kCols columns, summed over the block's keys. A key block holding
    // NaN or Inf that some rows may not see goes key by key, skipping the pairs with P = 0.
    if (may_block && !k_finite_) {
      for (int64_t r = 0; r < rows; ++r) {
        float* dq = dq_ + (i0 + r) * Dhp;
        for (int64_t j = 0; j < B; ++j) {
          if (p_[r * B + j] == 0.0f) continue;
          const Vec ds(ds_[r * B + j]);
          for (int64_t d = 0; d < Dhp; d += kW)
            simd::store(dq + d, simd::fmadd(ds, simd::load(k_rows_ + j * Dhp + d), simd::load(dq + d)));
        }
      }
      return;
    }
    for (int64_t t = 0; t < kQueryBlock; t += kRows)
      for (int64_t dc = 0; dc < Dhp; dc += kCols)
        rank_update<1, B>(ds_ + t * B, B, k_rows_ + dc, Dhp, dq_ + (i0 + t) * Dhp + dc, Dhp);
  }

  const AttentionBackwardArgs& b_;
  const AttentionHeadArgs& a_;
  const ScoreEpilogue e_;  // a_.epilogue with a_.causal
  const Layout n_;
  const DropoutMask dropout_;
  std::vector<float> own_;  // the scratch when the caller gives none
  float *q_tiles_, *do_tiles_, *q_rows_, *do_rows_, *dq_, *shift_, *delta_;
  float *kt_, *vt_, *k_rows_, *dk_, *dv_, *key_bias_;
  float *p_, *ds_, *z_, *pz_, *g_;
  bool k_finite_ = true;
};

}  // namespace

int64_t attention_backward_scratch_floats(const AttentionBackwardArgs& args) { return Layout(args).floats(); }

void attention_head_backward_flash(const AttentionBackwardArgs& args) {
  if (args.forward.query_len <= 0 || args.forward.key_len <= 0) return;  // no key: every row blocked
  FlashBackward(args).run();
}

}  // namespace mha::kernels
