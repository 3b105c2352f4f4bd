// The attention kernels' training side: the backward kernels (the fast one against its reference
// twin, the reference against finite differences of the forward), the forward's lse output, and
// dropout's mask (Philox) in both forward kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "random_vector.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/dropout.hpp"

namespace {

using mha::kernels::AttentionBackwardArgs;
using mha::kernels::AttentionHeadArgs;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// One head's inputs, masks and options; rows strided like inside the layer.
struct Head {
  int64_t L = 1, S = 1, Dh = 1, Dv = 1;
  bool causal = false, key_mask = false, attn_mask = false;
  int64_t first_query = 0;
  mha::kernels::ScoreEpilogue epilogue{};
  mha::kernels::DropoutArgs dropout{};
  unsigned seed = 1;
  int64_t stride = 0;
  std::vector<float> q, k, v, key_bias, attn_bias, out, lse, d_out;

  void make() {
    stride = std::max(Dh, Dv) + 3;
    q = random_vector(L * stride, seed);
    k = random_vector(S * stride, seed + 1);
    v = random_vector(S * stride, seed + 2);
    d_out = random_vector(L * stride, seed + 3);
    key_bias.assign(S, 0.0f);
    attn_bias = random_vector(L * S, seed + 4);
    for (int64_t j = 0; j < S; j += 3) key_bias[j] = kNegInf;
    for (int64_t i = 0; i < L * S; i += 5) attn_bias[i] = kNegInf;
    out.assign(L * stride, 0.0f);
    lse.assign(L, 0.0f);
  }

  AttentionHeadArgs args() {
    AttentionHeadArgs a{};
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    a.q_stride = a.k_stride = a.v_stride = a.out_stride = stride;
    a.query_len = L;
    a.key_len = S;
    a.head_dim = Dh;
    a.value_head_dim = Dv;
    a.scale = 0.6f;
    a.causal = causal;
    a.epilogue = epilogue;
    a.first_query = first_query;
    a.key_bias = key_mask ? key_bias.data() : nullptr;
    a.attn_bias = attn_mask ? attn_bias.data() : nullptr;
    a.lse = lse.data();
    a.dropout = dropout;
    return a;
  }

  // The reference forward: out and lse.
  void forward() {
    const AttentionHeadArgs a = args();
    mha::kernels::attention_head_reference(a);
  }
};

struct Grads {
  std::vector<float> q, k, v;
  float sink = 0.0f;
};

// Backward over the given key pieces (each [begin, end)), adding into g.
void backward(Head& h, Grads& g, bool fast, const std::vector<std::pair<int64_t, int64_t>>& pieces,
              bool own_scratch = false) {
  AttentionBackwardArgs b{};
  b.forward = h.args();
  b.lse = h.lse.data();
  b.d_out = h.d_out.data();
  b.d_q = g.q.data();
  b.d_k = g.k.data();
  b.d_v = g.v.data();
  b.d_out_stride = h.stride;
  b.d_q_stride = h.Dh;
  b.d_k_stride = h.Dh + 1;
  b.d_v_stride = h.Dv;
  b.d_sink = &g.sink;
  std::vector<float> scratch;
  for (const auto& [begin, end] : pieces) {
    b.key_begin = begin;
    b.key_end = end;
    if (fast) {
      if (!own_scratch) {  // the caller's scratch, filled with NaN: the kernel must not read what it did not write
        scratch.assign(static_cast<size_t>(mha::kernels::attention_backward_scratch_floats(b)), kNaN);
        b.scratch = scratch.data();
      }
      mha::kernels::attention_head_backward(b);
    } else {
      mha::kernels::attention_head_backward_reference(b);
    }
  }
}

Grads zero_grads(const Head& h) {
  Grads g;
  g.q.assign(h.L * h.Dh, 0.0f);
  g.k.assign(h.S * (h.Dh + 1), 0.0f);
  g.v.assign(h.S * h.Dv, 0.0f);
  return g;
}

// |got - want| <= tol * (1 + max |want|) elementwise: gradients are sums of many products.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  float scale = 0.0f;
  for (float x : want) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + scale)) << what << "[" << i << "]";
}

