// The fast attention kernel, flash-attention style: queries in blocks, keys in tiles, an online
// softmax (running max m and sum l per row), scale and masks applied inside the tile. Memory is
// O((L + S) * head_dim) per call; the L x S probabilities exist only when weights are asked for,
// and then come from the scores this pass already computed.
//
// Where the time goes (one head, L = S = 2048, Dh 64, wasm, one thread, `npm run bench:kernels`;
// ablations and a perf profile of V8's code): the two register-tile loops, Q.K^T and P.V, run at
// the GEMM's rate (49 GFLOPS: wasm has no fused multiply-add, and 8 mul + 8 add per step is the
// machine's limit for 128-bit vectors); the softmax's exp is most of the rest. 27.0 ms (39.7
// GFLOPS) -> 26.0 with fast_exp's one-instruction clamp and shorter polynomial chain (its
// comment) -> 25.4 ms (42.3 GFLOPS) with the broadcasts of q and p at fixed offsets from one
// pointer (QueryBlock::q, accumulate's p stride; V8 had an lea per broadcast). Without the exp
// at all it would take 23.3 ms.
//
// The per-stage profile (`bash bench/kernels/profile-flash.sh [commit]`: the kernel benchmark
// built from copies of this file with stages compiled out, interleaved, 3 rounds; ms), before
// (97d131b's parent) and after those two changes, on one VM in one session:
//                    full         no P.V       no exp       neither      scores only
//   before           24.5-25.7    14.2-14.7    22.0-22.2    11.4-12.0    11.0-11.1
//   after            23.0-23.8    13.2-13.4    21.4-21.7    11.4-12.2    10.9-10.9
// so Q.K^T ~10.9 ms and P.V ~9.8-10.4 ms (each at about the GEMM's rate), the exp 2.5-3.5 ->
// 1.6-2.1 ms, the rest of the softmax bookkeeping ~0.5 ms: the head runs at 44-48 GFLOPS, and
// what remains above the two products is the exp and its bookkeeping (~10%).
//
// The score step of the variants (softcap, ALiBi, sliding window; score_epilogue.hpp) runs in
// one place, epilogue() (score_epilogue_simd.hpp, shared with the backward kernel), and only on
// tiles that need it; key tiles that no row of a query block may see (causal, sliding window)
// are never visited. A sink logit starts each row's running max and sum, so it joins the
// denominator without a pass of its own.
//
// Training: lse (each row's m + log l) and dropout (dropout.hpp: each probability times its
// keep / (1 - p) after the row's sum is formed) cost nothing when not asked for.
//
// Variants (flash_variants.hpp, chosen per machine by kernel_choice.hpp): the kernel is one
// template, FlashAttention<Shape>, over the register tile's query rows, the keys per tile, how q and
// p reach every lane (a load-splat each, or one load and lane shuffles), the depth steps per
// loop iteration; the softmax's exp scheme (fast_exp.hpp) is a branch per row of a tile, in the
// part every variant shares (FlashHead). The list is at the bottom of this file;
// attention_head_flash runs the chosen one, one function pointer per call.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <cstring>
#include <utility>

#include "attention_kernel.hpp"
#include "dropout.hpp"
#include "fast_exp.hpp"
#include "flash_variants.hpp"
#include "gemm_tile.hpp"
#include "kernel_choice.hpp"
#include "score_epilogue_simd.hpp"
#include "simd.hpp"
#include "transpose_block.hpp"

