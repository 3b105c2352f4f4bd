// What the float32 and the float64 layer handles share: the config and state dict in and out,
// the last plan's shapes, the last result and gradients, kept for the JS wrapper to copy out.
// (bindings/embind/module.cpp registers these methods once for both.)
#pragma once

#include <emscripten/val.h>

#include <cstdint>
#include <memory>

#include "handle_errors.hpp"
#include "layer_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "named_buffers.hpp"
#include "request_keys.hpp"

namespace mha_embind {

// Layer: mha::MultiheadAttention or mha::Float64Attention; T its element type; Result its forward's result.
template <typename Layer, typename T, typename Result>
class LayerHandleBase : public HandleErrors {
 public:
  val config() const { return config_object(layer_->config()); }
  val stateDictShapes() const { return state_dict_shapes(layer_->config()); }

  // entries: [{ name, ptr, length }], ptr addressing T.
  bool loadStateDict(val entries) {
    return guard([&] { layer_->load_state_dict(state_dict_of<T>(keys_, entries)); });
  }
  void releaseStateDict() { Named<T>().swap(state_dict_); }

  // Bytes of weights the layer holds (projections as stored, biases, sinks): JS layer.byteSize.
  double weightBytes() const { return static_cast<double>(layer_->weight_bytes()); }

  // [{ name, ptr, length }]: query, key, value (length 0 when forward had none), then the
  // parameters' gradients keyed and ordered as the state dict (none for a quantized layer).
  val gradientEntries() const { return entries_of(gradients_); }
  void releaseGradients() { Named<T>().swap(gradients_); }

  // The shapes the last successful checkForward planned (for caller-owned output buffers).
  val plannedOutputShape() const { return array_of(planned_output_shape_); }
  val plannedWeightsShape() const { return planned_weights_shape_.empty() ? val::null() : array_of(planned_weights_shape_); }

  uintptr_t outputPtr() const { return reinterpret_cast<uintptr_t>(result_.output.data()); }
  val outputShape() const { return array_of(result_.output_shape); }
  uintptr_t weightsPtr() const { return reinterpret_cast<uintptr_t>(result_.weights.data()); }
  val weightsShape() const { return result_.weights.empty() ? val::null() : array_of(result_.weights_shape); }

 protected:
  // (after a plan's checks: a refused call keeps nothing)
  void keep_planned_shapes(const mha::ForwardPlan& plan) {
    planned_output_shape_ = plan.output_shape;
    planned_weights_shape_ = plan.weights_shape;
  }

  // The gradients' entries: the inputs', then the parameters' as the state dict names them.
  template <typename Gradients>
  void keep_gradients(Gradients& g, bool with_parameters) {
    gradients_.push_back({"query", std::move(g.query)});
    gradients_.push_back({"key", std::move(g.key)});
    gradients_.push_back({"value", std::move(g.value)});
    if (with_parameters)
      for (auto& entry : mha::state_dict_from_parameters(layer_->config(), g.params)) gradients_.push_back(std::move(entry));
  }

  RequestKeys keys_;
  std::unique_ptr<Layer> layer_;
  Result result_;
  Named<T> gradients_, state_dict_;
  mha::Shape planned_output_shape_, planned_weights_shape_;
};

}  // namespace mha_embind