std::string describe(const Head& h) {
  std::ostringstream s;
  s << "L=" << h.L << " S=" << h.S << " Dh=" << h.Dh << " Dv=" << h.Dv << " causal=" << h.causal
    << " masks=" << h.key_mask << h.attn_mask << " first_query=" << h.first_query << " window=" << h.epilogue.window
    << " softcap=" << h.epilogue.softcap << " alibi=" << h.epilogue.alibi_slope << " sink=" << h.epilogue.sink
    << " dropout=" << h.dropout.p << " seed=" << h.seed;
  return s.str();
}

Head random_head(std::mt19937& rng, unsigned seed) {
  const auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  Head h;
  h.L = pick({1, 2, 5, 33, 64, 70, 131});
  h.S = pick({1, 3, 6, 64, 65, 150, 257});
  h.Dh = pick({1, 3, 8, 16, 33, 64});
  h.Dv = rng() % 2 ? h.Dh : pick({1, 5, 24, 40});
  h.causal = rng() % 2 == 0;
  h.key_mask = rng() % 3 == 0;
  h.attn_mask = rng() % 4 == 0;
  h.first_query = pick({0, 0, 3, 130});
  h.epilogue.window = pick({0, 0, 0, 1, 5, 40, 128});
  if (rng() % 3 == 0) h.epilogue.softcap = rng() % 2 ? 1.5f : 30.0f;
  if (rng() % 3 == 0) h.epilogue.alibi_slope = rng() % 2 ? 0.3f : 0.0039f;
  if (rng() % 3 == 0) h.epilogue.sink = rng() % 2 ? 0.7f : -2.0f;
  if (rng() % 3 == 0) h.dropout = {rng() % 2 ? 0.1f : 0.5f, rng(), static_cast<uint64_t>(rng() % 7)};
  h.seed = seed;
  h.make();
  return h;
}

TEST(AttentionBackward, FastMatchesReferenceOnRandomArgs) {
  std::mt19937 rng(22);
  for (int trial = 0; trial < 400; ++trial) {
    Head h = random_head(rng, 100 + trial);
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << describe(h));
    h.forward();
    Grads ref = zero_grads(h), fast = zero_grads(h);
    backward(h, ref, false, {{0, h.S}});
    backward(h, fast, true, {{0, h.S}}, trial % 4 == 0);
    expect_close(fast.q, ref.q, 2e-5f, "dq");
    expect_close(fast.k, ref.k, 2e-5f, "dk");
    expect_close(fast.v, ref.v, 2e-5f, "dv");
    EXPECT_NEAR(fast.sink, ref.sink, 2e-5f * (1.0f + std::abs(ref.sink)));
    if (HasFatalFailure()) return;
  }
}

// Threads split a head's keys into ranges; a GQA group adds several heads into one dK / dV.
TEST(AttentionBackward, KeyPiecesAndGroupedHeadsAccumulate) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 120; ++trial) {
    Head h = random_head(rng, 900 + trial);
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << describe(h));
    h.forward();
    // Pieces of the keys (lengths from 1 to more than a key block) add up to the whole.
    std::vector<std::pair<int64_t, int64_t>> pieces;
    for (int64_t begin = 0; begin < h.S;) {
      const int64_t end = std::min<int64_t>(h.S, begin + 1 + rng() % 150);
      pieces.push_back({begin, end});
      begin = end;
    }
    Grads whole = zero_grads(h), split = zero_grads(h), ref = zero_grads(h);
    backward(h, whole, true, {{0, h.S}});
    backward(h, split, true, pieces);
    backward(h, ref, false, pieces);
    // A second head sharing k and v: its q, dO (and output, lse) differ.
    Head h2 = h;
    h2.q = random_vector(h.L * h.stride, h.seed + 50);
    h2.d_out = random_vector(h.L * h.stride, h.seed + 51);
    h2.forward();
    backward(h2, split, true, pieces);
    backward(h2, ref, false, {{0, h.S}});
    Grads second = zero_grads(h);
    backward(h2, second, true, {{0, h.S}});
    for (size_t x = 0; x < whole.k.size(); ++x) whole.k[x] += second.k[x];
    for (size_t x = 0; x < whole.v.size(); ++x) whole.v[x] += second.v[x];
    expect_close(split.k, ref.k, 2e-5f, "dk (pieces, two heads) vs reference");
    expect_close(split.v, ref.v, 2e-5f, "dv (pieces, two heads) vs reference");
    expect_close(split.k, whole.k, 2e-5f, "dk (pieces) vs whole");
    expect_close(split.v, whole.v, 2e-5f, "dv (pieces) vs whole");
    expect_close(split.q, ref.q, 2e-5f, "dq (two heads' q gradients in one buffer)");
    EXPECT_NEAR(split.sink, ref.sink, 2e-5f * (1.0f + std::abs(ref.sink)));
    if (HasFatalFailure()) return;
  }
}

