// The attention kernels' training side: the backward kernels (the fast one against its reference
// twin, the reference against finite differences of the forward), the forward's lse output, and
// dropout's mask (Philox) in both forward kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

}  // namespace
