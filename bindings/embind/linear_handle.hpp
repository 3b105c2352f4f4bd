// mha.Linear's handle (bindings/js/core/linear-layer.js): an nn.Linear whose weights stay packed in
// the heap (src/mha/layer/linear_layer.hpp). The wrapper checks types and sizes, asks checkLoad /
// checkForward whether the buffers fit, then passes heap addresses.
#pragma once

#include <memory>
#include <string>

#include "handle_errors.hpp"
#include "mha/layer/linear_layer.hpp"

namespace mha_embind {

class LinearHandle : public HandleErrors {
 public:
  LinearHandle(double in_features, double out_features, bool bias, std::string dtype);

  double weightBytes() const { return static_cast<double>(layer_->weight_bytes()); }

  // Before the wrapper copies a weight of `weight_bytes` bytes in `source`'s format ('f32', 'f16'
  // or 'bf16') and the bias in: does loading fit?
  bool checkLoad(double weight_bytes, std::string source);

  // weight [out, in]: float32, or binary16 / bfloat16 bits (`source`); bias [out] or 0.
  bool load(double weight, std::string source, double bias);

  // out [n, in] = rows ids[0..n) of the weight (an embedding lookup).
  bool rows(double ids, double n, double out);

  bool checkForward(double rows);
  bool forward(double x, double y, double rows);

 private:
  std::unique_ptr<mha::LinearLayer> layer_;
};

}  // namespace mha_embind