// Same inputs, same bits: no order-dependent accumulation (dropout included), with the caller's
// scratch or the kernel's own.
TEST(AttentionBackward, IsDeterministic) {
  Head h;
  h.L = 150;
  h.S = 200;
  h.Dh = 24;
  h.Dv = 24;
  h.causal = true;
  h.epilogue.softcap = 5.0f;
  h.dropout = {0.2f, 77, 3};
  h.make();
  h.forward();
  Grads first = zero_grads(h), second = zero_grads(h);
  backward(h, first, true, {{0, h.S}});
  backward(h, second, true, {{0, h.S}}, true);
  EXPECT_EQ(first.q, second.q);
  EXPECT_EQ(first.k, second.k);
  EXPECT_EQ(first.v, second.v);
}

// Keys blocked for every row (key padding) and a key blocked for some rows hold NaN and Inf:
// no gradient of a row that cannot see them is touched; a row with every key blocked has zero
// gradients and adds nothing, even with NaN in its q and dO.
TEST(AttentionBackward, BlockedKeysAndRowsGiveFiniteGradients) {
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast" : "reference");
    Head h;
    h.L = 70;
    h.S = 150;
    h.Dh = 16;
    h.Dv = 8;
    h.key_mask = h.attn_mask = true;
    h.epilogue.sink = 0.5f;
    h.make();
    std::fill(h.attn_bias.begin(), h.attn_bias.end(), 0.0f);
    std::fill(h.key_bias.begin(), h.key_bias.end(), 0.0f);
    for (int64_t j = 140; j < h.S; ++j) {  // padding keys: NaN and Inf in k and v
      h.key_bias[j] = kNegInf;
      for (int64_t d = 0; d < h.Dh; ++d) h.k[j * h.stride + d] = d % 2 ? kNaN : INFINITY;
      for (int64_t d = 0; d < h.Dv; ++d) h.v[j * h.stride + d] = d % 2 ? INFINITY : kNaN;
    }
    // Key 5: NaN k and v, blocked for every row through the attention mask.
    for (int64_t d = 0; d < h.Dh; ++d) h.k[5 * h.stride + d] = kNaN;
    for (int64_t d = 0; d < h.Dv; ++d) h.v[5 * h.stride + d] = kNaN;
    for (int64_t i = 0; i < h.L; ++i) h.attn_bias[i * h.S + 5] = kNegInf;
    // Row 3: every key blocked; its q and dO hold NaN.
    for (int64_t j = 0; j < h.S; ++j) h.attn_bias[3 * h.S + j] = kNegInf;
    h.forward();
    EXPECT_EQ(h.lse[3], kNegInf);
    for (int64_t d = 0; d < h.Dh; ++d) h.q[3 * h.stride + d] = kNaN;
    for (int64_t d = 0; d < h.Dv; ++d) h.d_out[3 * h.stride + d] = kNaN;
    Grads g = zero_grads(h);
    backward(h, g, fast, {{0, h.S}});
    for (float x : g.q) ASSERT_TRUE(std::isfinite(x));
    for (float x : g.k) ASSERT_TRUE(std::isfinite(x));
    for (float x : g.v) ASSERT_TRUE(std::isfinite(x));
    EXPECT_TRUE(std::isfinite(g.sink));
    for (int64_t d = 0; d < h.Dh; ++d) EXPECT_EQ(g.q[3 * h.Dh + d], 0.0f);
    for (int64_t j = 140; j < h.S; ++j)
      for (int64_t d = 0; d < h.Dv; ++d) EXPECT_EQ(g.v[j * h.Dv + d], 0.0f);
    // Now key 5 is visible to rows 10.. (the NaN is theirs to see): rows 0..9 stay finite.
    for (int64_t i = 10; i < h.L; ++i)
      if (i != 3) h.attn_bias[i * h.S + 5] = 0.0f;
    h.forward();
    Grads g2 = zero_grads(h);
    backward(h, g2, fast, {{0, h.S}});
    for (int64_t i = 0; i < 10; ++i)
      for (int64_t d = 0; d < h.Dh; ++d) ASSERT_TRUE(std::isfinite(g2.q[i * h.Dh + d])) << "row " << i;
    EXPECT_TRUE(std::isnan(g2.q[20 * h.Dh]));
  }
}

