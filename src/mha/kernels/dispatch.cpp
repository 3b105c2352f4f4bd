// Chooses the kernel each entry point runs in this build: the SIMD (or, in the scalar wasm
// build, one-lane) blocked kernels; the *_reference twins stay for tests.
#include "attention_kernel.hpp"
#include "linear.hpp"
#include "packed_linear.hpp"
#include "simd.hpp"

namespace mha::kernels {

void linear(const LinearArgs& a) {
  PackedLinear(a.weight, a.bias, a.out_features, a.in_features).apply(a.x, a.y, 0, a.rows);
}

void attention_head(const AttentionHeadArgs& args) { attention_head_flash(args); }

void attention_head_backward(const AttentionBackwardArgs& args) { attention_head_backward_flash(args); }

int64_t decode_query_rows() { return simd::kTileRows; }

}  // namespace mha::kernels
