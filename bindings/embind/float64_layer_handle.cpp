#include "float64_layer_handle.hpp"

#include "heap.hpp"
#include "mha/plan/memory_budget.hpp"
#include "request_reader.hpp"

namespace mha_embind {

Float64LayerHandle::Float64LayerHandle(val config) {
  guard([&] { layer_ = std::make_unique<mha::Float64Attention>(config_of(config)); });
}

bool Float64LayerHandle::checkLoadStateDict(double count) {
  return guard([&] {
    const uint64_t weights = mha::total_bytes(mha::float64_weight_memory(layer_->config()));
    mha::check_fits("the weights",
                    {{"state dict copied in", mha::saturating_bytes({static_cast<int64_t>(count)}, sizeof(double))},
                     {"checked copy", weights},
                     {"parameters", weights}},
                    heap_in_use(), mha::addressable_bytes());
  });
}

val Float64LayerHandle::stateDict() {
  if (!layer_->has_weights()) return val::null();
  state_dict_ = mha::state_dict_from_parameters(layer_->config(), layer_->parameters());
  return entries_of(state_dict_);
}

bool Float64LayerHandle::checkForward(val request, bool /*steps*/) {
  return guard([&] {
    const mha::Float64Call call = RequestReader<double>(keys_, true).layer_call(request);
    const mha::ForwardPlan plan = layer_->plan(call);
    const std::vector<mha::MemoryItem> need = layer_->forward_memory(plan, call.options.grad);
    mha::check_fits("the inputs and buffers", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
    keep_planned_shapes(plan);
  });
}

bool Float64LayerHandle::forward(val request, bool /*steps*/) {
  releaseResult();
  return guard([&] { result_ = layer_->forward(RequestReader<double>(keys_, false).layer_call(request)); });
}

Float64SavedHandle* Float64LayerHandle::forwardForTraining(val request, bool /*steps*/) {
  releaseResult();
  Float64SavedHandle* made = nullptr;
  guard([&] {
    std::unique_ptr<mha::Float64SavedForward> saved;
    result_ = layer_->forward_for_training(RequestReader<double>(keys_, false).layer_call(request), saved);
    made = new Float64SavedHandle(std::move(saved));
  });
  return made;
}

bool Float64LayerHandle::backward(const Float64SavedHandle& saved, double d_output) {
  releaseGradients();
  return guard([&] {
    mha::Float64Gradients g = layer_->backward(saved.saved(), at<const double>(d_output));
    keep_gradients(g, true);
  });
}

}  // namespace mha_embind
