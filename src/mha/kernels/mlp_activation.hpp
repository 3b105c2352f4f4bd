// An MLP's activation over the rows a model's up product gives: gated (SwiGLU: silu(gate) * up;
// GeGLU: gelu_tanh(gate) * up) from the stacked [rows, 2I] product (gate in the first I columns,
// up in the last I), or ungated (act(x) of [rows, I]). Both activations are x * sigmoid(z): silu
// z = x, tanh GELU z = 2 sqrt(2/pi) (x + 0.044715 x^3) (0.5 (1 + tanh(u)) = sigmoid(2u)), and
// sigmoid(z) = (z < 0 ? e : 1) / (1 + e) with e = exp(-|z|), fast_exp's domain (< 3 ulp). What
// JavaScript did per element with Math.exp / Math.tanh (bindings/js/models/elementwise.js, which
// keeps the exact-erf GELU), in SIMD. The reference twin uses std::exp.
#pragma once

#include <cstdint>

namespace mha::kernels {

enum class MlpActivation { kSilu, kGeluTanh };

// out [rows, I] = act(gate) * up for gate_up [rows, 2I] (gated), or act(x) for x [rows, I].
void mlp_activation(const float* in, int64_t rows, int64_t I, MlpActivation act, bool gated, float* out);
void mlp_activation_reference(const float* in, int64_t rows, int64_t I, MlpActivation act, bool gated, float* out);

}  // namespace mha::kernels
