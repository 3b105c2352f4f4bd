// nn.Linear's backward as two forward GEMMs (PackedLinear) on transposed operands:
//   d_x      = d_y W      : the GEMM with weight W^T, i.e. PackedLinear::from_transposed(W)
//   d_weight = d_y^T x    : rows of d_y^T against "weight" x^T, i.e. from_transposed(x)
// Both pack their right operand once per call (the layer's backward does the same, per projection).
#include <algorithm>
#include <vector>

#include "linear.hpp"
#include "packed_linear.hpp"
#include "transpose_block.hpp"

namespace mha::kernels {

void linear_backward(const LinearBackwardArgs& a) {
  const int64_t rows = a.rows, in = a.in_features, out = a.out_features;
  if (rows == 0) {  // no rows: the sums are empty
    if (a.d_weight) std::fill(a.d_weight, a.d_weight + out * in, 0.0f);
    if (a.d_bias) std::fill(a.d_bias, a.d_bias + out, 0.0f);
    return;
  }
  if (a.d_x) PackedLinear::from_transposed(a.weight, in, out).apply(a.d_y, a.d_x, 0, rows);
  if (a.d_weight) {
    // d_y^T in 32 x 32 blocks (a plain row-by-row transpose writes `rows` floats apart).
    std::vector<float> d_y_t(static_cast<size_t>(out * rows));
    constexpr int64_t kBlock = 32;
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
      for (int64_t o0 = 0; o0 < out; o0 += kBlock)
        transpose(a.d_y + r0 * out + o0, out, d_y_t.data() + o0 * rows + r0, rows, std::min(kBlock, rows - r0),
                  std::min(kBlock, out - o0));
    PackedLinear::from_transposed(a.x, in, rows).apply(d_y_t.data(), a.d_weight, 0, out);
  }
  if (a.d_bias) {
    std::fill(a.d_bias, a.d_bias + out, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) a.d_bias[o] += a.d_y[r * out + o];
  }
}

}  // namespace mha::kernels
