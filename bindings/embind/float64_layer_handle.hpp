// A dtype 'float64' layer's handle (src/mha/float64/float64_attention.hpp): LayerHandle's methods that such
// a layer has, on doubles (bindings/js/core/layer.js picks this handle for dtype 'float64'). The
// JS wrapper refuses what it lacks (caches, capture / patch, quantized weights) before calling.
#pragma once

#include <emscripten/val.h>

#include <memory>

#include "layer_handle_base.hpp"
#include "mha/float64/float64_attention.hpp"
#include "saved_handle.hpp"

namespace mha_embind {

class Float64LayerHandle : public LayerHandleBase<mha::Float64Attention, double, mha::Float64Result> {
 public:
  explicit Float64LayerHandle(val config);

  // Before the JS wrapper copies a state dict of `count` doubles in: does loading fit?
  bool checkLoadStateDict(double count);

  val stateDict();
  bool quantized() const { return false; }

  // The shapes (the float32 layer's plan and errors) and the wasm memory the call needs; the
  // request's tensors carry shapes only. (`steps`: unused, the float32 layer's signature.)
  bool checkForward(val request, bool steps);

  bool forward(val request, bool steps);
  Float64SavedHandle* forwardForTraining(val request, bool steps);

  // The gradients for dLoss/dOutput at d_output (doubles), kept until releaseGradients().
  bool backward(const Float64SavedHandle& saved, double d_output);

  void releaseResult() { result_ = mha::Float64Result{}; }
};

}  // namespace mha_embind
