// Masks as the kernels see them: float biases added to the scores, -inf where blocked.
// Float masks are used in place; bool masks are converted once per forward call.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "forward_plan.hpp"

namespace mha {

class AdditiveMask {
 public:
  AdditiveMask() = default;
  // `mask` must already be checked by plan_forward; rows are `row_len` floats long.
  AdditiveMask(const MaskRef& mask, int64_t row_len) : row_len_(row_len) {
    if (mask.type == MaskType::kFloat) {
      data_ = static_cast<const float*>(mask.data);
    } else if (mask.type == MaskType::kBool) {
      const auto* blocked = static_cast<const uint8_t*>(mask.data);
      converted_.resize(static_cast<size_t>(element_count(mask.shape)));
      for (size_t i = 0; i < converted_.size(); ++i)
        converted_[i] = blocked[i] ? -std::numeric_limits<float>::infinity() : 0.0f;
      data_ = converted_.data();
    }
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