// The loss sum(out * G) of the reference forward, in double.
double loss(Head& h, const std::vector<float>& G) {
  h.forward();
  double sum = 0.0;
  for (int64_t i = 0; i < h.L; ++i)
    for (int64_t d = 0; d < h.Dv; ++d) sum += static_cast<double>(h.out[i * h.stride + d]) * G[i * h.stride + d];
  return sum;
}

// The reference backward against central differences of the reference forward (float outputs,
// the loss summed in double), with dO = G. eps = 1e-2 on inputs of size ~1: the truncation error
// (eps^2 / 6 times the third derivative) and the rounding noise (~1e-7 relative outputs over
// 2 eps) gave at most 1.1e-5 over these 60 cases (MHA_PRINT_FD=1 prints each case's worst), under
// the tolerance 2e-4 (1 + |g|); a wrong term (softcap's derivative, the sink's sign) is off by 1e-2 or more.
TEST(AttentionBackward, ReferenceMatchesFiniteDifferences) {
  std::mt19937 rng(31);
  const float eps = 1e-2f;
  for (int trial = 0; trial < 60; ++trial) {
    const auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
    Head h;
    h.L = pick({1, 3, 6});
    h.S = pick({1, 4, 7});
    h.Dh = pick({1, 3, 4});
    h.Dv = pick({1, 2, 4});
    h.causal = rng() % 2;
    h.key_mask = rng() % 3 == 0;
    h.attn_mask = rng() % 3 == 0;
    h.first_query = pick({0, 2});
    h.epilogue.window = pick({0, 0, 2});
    if (rng() % 2) h.epilogue.softcap = 1.5f;
    if (rng() % 2) h.epilogue.alibi_slope = 0.3f;
    if (rng() % 2) h.epilogue.sink = 0.4f;
    if (rng() % 3 == 0) h.dropout = {0.3f, 1234u + trial, 1};
    h.seed = 500 + trial;
    h.make();
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << describe(h));
    const std::vector<float> G = h.d_out;
    h.forward();
    Grads g = zero_grads(h);
    backward(h, g, false, {{0, h.S}});
    double worst = 0.0;
    const auto check = [&](float& x, float analytic, const char* what, int64_t index) {
      const float saved = x;
      x = saved + eps;
      const double plus = loss(h, G);
      x = saved - eps;
      const double minus = loss(h, G);
      x = saved;
      const double numeric = (plus - minus) / (2.0 * eps);
      worst = std::max(worst, std::abs(analytic - numeric));
      EXPECT_NEAR(analytic, numeric, 2e-4 * (1.0 + std::abs(numeric))) << what << "[" << index << "]";
    };
    for (int64_t i = 0; i < h.L; ++i)
      for (int64_t d = 0; d < h.Dh; ++d) check(h.q[i * h.stride + d], g.q[i * h.Dh + d], "dq", i * h.Dh + d);
    for (int64_t j = 0; j < h.S; ++j) {
      for (int64_t d = 0; d < h.Dh; ++d) check(h.k[j * h.stride + d], g.k[j * (h.Dh + 1) + d], "dk", j * h.Dh + d);
      for (int64_t d = 0; d < h.Dv; ++d) check(h.v[j * h.stride + d], g.v[j * h.Dv + d], "dv", j * h.Dv + d);
    }
    if (h.epilogue.has_sink()) check(h.epilogue.sink, g.sink, "d_sink", 0);
    if (getenv("MHA_PRINT_FD")) std::printf("trial %d worst |analytic - numeric| %.2e\n", trial, worst);
    if (HasFailure()) return;
  }
}

