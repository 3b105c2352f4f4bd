// mha-wasm/models' norms of the residual stream, in wasm: LayerNorm (with a bias) or RMSNorm
// (without) over each row of width E, with the residual add that comes before it fused in:
//
//   x <- x + add                       (when add is given: the block's residual add)
//   out <- (x - mean) / sqrt(var + eps) * w + b     (LayerNorm)
//   out <- x / sqrt(mean(x^2) + eps) * w            (RMSNorm)
//
// Sums and scaling in double, as the JavaScript loops they replace (row_norm.cpp says why); Gemma's
// 1 + w is folded into w at load. Those loops (bindings/js/models/elementwise.js) stay the hooked
// path's, where the scale and the normalized rows are hook points of their own.
#pragma once

#include <cstdint>

namespace mha::kernels {

struct RowNormArgs {
  float* x;             // [rows, width]: the residual rows, x += add first when add is given
  const float* add;     // [rows, width] or nullptr
  float* out;           // [rows, width]: the normalized rows (not x)
  int64_t rows;
  int64_t width;
  const float* weight;  // [width]
  const float* bias;    // [width] for LayerNorm; nullptr for RMSNorm
  float eps;
};

// Portable scalar twin (sums in double): the definition the fast kernel is tested against.
void row_norm_reference(const RowNormArgs& args);

// The kernel the models run (row_norm.cpp).
void row_norm(const RowNormArgs& args);

}  // namespace mha::kernels
