// mha-wasm/models' per-token kernels on heap addresses: the MLP activation
// (bindings/js/core/mlp-activation.js, src/mha/kernels/mlp_activation.hpp) and the residual
// stream's norms (bindings/js/core/row-norm.js, src/mha/kernels/row_norm.hpp). The JS wrappers
// checked the sizes and allocated the buffers; 0 is an absent add or bias.
#include <emscripten/bind.h>

#include <cstdint>
#include <string>

#include "mha/kernels/mlp_activation.hpp"
#include "mha/kernels/row_norm.hpp"
#include "request_keys.hpp"

namespace mha_embind {
namespace {

// mha-wasm/models' MLP activation (bindings/js/core/mlp-activation.js) on heap addresses: out
// [rows, I] = act(gate) * up of [rows, 2I] (gated) or act(x) of [rows, I]; act 'silu' or
// 'gelu_tanh' (the wrapper checked it and the sizes).
void mlpActivation(double in, double rows, double width, std::string act, bool gated, double out) {
  mha::kernels::mlp_activation(at<const float>(in), static_cast<int64_t>(rows), static_cast<int64_t>(width),
                               act == "silu" ? mha::kernels::MlpActivation::kSilu : mha::kernels::MlpActivation::kGeluTanh,
                               gated, at<float>(out));
}

// x [rows, width] (+= add when add != 0), out = LayerNorm (bias != 0) or RMSNorm of it.
void rowNorm(double x, double add, double out, double rows, double width, double weight, double bias, double eps) {
  mha::kernels::row_norm({at<float>(x), at<const float>(add), at<float>(out), static_cast<int64_t>(rows),
                          static_cast<int64_t>(width), at<const float>(weight), at<const float>(bias), static_cast<float>(eps)});
}

}  // namespace
}  // namespace mha_embind

EMSCRIPTEN_BINDINGS(model_kernels) {
  emscripten::function("mlpActivation", &mha_embind::mlpActivation);
  emscripten::function("rowNorm", &mha_embind::rowNorm);
}