// lse against log(sum exp) of the scores computed here in double (sink included; -inf when every
// key is blocked, sink or not), from both forward kernels.
TEST(AttentionForward, LseIsTheRowsLogSumExp) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 200; ++trial) {
    Head h = random_head(rng, 300 + trial);
    h.dropout = {};
    if (trial % 5 == 0) {  // every other row with every key blocked
      h.attn_mask = true;
      for (int64_t i = 0; i < h.L; i += 2) std::fill(h.attn_bias.begin() + i * h.S, h.attn_bias.begin() + (i + 1) * h.S, kNegInf);
    }
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << describe(h));
    mha::kernels::ScoreEpilogue e = h.epilogue;
    e.causal = h.causal;
    std::vector<double> want(h.L);
    for (int64_t i = 0; i < h.L; ++i) {
      const int64_t pos = h.first_query + i;
      const auto visible = mha::kernels::visible_keys(e, pos, h.S);
      double sum = 0.0;
      bool any = false;
      for (int64_t j = visible.begin; j < visible.end; ++j) {
        if ((h.key_mask && h.key_bias[j] == kNegInf) || (h.attn_mask && h.attn_bias[i * h.S + j] == kNegInf)) continue;
        double s = 0.0;
        for (int64_t d = 0; d < h.Dh; ++d) s += static_cast<double>(h.q[i * h.stride + d]) * h.k[j * h.stride + d];
        s *= 0.6;
        if (e.softcap > 0) s = e.softcap * std::tanh(s / e.softcap);
        s -= e.alibi_slope * std::abs(static_cast<double>(pos - j));
        if (h.attn_mask) s += h.attn_bias[i * h.S + j];
        sum += std::exp(s);
        any = true;
      }
      if (e.has_sink()) sum += std::exp(static_cast<double>(e.sink));
      want[i] = any ? std::log(sum) : -INFINITY;
    }
    for (bool fast : {false, true}) {
      std::fill(h.lse.begin(), h.lse.end(), 12345.0f);
      AttentionHeadArgs a = h.args();
      if (fast)
        mha::kernels::attention_head_flash(a);
      else
        mha::kernels::attention_head_reference(a);
      for (int64_t i = 0; i < h.L; ++i) {
        if (want[i] == -INFINITY) {
          ASSERT_EQ(h.lse[i], kNegInf) << (fast ? "flash" : "reference") << " row " << i;
        } else {
          ASSERT_NEAR(h.lse[i], want[i], 2e-5 * (1.0 + std::abs(want[i]))) << (fast ? "flash" : "reference") << " row " << i;
        }
      }
    }
  }
}

