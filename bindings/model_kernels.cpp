// mha-wasm/models' per-token kernels on heap addresses, for bindings/js/core/row-norm.js: the
// residual stream's norms (src/mha/kernels/row_norm.hpp). The JS wrapper checked the sizes and
// allocated the buffers; 0 is an absent add or bias. A separate EMSCRIPTEN_BINDINGS block.
#include <emscripten/bind.h>

#include <cstdint>

#include "mha/kernels/row_norm.hpp"

namespace {

template <typename T>
T* at(double address) { return reinterpret_cast<T*>(static_cast<uintptr_t>(address)); }

// x [rows, width] (+= add when add != 0), out = LayerNorm (bias != 0) or RMSNorm of it.
void rowNorm(double x, double add, double out, double rows, double width, double weight, double bias, double eps) {
  mha::kernels::row_norm({at<float>(x), at<const float>(add), at<float>(out), static_cast<int64_t>(rows),
                          static_cast<int64_t>(width), at<const float>(weight), at<const float>(bias), static_cast<float>(eps)});
}

}  // namespace

EMSCRIPTEN_BINDINGS(model_kernels) { emscripten::function("rowNorm", &rowNorm); }
