// The q/k norms of Qwen3, Gemma 3 and OLMo-2 (attention_config.hpp, QkNorm): RMSNorm of the
// projected queries or keys, before rotary, in place. Each row holds `groups` groups of `size`
// features (the heads, or the whole projection as one group); each group becomes
//
//   x <- x / sqrt(mean(x^2) + eps) * w
//
// with w [size] shared by every group (per head) or one group's own (over the projection).
// Hugging Face's Qwen3RMSNorm / Olmo2RMSNorm compute it in float32 as here.
// The one place the norm is applied (forward, step path, cross-attention keys).
#pragma once

#include <cstdint>

namespace mha::kernels {

struct QkNormArgs {
  float* x;            // row r, group g starts at x + r * row_stride + g * size
  int64_t rows;
  int64_t row_stride;  // floats from one row to the next
  int64_t groups;      // per row
  int64_t size;        // features per group
  const float* weight; // [size]
  float eps;
};

// Portable scalar twin (sums in double): the definition the fast kernel is tested against.
void qk_norm_reference(const QkNormArgs& args);

// The kernel the layer runs (SIMD sums of squares and scaling, qk_norm.cpp).
void qk_norm(const QkNormArgs& args);

}  // namespace mha::kernels
