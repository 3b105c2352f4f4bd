// Rotary position embedding (RoPE) on projected queries or keys, in place.
//
// Follows Hugging Face apply_rotary_pos_emb (models/llama/modeling_llama.py: rotate_half) and
// GPT-J's rotate_every_two (models/gptj/modeling_gptj.py), as ONNX RotaryEmbedding-23 states
// both: with inv_freq_t = base^(-2t / dim) and angle_t = position * inv_freq_t, t < dim / 2,
//   halves (interleaved = false):  x_t      <- x_t cos - x_{t+dim/2} sin
//                                  x_{t+dim/2} <- x_{t+dim/2} cos + x_t sin
//   pairs  (interleaved = true):   x_{2t}   <- x_{2t} cos - x_{2t+1} sin
//                                  x_{2t+1} <- x_{2t+1} cos + x_{2t} sin
// Features from dim on are left alone (partial rotary). Angles are computed in double, so a
// position of 100,000 rotates as accurately as position 1.
#pragma once

#include <cstdint>

#include "mha/plan/attention_config.hpp"

namespace mha {

// Rotates `rows` rows of x (row r starts at x + r * row_stride and holds `heads` heads of
// head_dim features). Row r is at position positions[r] when positions is given, else at
// first_position + r.
// inverse: rotate by -angle, the transpose of the rotation: the backward pass maps the gradient
// of the rotated q or k back onto the projected one with it.
void apply_rotary(const RotaryConfig& rotary, float* x, int64_t rows, int64_t row_stride, int64_t heads,
                  int64_t head_dim, const int32_t* positions, int64_t first_position, bool inverse = false);

}  // namespace mha