namespace mha::kernels {
namespace {

using simd::Vec;
constexpr int kCols = simd::kTileCols, kW = simd::kWidth;
// Rows sharing one pass over the keys: the same for every variant (the layer splits a head's rows
// between threads in these blocks, attention_query_block()).
constexpr int64_t kQueryBlock = simd::kTileRows * 8;
// The packed keys are padded to whole tiles of this many (a variant's tiles read only up to
// round_up(S, kCols), so any key tile fits).
constexpr int64_t kPackTile = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One variant's parameters. Rows: query rows of the register tile (Rows x 2 vectors of
// accumulators); KeyTile: keys per tile (each row's softmax bookkeeping is paid once per tile);
// B: how q[r][d] (scores) and p[r][j] (P.V) reach every lane; Unroll: depth steps (scores) and keys
// (P.V) per loop iteration (the softmax's exp is chosen apart, FlashHead). Every variant sums each score and each output
// in the same order; the key tile moves where a row's max is updated, so results differ from
// one variant to another by rounding only (tests/native/flash_variants_test.cpp).
template <int Rows, int KeyTile, Broadcast B, int Unroll>
struct FlashShape {
  static constexpr int kRows = Rows, kUnroll = Unroll;
  static constexpr int64_t kKeyTile = KeyTile;
  // The shuffle form needs 4-lane vectors and whole groups of 4 rows (scores) or 4 keys (P.V).
  static constexpr bool kShuffle = B == Broadcast::kShuffle && gemm_detail::kShuffleWorks;
  static_assert(!kShuffle || Rows % 4 == 0, "the shuffle broadcast of q takes rows in fours");
  static_assert(!kShuffle || Unroll % 4 == 0, "the shuffle broadcast of p takes keys in fours");
  static_assert(KeyTile % kCols == 0, "whole panels of keys");
};

// f(integral_constant<int, 0>) .. f(integral_constant<int, N - 1>): a row index known at compile
// time, for the lane a shuffle broadcasts.
template <int N, class F, int... I>
inline void for_each_index(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline void for_each_index(F&& f) {
  for_each_index<N>(f, std::make_integer_sequence<int, N>{});
}

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

int64_t value_head_dim(const AttentionHeadArgs& a) { return a.value_head_dim > 0 ? a.value_head_dim : a.head_dim; }

// The head's keys and values, repacked once per call: K transposed in panels of kCols keys,
// [S / kCols][Dh][kCols], so the score micro-kernel streams one contiguous panel (as the GEMM
// reads its packed weights; a [Dh][S] layout would put its rows S floats apart, and with S a
// power of two in the same L1 set); V [S][Dp] with rows of Dv padded to whole vectors; plus
// the per-key bias (key padding mask, -inf on the padding keys S..Sp).
struct PackedHead {
  int64_t S, Sp, Dh, Dv, Dp;
  float *kt, *v, *key_bias;  // in the caller's scratch (or own_), laid out by floats()
  std::vector<float> own_;

  static int64_t floats(int64_t S, int64_t Dh, int64_t Dv) {
    const int64_t Sp = round_up(S, kPackTile), Dp = round_up(Dv, kCols);
    return Dh * Sp + S * Dp + Sp;
  }

  explicit PackedHead(const AttentionHeadArgs& a)
      : S(a.key_len), Sp(round_up(a.key_len, kPackTile)), Dh(a.head_dim), Dv(value_head_dim(a)),
        Dp(round_up(Dv, kCols)) {
    float* base = a.scratch;
    if (!base) {
      own_.resize(static_cast<size_t>(floats(S, Dh, Dv)));
      base = own_.data();
    }
    kt = base;
    v = kt + Dh * Sp;
    key_bias = v + S * Dp;
    for (int64_t j0 = 0; j0 < S; j0 += kCols)  // panel by panel: [Dh][kCols] = the keys' rows transposed
      transpose(a.k + j0 * a.k_stride, a.k_stride, kt + j0 * Dh, kCols, std::min<int64_t>(kCols, S - j0), Dh);
    for (int64_t j = 0; j < S; ++j) {
      std::copy(a.v + j * a.v_stride, a.v + j * a.v_stride + Dv, v + j * Dp);
      std::fill(v + j * Dp + Dv, v + (j + 1) * Dp, 0.0f);
      key_bias[j] = a.key_bias ? a.key_bias[j] : 0.0f;
    }
    for (int64_t j = S; j < Sp; ++j) {  // padding keys: zero K, bias -inf
      float* panel = kt + (j / kCols) * Dh * kCols + j % kCols;
      for (int64_t d = 0; d < Dh; ++d) panel[d * kCols] = 0.0f;
      key_bias[j] = kNegInf;
    }
  }
};

// Online-softmax state of one block of query rows.
struct QueryBlock {
  int64_t first, rows;              // index of row 0 among the call's rows; valid rows
  int64_t key_begin;                // first key of the first tile visited (a multiple of kCols)
  std::vector<float> max, sum;      // m and l per row
  std::vector<char> seen;           // (lse only) whether some key was not blocked for the row
  std::vector<float> acc;           // [kQueryBlock][Dp] unnormalized output
  std::vector<float> scores;        // [kQueryBlock][stride] masked scores, then probabilities
  int64_t stride;                   // the key tile, or Sp when weights keep the whole row
  // The block's queries interleaved by micro-tile, [ceil(kQueryBlock / kRows)][Dh][kRows]: the score
  // kernel's kRows broadcasts of q[r][d] then come from one pointer at fixed offsets. Read from
  // a_.q's rows (q_stride apart), each cost V8 an address computation (an lea) in the inner loop.
  std::vector<float> q;
};

// What every variant shares, compiled once: the head's packed keys and values, the score step
// (epilogue), the softmax's row exp and the block's finish, which depend on the exp scheme only
// (chosen per call; a branch per row, not per element).
class FlashHead {
 protected:
  FlashHead(const AttentionHeadArgs& a, ExpScheme exp) : a_(a), e_(epilogue_of(a)), h_(a), dropout_(a.dropout), exp_(exp) {}

  // pr[j] = exp(sr[j] - m) for j < n (a multiple of kW); returns their sum.
  template <ExpScheme Exp>
  static float exp_row_as(const float* sr, float m, float* pr, int64_t n) {
    Vec vsum(0.0f);
    const Vec vm(m);
    for (int64_t j = 0; j < n; j += kW) {
      const Vec p = fast_exp_as<Exp>(simd::load(sr + j) - vm);
      simd::store(pr + j, p);
      vsum += p;
    }
    return simd::hsum(vsum);
  }
  float exp_row(const float* sr, float m, float* pr, int64_t n) const {
    return exp_ == ExpScheme::kHorner ? exp_row_as<ExpScheme::kHorner>(sr, m, pr, n)
                                      : exp_row_as<ExpScheme::kEstrin>(sr, m, pr, n);
  }

  static ScoreEpilogue epilogue_of(const AttentionHeadArgs& a) {
    ScoreEpilogue e = a.epilogue;
    e.causal = a.causal;
    return e;
  }

  // Whether a mask may block one of the tile's first `keys` keys for one of its rows: key
  // padding or a float key mask, an attention mask, or a key outside some row's visible range
  // (the last row starts it latest, the first row ends it earliest).
  bool tile_may_block(int64_t row0, int64_t rows, int64_t j0, int64_t keys) const {
    if (a_.key_bias || a_.attn_bias) return true;
    const int64_t position = a_.first_query + row0;
    return j0 < visible_keys(e_, position + rows - 1, h_.S).begin ||
           j0 + keys > visible_keys(e_, position, h_.S).end;
  }

  // The score step after scaling (score_epilogue_simd.hpp): softcap and ALiBi, the masks, the
  // keys outside the row's visible range; takes each row's max again. Padding keys past S are
  // transformed too; their bias (-inf) blocks them.
  void epilogue(int64_t row0, int64_t rows, int64_t j0, int64_t keys, int64_t padded_keys, float* s,
                int64_t stride, Vec* row_max) const {
    for (int r = 0; r < rows; ++r) {
      float* sr = s + r * stride;
      const int64_t i = row0 + r;
      score_epilogue_row(e_, sr, padded_keys, a_.first_query + i, j0, keys, h_.S, h_.key_bias + j0,
                         a_.attn_bias ? a_.attn_bias + i * h_.S + j0 : nullptr, nullptr);
      Vec vmax(kNegInf);
      for (int64_t j = 0; j < padded_keys; j += kW) vmax = simd::max(vmax, simd::load(sr + j));
      row_max[r] = vmax;
    }
  }

  void finish(const QueryBlock& b) {
    if (exp_ == ExpScheme::kHorner)
      finish_as<ExpScheme::kHorner>(b);
    else
      finish_as<ExpScheme::kEstrin>(b);
  }

  // out = acc / l (zeros for rows with every key blocked); lse = m + log l; weights += factor *
  // softmax row (after dropout), over the keys the block visited (the rest of the row stays 0).
  template <ExpScheme Exp>
  void finish_as(const QueryBlock& b) {
    for (int64_t r = 0; r < b.rows; ++r) {
      const int64_t i = b.first + r;
      float* out = a_.out + i * a_.out_stride;
      const bool blocked = b.max[r] == kNegInf;
      const float inv_sum = blocked ? 0.0f : 1.0f / b.sum[r];
      if (a_.lse) a_.lse[i] = b.seen[r] ? b.max[r] + std::log(b.sum[r]) : kNegInf;
      const float* acc = b.acc.data() + r * h_.Dp;
      int64_t d = 0;
      for (const Vec vinv(inv_sum); d + kW <= h_.Dv; d += kW) simd::store(out + d, simd::load(acc + d) * vinv);
      for (; d < h_.Dv; ++d) out[d] = acc[d] * inv_sum;
      if (!a_.weights || blocked) continue;
      const float* sr = b.scores.data() + r * b.stride;
      float* w = a_.weights + i * h_.S;
      const Vec m(b.max[r]), factor(a_.weights_factor * inv_sum);
      const KeyRange visible = visible_keys(e_, a_.first_query + i, h_.S);
      if (visible.begin == visible.end) continue;  // only a sink: zero weights
      const int64_t key_end = visible.end;
      if (a_.dropout.active() && !a_.weights_before_dropout) {  // each probability times its dropout factor
        weights_with_dropout<Exp>(sr, w, a_.first_query + i, b.key_begin, key_end, b.max[r], inv_sum);
        continue;
      }
      int64_t j = b.key_begin;
      for (; j + kW <= key_end; j += kW)
        simd::store(w + j, simd::fmadd(factor, fast_exp_as<Exp>(simd::load(sr + j) - m), simd::load(w + j)));
      alignas(64) float lanes[kW];
      if (j < key_end) {
        simd::store(lanes, fast_exp_as<Exp>(simd::load(sr + j) - m));
        for (int64_t t = 0; j + t < key_end; ++t) w[j + t] += a_.weights_factor * inv_sum * lanes[t];
      }
    }
  }

  // w[j] += factor * p[j] * dropout factor, for keys key_begin .. key_end-1 of the row at
  // `position`, p[j] = exp(sr[j] - m) * inv_sum.
  template <ExpScheme Exp>
  void weights_with_dropout(const float* sr, float* w, int64_t position, int64_t key_begin, int64_t key_end, float m,
                            float inv_sum) {
    row_factors_.resize(static_cast<size_t>(key_end - key_begin + kW));
    dropout_.factors(position, key_begin, key_end - key_begin, row_factors_.data());
    alignas(64) float lanes[kW];
    const Vec vm(m);
    for (int64_t j = key_begin; j < key_end; j += kW) {
      simd::store(lanes, fast_exp_as<Exp>(simd::load(sr + j) - vm));
      for (int64_t t = 0; t < kW && j + t < key_end; ++t)
        w[j + t] += a_.weights_factor * (lanes[t] * inv_sum * row_factors_[j + t - key_begin]);
    }
  }

  const AttentionHeadArgs& a_;
  const ScoreEpilogue e_;  // a_.epilogue with a_.causal
  PackedHead h_;
  const DropoutMask dropout_;
  const ExpScheme exp_;
  std::vector<float> row_factors_;  // weights_with_dropout's dropout factors
};

template <class Shape>
class FlashAttention : FlashHead {
  static constexpr int kRows = Shape::kRows;
  static constexpr int64_t kKeyTile = Shape::kKeyTile;
  static constexpr int64_t kMicroTiles = (kQueryBlock + kRows - 1) / kRows;  // per query block

 public:
  FlashAttention(const AttentionHeadArgs& a, ExpScheme exp) : FlashHead(a, exp) {}

  void run() {
    QueryBlock b;
    b.stride = a_.weights ? h_.Sp : kKeyTile;
    b.max.resize(kQueryBlock);
    b.sum.resize(kQueryBlock);
    b.seen.resize(kQueryBlock);
    b.acc.resize(static_cast<size_t>(kQueryBlock * h_.Dp));
    b.scores.resize(static_cast<size_t>((kQueryBlock + kRows) * b.stride));
    b.q.resize(static_cast<size_t>(kMicroTiles * kRows * h_.Dh));
    for (b.first = 0; b.first < a_.query_len; b.first += kQueryBlock) {
      b.rows = std::min(kQueryBlock, a_.query_len - b.first);
      pack_queries(b);
      // A sink is a key every row sees with score `sink` and no value: it starts m and l.
      std::fill(b.max.begin(), b.max.end(), e_.sink);
      std::fill(b.sum.begin(), b.sum.end(), e_.has_sink() ? 1.0f : 0.0f);
      std::fill(b.acc.begin(), b.acc.end(), 0.0f);
      std::fill(b.seen.begin(), b.seen.end(), 0);
      // Keys no row of the block may see (causal, sliding window) are skipped whole: the first
      // row sees the earliest keys, the last row the latest.
      const int64_t position = a_.first_query + b.first;
      b.key_begin = visible_keys(e_, position, h_.S).begin / kCols * kCols;
      const int64_t key_end = visible_keys(e_, position + b.rows - 1, h_.S).end;
      for (int64_t j0 = b.key_begin; j0 < key_end; j0 += kKeyTile) {
        const int64_t keys = std::min(kKeyTile, key_end - j0);
        for (int64_t r0 = 0; r0 < b.rows; r0 += kRows) tile(b, r0, j0, keys);
      }
      finish(b);
    }
  }

 private:
  // One kRows x keys tile: scores, softmax update, then acc += p V.
  void tile(QueryBlock& b, int64_t r0, int64_t j0, int64_t keys) {
    const int64_t rows = std::min<int64_t>(kRows, b.rows - r0);
    const int64_t padded_keys = round_up(keys, kCols);
    const int64_t col0 = a_.weights ? j0 : 0;  // where this tile's scores live in the row
    float* s = b.scores.data() + r0 * b.stride + col0;
    Vec tile_max[kRows];
    scores(b.q.data() + r0 * h_.Dh, rows, j0, padded_keys, s, b.stride, tile_max);
    // Only a tile that may block some key for some row (p = 0) takes accumulate's guarded path;
    // for causal heads that is the diagonal tiles only (one causal head, L = 4096, wasm:
    // 64.4 -> 54.1 ms; sliding window 512: 16.3 -> 14.3 ms; `npm run bench:kernels`).
    // (The scores reach padded_keys; accumulate reads the first `keys` only.)
    const bool may_block = tile_may_block(b.first + r0, rows, j0, keys);
    if (may_block || e_.transforms_scores() || j0 + padded_keys > h_.S ||
        tile_may_block(b.first + r0, rows, j0, padded_keys))
      epilogue(b.first + r0, rows, j0, keys, padded_keys, s, b.stride, tile_max);

    for (int r = 0; r < rows; ++r) {
      float* sr = s + r * b.stride;
      const float m_old = b.max[r0 + r], row_max = simd::hmax(tile_max[r]);
      float m_new = std::max(m_old, row_max);  // NaN scores are left out of the max...
      // lse: a row whose keys are all blocked gets -inf, even with a sink (its max is the sink's).
      if (a_.lse && !b.seen[r0 + r])
        b.seen[r0 + r] = row_max != kNegInf || !std::all_of(sr, sr + padded_keys, [](float x) { return x == kNegInf; });
      // With weights the masked scores stay in the row for finish(); p goes to a tile buffer.
      float* pr = a_.weights ? tile_probabilities_.data() + r * kKeyTile : sr;
      if (m_new == kNegInf) {
        if (std::all_of(sr, sr + padded_keys, [](float x) { return x == kNegInf; })) {
          std::fill(pr, pr + padded_keys, 0.0f);  // every key so far blocked for this row
          continue;
        }
        m_new = 0.0f;  // ...but reach the sum and the output as NaN, as in the reference
      }
      // Once a row's max has settled (most tiles), it needs no rescaling: skip the libm call.
      const float correction = m_old == m_new ? 1.0f : m_old == kNegInf ? 0.0f : std::exp(m_old - m_new);
      const float row_sum = exp_row(sr, m_new, pr, padded_keys);
      b.max[r0 + r] = m_new;
      b.sum[r0 + r] = b.sum[r0 + r] * correction + row_sum;
      // Training: dropout after the sum (the denominator counts every probability).
      if (a_.dropout.active()) dropout_.apply(a_.first_query + b.first + r0 + r, j0, keys, pr);
      if (correction != 1.0f) {
        float* acc = b.acc.data() + (r0 + r) * h_.Dp;
        const Vec c(correction);
        for (int64_t d = 0; d < h_.Dp; d += kW) simd::store(acc + d, simd::load(acc + d) * c);
      }
    }
    // Rows kKeyTile apart either way (the scores' stride is kKeyTile without weights).
    const float* p = a_.weights ? tile_probabilities_.data() : s;
    if (may_block)
      accumulate<true>(b, r0, rows, j0, keys, p);
    else
      accumulate<false>(b, r0, rows, j0, keys, p);
  }

  // b.q[t][d][r] = q[row t * kRows + r][d]; rows past the block's last repeat it.
  void pack_queries(QueryBlock& b) const {
    for (int64_t t = 0; t < kMicroTiles; ++t) {
      float* qt = b.q.data() + t * h_.Dh * kRows;
      if ((t + 1) * kRows <= b.rows) {  // a whole micro-tile: its rows transposed
        transpose(a_.q + (b.first + t * kRows) * a_.q_stride, a_.q_stride, qt, kRows, kRows, h_.Dh);
        continue;
      }
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = std::min<int64_t>(t * kRows + r, b.rows - 1);
        const float* qr = a_.q + (b.first + row) * a_.q_stride;
        for (int64_t d = 0; d < h_.Dh; ++d) qt[d * kRows + r] = qr[d];
      }
    }
  }

  // s[r][0..padded_keys) = scale * q[row r] . k[j0 + j], a kRows x kCols register tile at a
  // time; row_max[r] gets the lanewise max of row r, so an unmasked tile needs no second pass.
  // q_tile: the tile's queries in pack_queries' layout.
  void scores(const float* q_tile, int64_t rows, int64_t j0, int64_t padded_keys, float* s, int64_t stride,
              Vec* row_max) const {
    for (int r = 0; r < kRows; ++r) row_max[r] = Vec(kNegInf);
    const Vec scale(a_.scale);
    for (int64_t jc = 0; jc < padded_keys; jc += kCols) {
      Vec acc[kRows][2];
      for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = Vec(0.0f);
      const float* kt = h_.kt + (j0 + jc) * h_.Dh;  // the panel of keys j0 + jc ..
      const float* qd = q_tile;
      // One depth step: q[r][d] for the kRows rows sit together at qd (pack_queries' layout).
      const auto step = [&](const float* kd, const float* q) {
        const Vec k0 = simd::load(kd), k1 = simd::load(kd + kW);
        if constexpr (Shape::kShuffle) {
          Vec q4[kRows / 4];
          for (int g = 0; g < kRows / 4; ++g) q4[g] = simd::load(q + 4 * g);
          for_each_index<kRows>([&](auto r) {
            const Vec qr = gemm_detail::broadcast_lane<decltype(r)::value % 4>(q4[decltype(r)::value / 4]);
            acc[r][0] = simd::fmadd(qr, k0, acc[r][0]);
            acc[r][1] = simd::fmadd(qr, k1, acc[r][1]);
          });
        } else {
          for (int r = 0; r < kRows; ++r) {
            const Vec qr = simd::splat(q[r]);
            acc[r][0] = simd::fmadd(qr, k0, acc[r][0]);
            acc[r][1] = simd::fmadd(qr, k1, acc[r][1]);
          }
        }
      };
      int64_t d = 0;
      for (; d + Shape::kUnroll <= h_.Dh; d += Shape::kUnroll, kt += Shape::kUnroll * kCols, qd += Shape::kUnroll * kRows)
        for (int u = 0; u < Shape::kUnroll; ++u) step(kt + u * kCols, qd + u * kRows);
      for (; d < h_.Dh; ++d, kt += kCols, qd += kRows) step(kt, qd);
      for (int r = 0; r < rows; ++r) {
        const Vec s0 = acc[r][0] * scale, s1 = acc[r][1] * scale;
        simd::store(s + r * stride + jc, s0);
        simd::store(s + r * stride + jc + kW, s1);
        row_max[r] = simd::max(row_max[r], simd::max(s0, s1));
      }
    }
  }

  // acc[r] += sum_j p[r][j] v[j0 + j], p's rows kKeyTile apart: a compile-time stride, so the
  // kRows broadcasts of p[r][j] are fixed offsets from one pointer (as the queries' in scores()).
  // Register tiles of kRows x kCols output columns. With
  // masks, a key can be blocked (p = 0) for some rows only; those keys go through a guarded
  // per-row update so 0 * NaN in a blocked value row never reaches the output.
  // Two instances, so the unmasked one has no per-key bookkeeping; kept out of line: inlined
  // twice into tile(), g++ slowed the unmasked path by 20% (kernel benchmark, 6.9 -> 8.1 ms).
  template <bool kMasked>
  __attribute__((noinline)) void accumulate(QueryBlock& b, int64_t r0, int64_t rows, int64_t j0, int64_t keys,
                                            const float* p) {
    constexpr int64_t p_stride = kKeyTile;
    constexpr bool masked = kMasked;
    fast_keys_.clear();
    guarded_keys_.clear();
    for (int64_t j = 0; masked && j < keys; ++j) {
      int live = 0;
      for (int r = 0; r < rows; ++r) live += p[r * p_stride + j] != 0.0f;
      if (live == rows) fast_keys_.push_back(j);
      else if (live > 0) guarded_keys_.push_back(j);
    }
    // Rows past `rows` read what the buffer holds there; their results are never stored.
    const float* v = h_.v + j0 * h_.Dp;
    for (int64_t dc = 0; dc < h_.Dp; dc += kCols) {
      Vec acc[kRows][2];
      for (int r = 0; r < kRows; ++r) {
        const float* ar = b.acc.data() + (r0 + std::min<int64_t>(r, rows - 1)) * h_.Dp + dc;
        acc[r][0] = simd::load(ar);
        acc[r][1] = simd::load(ar + kW);
      }
      // Key j: value row vj = v[j] + dc, probabilities pj = p + j (row r at pj[r * p_stride]).
      const auto add_key = [&](const float* vj, const float* pj) {
        const Vec v0 = simd::load(vj), v1 = simd::load(vj + kW);
        for (int r = 0; r < kRows; ++r) {
          const Vec pr = simd::splat(pj[r * p_stride]);
          acc[r][0] = simd::fmadd(pr, v0, acc[r][0]);
          acc[r][1] = simd::fmadd(pr, v1, acc[r][1]);
        }
      };
      if (masked) {
        for (const int64_t j : fast_keys_) add_key(v + j * h_.Dp + dc, p + j);
      } else {  // without masks p can only be 0 by underflow: adding 0 * v is exact
        const float* vj = v + dc;
        int64_t j = 0;
        if constexpr (Shape::kShuffle) {
          // Four keys at a time: each row's p[r][j..j+3] in one load, each key's lane shuffled out.
          for (; j + 4 <= keys; j += 4, vj += 4 * h_.Dp) {
            Vec p4[kRows];
            for (int r = 0; r < kRows; ++r) p4[r] = simd::load(p + r * p_stride + j);
            for_each_index<4>([&](auto lane) {
              const float* vl = vj + decltype(lane)::value * h_.Dp;
              const Vec v0 = simd::load(vl), v1 = simd::load(vl + kW);
              for (int r = 0; r < kRows; ++r) {
                const Vec pr = gemm_detail::broadcast_lane<decltype(lane)::value>(p4[r]);
                acc[r][0] = simd::fmadd(pr, v0, acc[r][0]);
                acc[r][1] = simd::fmadd(pr, v1, acc[r][1]);
              }
            });
          }
        } else {
          for (; j + Shape::kUnroll <= keys; j += Shape::kUnroll, vj += Shape::kUnroll * h_.Dp)
            for (int u = 0; u < Shape::kUnroll; ++u) add_key(vj + u * h_.Dp, p + j + u);
        }
        for (; j < keys; ++j, vj += h_.Dp) add_key(vj, p + j);
      }
      for (int r = 0; r < rows; ++r) {
        float* ar = b.acc.data() + (r0 + r) * h_.Dp + dc;
        simd::store(ar, acc[r][0]);
        simd::store(ar + kW, acc[r][1]);
      }
    }
    for (const int64_t j : guarded_keys_) {
      const float* vj = v + j * h_.Dp;
      for (int r = 0; r < rows; ++r) {
        const float pj = p[r * p_stride + j];
        if (pj == 0.0f) continue;
        float* ar = b.acc.data() + (r0 + r) * h_.Dp;
        for (int64_t d = 0; d < h_.Dp; d += kW)
          simd::store(ar + d, simd::fmadd(simd::splat(pj), simd::load(vj + d), simd::load(ar + d)));
      }
    }
  }

  std::vector<int64_t> fast_keys_, guarded_keys_;
  std::vector<float> tile_probabilities_ = std::vector<float>(static_cast<size_t>(kRows * kKeyTile));
};

}  // namespace

int64_t attention_query_block() { return kQueryBlock; }

int64_t attention_scratch_floats(const AttentionHeadArgs& args) {
  return PackedHead::floats(args.key_len, args.head_dim, value_head_dim(args));
}

void attention_head_flash(const AttentionHeadArgs& args) {
  if (args.query_len <= 0) return;
  if (args.key_len <= 0) {  // nothing to attend to: every row is fully blocked
    for (int64_t i = 0; i < args.query_len; ++i) {
      std::fill(args.out + i * args.out_stride, args.out + i * args.out_stride + value_head_dim(args), 0.0f);
      if (args.lse) args.lse[i] = kNegInf;
    }
    return;
  }
  KernelChoice& choice = KernelChoice::process();
  choice.flash().run(args, choice.exp().scheme);
}

namespace {

template <class Shape>
void run_flash(const AttentionHeadArgs& a, ExpScheme exp) {
  FlashAttention<Shape>(a, exp).run();
}

template <int Rows, int KeyTile, Broadcast B = Broadcast::kSplat, int Unroll = 1>
constexpr FlashVariant flash_variant(const char* name) {
  return {name, &run_flash<FlashShape<Rows, KeyTile, B, Unroll>>, Rows, KeyTile};
}

// "<rows>x<keys per tile>[-shuffle][-k4]". 4x128 is the former wasm kernel, 8x128 the former
// AVX-512 one, 6x128 AVX2's. Above 4 rows the tile spills in wasm (V8's 16 vector registers:
// 4 x 2 accumulators + 2 key vectors + 1 broadcast = 11 live).
constexpr FlashVariant kFlashVariants[] = {
    flash_variant<2, 128>("2x128"),
    flash_variant<4, 128>("4x128"),
    flash_variant<6, 128>("6x128"),
    flash_variant<8, 128>("8x128"),
    flash_variant<4, 64>("4x64"),
    flash_variant<4, 256>("4x256"),
    flash_variant<4, 128, Broadcast::kShuffle, 4>("4x128-shuffle"),
    flash_variant<4, 128, Broadcast::kSplat, 4>("4x128-k4"),
};

}  // namespace

const FlashVariant* flash_variants(int* count) {
  *count = static_cast<int>(sizeof kFlashVariants / sizeof kFlashVariants[0]);
  return kFlashVariants;
}

const FlashVariant* find_flash_variant(const char* name) {
  for (const FlashVariant& v : kFlashVariants)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

const FlashVariant& flash_default_variant() {
#if defined(__AVX512F__)
  return *find_flash_variant("8x128");
#elif defined(__AVX2__)
  return *find_flash_variant("6x128");
#else
  return *find_flash_variant("4x128");
#endif
}

}  // namespace mha::kernels
