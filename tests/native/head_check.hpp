// One attention head through the fast kernel (attention_head: the variant the process's kernel
// choice runs) and its reference twin, compared at the reference's tolerance; and the fast kernel's
// NaN and blocked-key rules. kernels_test.cpp runs them on the chosen variant, and
// flash_variants_test.cpp on every variant forced in turn.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "random_vector.hpp"
#include "mha/kernels/attention_kernel.hpp"

namespace head_check {

using mha::kernels::AttentionHeadArgs;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-4 * std::abs(want[i])) << what << "[" << i << "]";
}

struct HeadCase {
  int64_t L, S, Dh;
  bool causal, key_mask, attn_mask, weights;
  int64_t first_query;
  int64_t Dv = 0;                           // value head size; 0 = Dh
  mha::kernels::ScoreEpilogue epilogue{};  // window, softcap, ALiBi, sink
  bool decode = false;                      // attention_head_decode instead of the flash kernel
};

// Runs one head through both kernels; q/k/v rows are strided like inside the layer.
inline void check_head(const HeadCase& c) {
  const int64_t Dv = c.Dv ? c.Dv : c.Dh, stride = std::max(c.Dh, Dv) + 3;
  const auto q = random_vector(c.L * stride, 7), k = random_vector(c.S * stride, 8), v = random_vector(c.S * stride, 9);
  std::vector<float> key_bias(c.S, 0.0f), attn_bias = random_vector(c.L * c.S, 10);
  for (int64_t j = 0; j < c.S; j += 3) key_bias[j] = kNegInf;
  for (int64_t i = 0; i < c.L * c.S; i += 5) attn_bias[i] = kNegInf;
  std::vector<float> out_fast(c.L * stride, 0.0f), out_ref(c.L * stride, 0.0f);
  std::vector<float> w_fast(c.L * c.S, 0.25f), w_ref(c.L * c.S, 0.25f);
  AttentionHeadArgs a{};
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.q_stride = a.k_stride = a.v_stride = a.out_stride = stride;
  a.query_len = c.L;
  a.key_len = c.S;
  a.head_dim = c.Dh;
  a.value_head_dim = c.Dv;
  a.scale = 0.7f;
  a.causal = c.causal;
  a.epilogue = c.epilogue;
  a.first_query = c.first_query;
  a.key_bias = c.key_mask ? key_bias.data() : nullptr;
  a.attn_bias = c.attn_mask ? attn_bias.data() : nullptr;
  a.weights_factor = 0.5f;
  a.out = out_ref.data();
  a.weights = c.weights ? w_ref.data() : nullptr;
  mha::kernels::attention_head_reference(a);
  a.out = out_fast.data();
  a.weights = c.weights ? w_fast.data() : nullptr;
  if (c.decode)
    mha::kernels::attention_head_decode(a);
  else
    mha::kernels::attention_head(a);
  expect_close(out_fast, out_ref, "out");
  if (c.weights) expect_close(w_fast, w_ref, "weights");
}

// One head whose q/k/v/out rows are head_dim apart; scale and masks left to the caller.
inline AttentionHeadArgs contiguous_head(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, std::vector<float>& out, int64_t L, int64_t S,
                                  int64_t Dh) {
  AttentionHeadArgs a{};
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.out = out.data();
  a.q_stride = a.k_stride = a.v_stride = a.out_stride = Dh;
  a.query_len = L;
  a.key_len = S;
  a.head_dim = Dh;
  return a;
}

inline void check_blocked_keys_are_never_read() {
  const int64_t L = 9, S = 40, Dh = 8;
  auto q = random_vector(L * Dh, 11), k = random_vector(S * Dh, 12), v = random_vector(S * Dh, 13);
  std::vector<float> key_bias(S, 0.0f), attn_bias(L * S, 0.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t j = 30; j < S; ++j) {  // padded keys hold NaN and Inf
    key_bias[j] = kNegInf;
    for (int64_t d = 0; d < Dh; ++d) k[j * Dh + d] = v[j * Dh + d] = (d % 2) ? nan : INFINITY;
  }
  for (int64_t j = 0; j < S; ++j) attn_bias[2 * S + j] = kNegInf;  // row 2: every key blocked
  for (int64_t d = 0; d < Dh; ++d) v[5 * Dh + d] = nan;           // key 5 blocked for row 4 only
  attn_bias[4 * S + 5] = kNegInf;
  std::vector<float> out(L * Dh, 1.0f), weights(L * S, 0.0f);
  AttentionHeadArgs a = contiguous_head(q, k, v, out, L, S, Dh);
  a.scale = 0.3f;
  a.key_bias = key_bias.data();
  a.attn_bias = attn_bias.data();
  a.weights = weights.data();
  a.weights_factor = 1.0f;
  mha::kernels::attention_head(a);
  for (int64_t d = 0; d < Dh; ++d) {
    EXPECT_EQ(out[2 * Dh + d], 0.0f);
    EXPECT_TRUE(std::isfinite(out[4 * Dh + d])) << "row 4 dim " << d;
  }
  for (int64_t j = 0; j < S; ++j) EXPECT_EQ(weights[2 * S + j], 0.0f);
  EXPECT_EQ(weights[4 * S + 5], 0.0f);
  double row0 = 0.0;
  for (int64_t j = 0; j < S; ++j) row0 += weights[j];
  EXPECT_NEAR(row0, 1.0, 1e-5);
}

inline void check_nan_scores_reach_the_output() {
  const int64_t L = 3, S = 20, Dh = 8;
  auto q = random_vector(L * Dh, 14), k = random_vector(S * Dh, 15), v = random_vector(S * Dh, 16);
  q[1 * Dh + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1: every score NaN
  k[7 * Dh + 3] = std::numeric_limits<float>::quiet_NaN();  // key 7: NaN for every row...
  std::vector<float> key_bias(S, 0.0f);
  key_bias[7] = kNegInf;  // ...but blocked
  for (bool weights : {false, true}) {
    std::vector<float> out(L * Dh), w(L * S, 0.0f);
    AttentionHeadArgs a = contiguous_head(q, k, v, out, L, S, Dh);
    a.scale = 0.5f;
    a.key_bias = key_bias.data();
    a.weights = weights ? w.data() : nullptr;
    a.weights_factor = 1.0f;
    mha::kernels::attention_head(a);
    for (int64_t d = 0; d < Dh; ++d) {
      EXPECT_TRUE(std::isnan(out[1 * Dh + d]));
      EXPECT_TRUE(std::isfinite(out[0 * Dh + d]));
      EXPECT_TRUE(std::isfinite(out[2 * Dh + d]));
    }
    if (weights) EXPECT_TRUE(std::isnan(w[1 * S + 0]));
  }
}

}  // namespace head_check
