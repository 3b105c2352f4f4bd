// Masks as the kernels see them: float biases added to the scores, -inf where blocked.
// Float masks are used in place; bool masks are converted once per forward call.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "mha/plan/forward_plan.hpp"

namespace mha {

class AdditiveMask {
 public:
  AdditiveMask() = default;
  // `mask` must already be checked by plan_forward: blocks of `block_rows` rows of `given` keys,
  // read as rows of `keys` >= given: the keys config add_bias_kv / add_zero_attn append get 0
  // (attend), as PyTorch pads its masks.
  AdditiveMask(const MaskRef& mask, int64_t block_rows, int64_t given, int64_t keys) : row_len_(block_rows * keys) {
    if (!mask.present()) return;
    const auto value = [&](int64_t i) {
      if (mask.type == MaskType::kFloat) return static_cast<const float*>(mask.data)[i];
      return static_cast<const uint8_t*>(mask.data)[i] ? -std::numeric_limits<float>::infinity() : 0.0f;
    };
    if (mask.type == MaskType::kFloat && given == keys) {
      data_ = static_cast<const float*>(mask.data);  // used in place
      return;
    }
    const int64_t rows = element_count(mask.shape) / given;
    converted_.assign(static_cast<size_t>(rows * keys), 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < given; ++j) converted_[r * keys + j] = value(r * given + j);
    data_ = converted_.data();
  }
  AdditiveMask(const AdditiveMask&) = delete;
  AdditiveMask& operator=(const AdditiveMask&) = delete;

  // The block of rows starting at row `index` (null when there is no mask).
  const float* rows(int64_t index) const { return data_ ? data_ + index * row_len_ : nullptr; }

 private:
  const float* data_ = nullptr;
  int64_t row_len_ = 0;
  std::vector<float> converted_;
};

}  // namespace mha
