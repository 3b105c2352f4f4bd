// The fast kernels against their portable reference twins, on shapes that hit every tile edge,
// with every mask kind, weights, query blocks (first_query) and NaN in blocked keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "head_check.hpp"
#include "random_vector.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/linear.hpp"
#include "mha/kernels/output_gate.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/kernels/qk_norm.hpp"
#include "mha/kernels/transpose_block.hpp"

namespace {

using namespace head_check;  // NOLINT: the head checks shared with flash_variants_test.cpp

TEST(PackedLinear, MatchesReferenceOnEveryTileEdge) {
  for (int64_t rows : {1, 3, 4, 7, 9, 130}) {
    for (int64_t in : {1, 5, 64, 300}) {
      for (int64_t out : {1, 7, 16, 33}) {
        for (bool bias : {true, false}) {
          const auto x = random_vector(rows * in, 1), w = random_vector(out * in, 2), b = random_vector(out, 3);
          std::vector<float> fast(rows * out), ref(rows * out);
          mha::kernels::LinearArgs args{x.data(), w.data(), bias ? b.data() : nullptr, ref.data(), rows, in, out};
          mha::kernels::linear_reference(args);
          args.y = fast.data();
          mha::kernels::linear(args);
          expect_close(fast, ref, "y");
        }
      }
    }
  }
}

TEST(PackedLinear, RowRangesComposeToTheWholeProduct) {
  const int64_t rows = 50, in = 40, out = 24;
  const auto x = random_vector(rows * in, 4), w = random_vector(out * in, 5), b = random_vector(out, 6);
  mha::kernels::PackedLinear packed(w.data(), b.data(), out, in);
  std::vector<float> whole(rows * out), pieces(rows * out);
  packed.apply(x.data(), whole.data(), 0, rows);
  packed.apply(x.data(), pieces.data(), 0, 17);
  packed.apply(x.data(), pieces.data(), 17, rows);
  EXPECT_EQ(whole, pieces);
}

// The layer splits a projection's rows into tasks of rows_per_task rows, which the pool hands
// out one by one: with tasks taken in turn, the busiest thread gets at most 5% more than an even
// share (512 rows on 2 threads used to be 5 x 120 rows: 272 against 256).
TEST(PackedLinear, RowTasksBalanceThreads) {
  const int64_t tile_rows = mha::kernels::PackedLinear::few_rows();
  for (int threads : {2, 3, 4}) {
    for (int64_t rows : {512, 1000, 1536, 2048, 4096}) {
      const int64_t step = mha::kernels::PackedLinear::rows_per_task(rows, threads);
      SCOPED_TRACE(testing::Message() << "rows=" << rows << " threads=" << threads << " step=" << step);
      EXPECT_EQ(step % tile_rows, 0);
      EXPECT_LE(step, 120);
      EXPECT_GE((rows + step - 1) / step, 2 * threads);
      std::vector<int64_t> load(threads, 0);
      for (int64_t first = 0, task = 0; first < rows; first += step, ++task) load[task % threads] += std::min(step, rows - first);
      EXPECT_LE(*std::max_element(load.begin(), load.end()), 1.05 * static_cast<double>(rows) / threads);
    }
  }
  // One thread: two tasks of half the rows (rounded up to whole tiles: 4, 6 or 8 rows by the
  // instruction set), at most 120 each.
  EXPECT_EQ(mha::kernels::PackedLinear::rows_per_task(128, 1), (64 + tile_rows - 1) / tile_rows * tile_rows);
  EXPECT_EQ(mha::kernels::PackedLinear::rows_per_task(2048, 1), 120);
}

TEST(PackedLinear, FewRowsMatchReferenceAndPanelRangesCompose) {
  for (int64_t rows = 1; rows < mha::kernels::PackedLinear::few_rows(); ++rows) {
    for (int64_t in : {1, 3, 7, 64, 301}) {
      for (int64_t out : {1, 9, 33, 130}) {
        const auto x = random_vector(rows * in, 21), w = random_vector(out * in, 22), b = random_vector(out, 23);
        std::vector<float> ref(rows * out), fast(rows * out, 99.0f);
        mha::kernels::linear_reference({x.data(), w.data(), b.data(), ref.data(), rows, in, out});
        mha::kernels::PackedLinear packed(w.data(), b.data(), out, in);
        const int64_t panels = packed.num_panels(), half = panels / 2;
        packed.apply_few_rows(x.data(), fast.data(), rows, 0, half);
        packed.apply_few_rows(x.data(), fast.data(), rows, half, panels);
        SCOPED_TRACE(testing::Message() << "rows=" << rows << " in=" << in << " out=" << out);
        expect_close(fast, ref, "y");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The packing transpose (flash attention, linear_backward) against its scalar twin, bit for bit, on every edge of the
// 4x4 blocks, with strides wider than the rows and the columns (the layer's rows of E floats).
TEST(Transpose, MatchesReferenceOnEveryBlockEdge) {
  for (int64_t rows : {1, 3, 4, 5, 8, 13}) {
    for (int64_t cols : {1, 2, 4, 7, 16, 65}) {
      const int64_t src_stride = cols + 3, dst_stride = rows + 5;
      const std::vector<float> src = random_vector(static_cast<size_t>(rows * src_stride), 17);
      std::vector<float> fast(static_cast<size_t>(cols * dst_stride), -1.0f), ref = fast;
      mha::kernels::transpose(src.data(), src_stride, fast.data(), dst_stride, rows, cols);
      mha::kernels::transpose_reference(src.data(), src_stride, ref.data(), dst_stride, rows, cols);
      SCOPED_TRACE(testing::Message() << "rows=" << rows << " cols=" << cols);
      ASSERT_EQ(fast, ref);
      EXPECT_EQ(ref[(cols - 1) * dst_stride + rows - 1], src[(rows - 1) * src_stride + cols - 1]);
      EXPECT_EQ(ref[rows], -1.0f);  // past the rows: untouched
    }
  }
}

TEST(FlashAttention, MatchesReferenceAcrossShapesAndMasks) {
  for (int64_t L : {1, 5, 33, 70}) {
    for (int64_t S : {1, 6, 64, 150}) {
      for (int64_t Dh : {1, 7, 16, 64}) {
        for (int flags = 0; flags < 16; ++flags) {
          const HeadCase c{L, S, Dh, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0, (flags & 8) != 0,
                           (flags & 1) ? 3 : 0};
          SCOPED_TRACE(testing::Message() << "L=" << L << " S=" << S << " Dh=" << Dh << " flags=" << flags);
          check_head(c);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Every score-step variant (score_epilogue.hpp) alone and combined, with masks, value heads of
// another size, weights and query blocks that start late (a KV cache's positions).
TEST(FlashAttention, ScoreEpilogueMatchesReference) {
  std::mt19937 rng(2024);
  const auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  for (int trial = 0; trial < 600; ++trial) {
    HeadCase c{pick({1, 5, 33, 70, 200}), pick({1, 6, 64, 150, 300}), pick({1, 8, 16, 64}), rng() % 2 == 0,
               rng() % 3 == 0, rng() % 4 == 0, rng() % 2 == 0, pick({0, 3, 130})};
    c.Dv = pick({0, 1, 5, 24});
    c.epilogue.window = pick({0, 0, 1, 5, 40, 128, 500});
    if (rng() % 3 == 0) c.epilogue.softcap = rng() % 2 ? 1.5f : 30.0f;
    if (rng() % 3 == 0) c.epilogue.alibi_slope = rng() % 2 ? 0.3f : 0.0039f;
    if (rng() % 3 == 0) c.epilogue.sink = rng() % 2 ? 0.7f : -2.0f;
    SCOPED_TRACE(testing::Message() << "trial " << trial << " L=" << c.L << " S=" << c.S << " Dh=" << c.Dh
                                    << " Dv=" << c.Dv << " causal=" << c.causal << " window=" << c.epilogue.window
                                    << " softcap=" << c.epilogue.softcap << " alibi=" << c.epilogue.alibi_slope
                                    << " sink=" << c.epilogue.sink << " first_query=" << c.first_query
                                    << " masks=" << c.key_mask << c.attn_mask << " weights=" << c.weights);
    check_head(c);
    if (HasFatalFailure()) return;
  }
}

// The decode kernel (a few query rows, keys read in place) against the same reference, with every
// mask and variant.
TEST(DecodeAttention, MatchesReferenceWithEveryMaskAndVariant) {
  std::mt19937 rng(7);
  const auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  for (int trial = 0; trial < 800; ++trial) {
    HeadCase c{pick({1, 2, 3, 5}), pick({1, 6, 64, 150, 300}), pick({1, 7, 16, 64}), rng() % 2 == 0,
               rng() % 3 == 0, rng() % 4 == 0, rng() % 2 == 0, pick({0, 3, 140, 297})};
    c.Dv = pick({0, 1, 5, 24});
    c.decode = true;
    c.epilogue.window = pick({0, 0, 1, 5, 40});
    if (rng() % 3 == 0) c.epilogue.softcap = rng() % 2 ? 1.5f : 30.0f;
    if (rng() % 3 == 0) c.epilogue.alibi_slope = 0.3f;
    if (rng() % 3 == 0) c.epilogue.sink = 0.7f;
    SCOPED_TRACE(testing::Message() << "trial " << trial << " L=" << c.L << " S=" << c.S << " Dh=" << c.Dh
                                    << " Dv=" << c.Dv << " causal=" << c.causal << " window=" << c.epilogue.window
                                    << " first_query=" << c.first_query << " masks=" << c.key_mask << c.attn_mask);
    check_head(c);
    if (HasFatalFailure()) return;
  }
}

TEST(ScoreEpilogue, VisibleKeysFollowCausalAndWindow) {
  using mha::kernels::visible_keys;
  mha::kernels::ScoreEpilogue e;
  e.causal = true;
  e.window = 3;  // Mistral: position 10 sees 8, 9, 10
  EXPECT_EQ(visible_keys(e, 10, 100).begin, 8);
  EXPECT_EQ(visible_keys(e, 10, 100).end, 11);
  EXPECT_EQ(visible_keys(e, 1, 100).begin, 0);
  e.causal = false;  // Keras: |i - j| < 3
  EXPECT_EQ(visible_keys(e, 10, 100).begin, 8);
  EXPECT_EQ(visible_keys(e, 10, 100).end, 13);
  EXPECT_EQ(visible_keys(e, 99, 100).end, 100);
  EXPECT_EQ(visible_keys(e, 200, 100).begin, visible_keys(e, 200, 100).end);  // nothing visible
}

TEST(FlashAttention, BlockedKeysAreNeverReadAndFullyBlockedRowsAreZero) { check_blocked_keys_are_never_read(); }

TEST(FlashAttention, NaNScoresReachTheOutputLikeTheReference) { check_nan_scores_reach_the_output(); }

}  // namespace

// The output gate's SIMD sigmoid (fast_exp of -|x|) against its scalar twin (std::exp): every
// lane count and tail, logits from far negative to far positive, and a NaN staying NaN.
TEST(OutputGate, MatchesReferenceAndItsBackwardIsTheProductRule) {
  std::mt19937 rng(7);
  const auto uniform = [&](int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
  };
  for (int64_t n : {1, 3, 4, 5, 16, 17, 63}) {
    std::vector<float> logits = uniform(n, -40.0f, 40.0f), z = uniform(n, -2.0f, 2.0f);
    if (n > 3) logits[1] = 0.0f, logits[2] = -1e30f, logits[3] = 1e30f;
    std::vector<float> gate = logits, gate_ref = logits, out(n), out_ref(n);
    mha::kernels::output_gate({z.data(), gate.data(), out.data(), n});
    mha::kernels::output_gate_reference({z.data(), gate_ref.data(), out_ref.data(), n});
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(gate[i], gate_ref[i], 3e-7f) << "n " << n << " logit " << logits[i];
      EXPECT_NEAR(out[i], out_ref[i], 3e-7f * (1 + std::fabs(out_ref[i])));
      EXPECT_GE(gate[i], 0.0f);
      EXPECT_LE(gate[i], 1.0f);
    }
    // Backward: d_z = d ⊙ s and d_logits = d ⊙ z ⊙ s (1 - s), also written in place over d.
    std::vector<float> d = uniform(n, -1.0f, 1.0f), d_logits(n), d_z = d;
    mha::kernels::output_gate_backward({d_z.data(), z.data(), gate_ref.data(), d_z.data(), d_logits.data(), n});
    for (int64_t i = 0; i < n; ++i) {
      const float s = gate_ref[i];
      EXPECT_FLOAT_EQ(d_z[i], d[i] * s);
      EXPECT_FLOAT_EQ(d_logits[i], d[i] * z[i] * s * (1.0f - s));
    }
  }
  // A NaN logit gives NaN, in a SIMD lane and in the tail.
  std::vector<float> logits(33, 0.0f), z(33, 1.0f), out(33);
  logits[0] = logits[32] = std::numeric_limits<float>::quiet_NaN();
  mha::kernels::output_gate({z.data(), logits.data(), out.data(), 33});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[32]));
  EXPECT_EQ(out[1], 0.5f);
}

// The q/k norms' SIMD kernel against its double-summing twin: per head (groups of headDim, one
// weight shared) and over the projection (one group), on sizes with and without a SIMD tail,
// rows with a stride beyond their groups (left alone), and a zero group with eps 0 (NaN, as torch).
TEST(QkNorm, MatchesReferenceAndNormalizesEachGroup) {
  for (int64_t size : {1, 3, 4, 8, 13, 64, 128}) {
    for (int64_t groups : {1, 3}) {
      const int64_t rows = 5, stride = groups * size + 2;
      std::vector<float> x = random_vector(static_cast<size_t>(rows * stride), 11 + static_cast<unsigned>(size));
      std::vector<float> weight = random_vector(static_cast<size_t>(size), 5);
      for (float& w : weight) w += 1.5f;
      std::vector<float> fast = x, reference = x;
      mha::kernels::qk_norm({fast.data(), rows, stride, groups, size, weight.data(), 1e-6f});
      mha::kernels::qk_norm_reference({reference.data(), rows, stride, groups, size, weight.data(), 1e-6f});
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(fast[i], reference[i], 2e-6f * (1 + std::fabs(reference[i]))) << "size " << size << " [" << i << "]";
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g = 0; g < groups; ++g) {  // the mean of (y / w)^2 is 1 / (1 + eps / mean(x^2))
          const float* in = x.data() + r * stride + g * size;
          const float* out = reference.data() + r * stride + g * size;
          double in_squares = 0, out_squares = 0;
          for (int64_t i = 0; i < size; ++i) {
            in_squares += double(in[i]) * in[i];
            out_squares += double(out[i] / weight[i]) * (out[i] / weight[i]);
          }
          EXPECT_NEAR(out_squares / size, 1.0 / (1.0 + 1e-6 / (in_squares / size)), 1e-5);
        }
        for (int64_t i = groups * size; i < stride; ++i) EXPECT_EQ(fast[r * stride + i], x[r * stride + i]);
      }
    }
  }
  std::vector<float> zeros(8, 0.0f), ones(8, 1.0f);
  mha::kernels::qk_norm({zeros.data(), 1, 8, 1, 8, ones.data(), 0.0f});
  EXPECT_TRUE(std::isnan(zeros[0]));
}
