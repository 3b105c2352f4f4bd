// What a forward pass returns: the output, and the attention weights when asked for (T: float for
// the layer, double for a dtype 'float64' layer).
#pragma once

#include <vector>

#include "mha/plan/shape.hpp"

namespace mha {

template <typename T>
struct BasicForwardResult {
  std::vector<T> output;   // output_shape
  Shape output_shape;
  std::vector<T> weights;  // weights_shape; empty unless need_weights
  Shape weights_shape;
};
using ForwardResult = BasicForwardResult<float>;
using Float64Result = BasicForwardResult<double>;

}  // namespace mha
