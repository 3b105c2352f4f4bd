// Shapes as small vectors of extents, and how they are printed in error messages.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace mha {

using Shape = std::vector<int64_t>;

// Saturates at INT64_MAX instead of overflowing: an absurd shape must fail its checks, not wrap
// around to a small count (found by tests/fuzz/mha_fuzz.cpp).
inline int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

// "[2, 5, 8]"
inline std::string format_shape(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A read-only float tensor owned by the caller.
struct TensorRef {
  const float* data = nullptr;
  Shape shape;
  bool present() const { return data != nullptr || !shape.empty(); }
};

}  // namespace mha