// Philox4x32-10's known-answer vectors (Random123's kat_vectors).
TEST(Dropout, PhiloxMatchesKnownAnswers) {
  using mha::kernels::philox4x32_10;
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, 0, 0), (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u), (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// The fraction kept is 1 - p within 5 standard deviations (sqrt(p (1 - p) / n), n = 2^20 pairs:
// 2.3e-3 at p = 0.3); the batched form agrees with keep(); another stream or seed gives another
// mask (a fraction 2 p (1 - p) of the pairs differ, within 0.01).
TEST(Dropout, MaskKeepsOneMinusPAndDependsOnSeedAndStream) {
  for (float p : {0.1f, 0.3f, 0.5f, 0.9f}) {
    const mha::kernels::DropoutArgs args{p, 0x123456789abcdefull, 5};
    const mha::kernels::DropoutMask mask(args);
    const int64_t rows = 1024, keys = 1024;
    int64_t kept = 0, differ_stream = 0, differ_seed = 0;
    std::vector<float> factors(keys);
    mha::kernels::DropoutArgs other_stream = args, other_seed = args;
    other_stream.stream = 6;
    other_seed.seed += 1;
    const mha::kernels::DropoutMask mask_stream(other_stream), mask_seed(other_seed);
    for (int64_t i = 0; i < rows; ++i) {
      mask.factors(i, 3, keys, factors.data());  // an offset not a multiple of 4
      for (int64_t j = 0; j < keys; ++j) {
        const bool k = mha::kernels::keep(args, i, j + 3);
        ASSERT_EQ(factors[j], k ? 1.0f / (1.0f - p) : 0.0f) << "row " << i << " key " << j + 3;
        kept += k;
        differ_stream += k != mask_stream.keep(i, j + 3);
        differ_seed += k != mask_seed.keep(i, j + 3);
      }
    }
    const double n = static_cast<double>(rows * keys), fraction = kept / n;
    EXPECT_NEAR(fraction, 1.0 - p, 5.0 * std::sqrt(p * (1.0 - p) / n)) << "p=" << p;
    const double expected_differ = 2.0 * p * (1.0 - p);
    EXPECT_NEAR(differ_stream / n, expected_differ, 0.01) << "p=" << p;
    EXPECT_NEAR(differ_seed / n, expected_differ, 0.01) << "p=" << p;
  }
}

// Under dropout the flash forward gives the reference's output, weights (after dropout) and lse,
// and the same bits when run again.
TEST(Dropout, FlashForwardMatchesReference) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    Head h = random_head(rng, 700 + trial);
    h.dropout = {trial % 2 ? 0.2f : 0.6f, 1000u + trial, static_cast<uint64_t>(trial % 3)};
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << describe(h));
    std::vector<float> w_ref(h.L * h.S, 0.0f), w_fast(h.L * h.S, 0.0f), w_again(h.L * h.S, 0.0f);
    AttentionHeadArgs a = h.args();
    a.weights = w_ref.data();
    a.weights_factor = 0.5f;
    mha::kernels::attention_head_reference(a);
    const std::vector<float> out_ref = h.out, lse_ref = h.lse;
    a.weights = w_fast.data();
    mha::kernels::attention_head_flash(a);
    const std::vector<float> out_fast = h.out;
    for (size_t x = 0; x < out_ref.size(); ++x)
      ASSERT_NEAR(out_fast[x], out_ref[x], 1e-5 + 1e-4 * std::abs(out_ref[x])) << "out[" << x << "]";
    for (size_t x = 0; x < w_ref.size(); ++x)
      ASSERT_NEAR(w_fast[x], w_ref[x], 1e-5 + 1e-4 * std::abs(w_ref[x])) << "weights[" << x << "]";
    for (int64_t i = 0; i < h.L; ++i) {
      if (lse_ref[i] == kNegInf)
        ASSERT_EQ(h.lse[i], kNegInf);
      else
        ASSERT_NEAR(h.lse[i], lse_ref[i], 1e-5 + 1e-5 * std::abs(lse_ref[i]));
    }
    a.weights = w_again.data();
    mha::kernels::attention_head_flash(a);
    ASSERT_EQ(h.out, out_fast);
    ASSERT_EQ(w_again, w_fast);
  }
}

// p = 0 is off; dropout changes the output; the same (seed, stream) repeats it, another stream or
// seed changes it.
TEST(Dropout, ChangesTheOutputAndAnotherStreamAnother) {
  Head h;
  h.L = 40;
  h.S = 90;
  h.Dh = h.Dv = 16;
  h.make();
  const auto run = [&](mha::kernels::DropoutArgs d) {
    h.dropout = d;
    AttentionHeadArgs a = h.args();
    mha::kernels::attention_head_flash(a);
    return h.out;
  };
  const auto plain = run({}), zero = run({0.0f, 9, 1}), one = run({0.25f, 9, 1});
  EXPECT_EQ(plain, zero);
  EXPECT_NE(plain, one);
  EXPECT_NE(one, run({0.25f, 9, 2}));
  EXPECT_NE(one, run({0.25f, 10, 1}));
  EXPECT_EQ(one, run({0.25f, 9, 1}));
}

}  // namespace
