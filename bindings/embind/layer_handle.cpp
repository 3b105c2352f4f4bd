#include "layer_handle.hpp"

#include "heap.hpp"
#include "mha/plan/errors.hpp"
#include "mha/plan/memory_budget.hpp"
#include "module_pool.hpp"
#include "request_reader.hpp"

namespace mha_embind {

namespace {

// A plan's sizes as the JS backends read them (plannedSizes).
val sizes_of(const mha::ForwardPlan& plan) {
  val sizes = val::object();
  sizes.set("batch", static_cast<double>(plan.batch));
  sizes.set("queryLen", static_cast<double>(plan.query_len));
  sizes.set("keyLen", static_cast<double>(plan.key_len));
  sizes.set("appended", static_cast<double>(plan.appended));
  sizes.set("firstPosition", static_cast<double>(plan.first_position));
  sizes.set("projectedKeys", static_cast<double>(plan.projected_keys));
  sizes.set("crossCache", plan.cross_cache);
  return sizes;
}

}  // namespace

LayerHandle::LayerHandle(val config) {
  guard([&] {
    layer_ = std::make_unique<mha::MultiheadAttention>(config_of(config));
    // Room for any rank up front, so the planned shapes never reallocate: the heap a handle
    // holds stays the same from call to call (tests/js/soak.test.js).
    planned_output_shape_.reserve(4);
    planned_weights_shape_.reserve(4);
  });
}

bool LayerHandle::checkLoadStateDict(double floats) {
  return guard([&] {
    mha::check_fits("the weights", mha::load_memory(layer_->config(), static_cast<uint64_t>(floats)), heap_in_use(),
                    mha::addressable_bytes());
  });
}

bool LayerHandle::loadQuantized(std::string name, std::string dtype, double bytesPtr, double bytesLength,
                                double scalesPtr, double scalesLength, double zeroPointsPtr, double zeroPointsLength) {
  return guard([&] {
    layer_->load_quantized(name, mha::parse_weight_dtype(dtype, "loadQuantized: dtype"), at<const uint8_t>(bytesPtr),
                           static_cast<int64_t>(bytesLength), at<const float>(scalesPtr), static_cast<int64_t>(scalesLength),
                           at<const uint8_t>(zeroPointsPtr), static_cast<int64_t>(zeroPointsLength));
  });
}

val LayerHandle::quantizedProjection(std::string which) const {
  if (!layer_->has_weights() || which.empty()) return val::null();
  const mha::kernels::QuantizedPanels* panels = layer_->quantized_projection(which[0]);
  if (!panels) return val::null();
  const mha::kernels::QuantizedMatrix m = panels->canonical();
  const auto copy = [](const char* type, const auto& v) {
    return val::global(type).new_(emscripten::typed_memory_view(v.size(), v.data()));
  };
  val o = val::object();
  o.set("dtype", std::string(mha::weight_dtype_name(m.dtype)));
  o.set("data", copy("Uint8Array", m.data));
  o.set("scales", copy("Float32Array", m.scales));
  o.set("zeroPoints", m.zero_points.empty() ? val::null() : copy("Uint8Array", m.zero_points));
  return o;
}

val LayerHandle::stateDict() {
  if (!layer_->has_weights()) return val::null();
  state_dict_ = mha::state_dict_from_parameters(layer_->config(), layer_->float_parameters());
  return entries_of(state_dict_);
}

bool LayerHandle::forward(val request, bool steps_given) {
  releaseResult();
  return guard([&] {
    const RequestReader<float> read(keys_, false);
    const auto r = read.layer_call(request);
    use_module_pool();
    const mha::StepRequest steps = steps_given ? read.steps(request, layer_->config()) : mha::StepRequest{};
    if (steps.present()) {
      result_ = layer_->forward_steps(r.query, r.key, r.value, r.options, steps, captured_);
    } else {
      result_ = layer_->forward(r.query, r.key, r.value, r.options);
    }
  });
}

val LayerHandle::capturedEntries() const {
  val list = val::array();
  for (const mha::CapturedStep& step : captured_) {
    val e = val::object();
    e.set("name", std::string(mha::step_name(step.step)));
    e.set("ptr", static_cast<double>(reinterpret_cast<uintptr_t>(step.data.data())));
    e.set("length", static_cast<double>(step.data.size()));
    e.set("shape", array_of(step.shape));
    list.call<void>("push", e);
  }
  return list;
}

SavedForwardHandle* LayerHandle::forwardForTraining(val request, bool steps_given) {
  releaseResult();
  SavedForwardHandle* made = nullptr;
  guard([&] {
    const RequestReader<float> read(keys_, false);
    const auto r = read.layer_call(request);  // (a cache is refused by forward_for_training)
    use_module_pool();
    const mha::StepRequest steps = steps_given ? read.steps(request, layer_->config()) : mha::StepRequest{};
    auto t = layer_->forward_for_training(r.query, r.key, r.value, r.options, &steps, &captured_);
    result_ = std::move(t.result);
    made = new SavedForwardHandle(std::move(t.saved));
  });
  return made;
}

bool LayerHandle::backward(const SavedForwardHandle& saved, double d_output) {
  releaseGradients();
  return guard([&] {
    use_module_pool();
    mha::Gradients g = layer_->backward(saved.saved(), at<const float>(d_output));
    // (A quantized layer has no parameter gradients: the list ends with the inputs'.)
    keep_gradients(g, !layer_->quantized());
  });
}

bool LayerHandle::check_forward(val request, bool steps_given, bool heap_budget) {
  return guard([&] {
    const RequestReader<float> read(keys_, true);
    const auto r = read.layer_call(request);
    const mha::ForwardOptions& o = r.options;
    if (o.cache && o.cache->owner() != layer_.get())
      throw mha::type_error("cache: this cache belongs to another layer (make one with this layer's createCache)");
    // (Missing weights are reported by forward() itself.)
    const mha::ForwardPlan plan = mha::plan_forward(layer_->config(), r.query, r.key, r.value, o);
    const mha::StepRequest steps = steps_given ? read.steps(request, layer_->config()) : mha::StepRequest{};
    mha::CheckedSteps checked;
    if (steps.present()) checked = mha::check_steps(layer_->config(), plan, steps, o.grad);
    if (heap_budget) {
      const int threads = pool_threads();
      const bool self = !r.key.present();
      std::vector<mha::MemoryItem> need = o.grad ? mha::training_memory(layer_->config(), plan, o, self, true, threads)
                                                 : mha::forward_memory(layer_->config(), plan, o, self, true, threads);
      if (steps.present()) {
        for (const mha::MemoryItem& item : mha::steps_memory(layer_->config(), plan, checked, true)) need.push_back(item);
      }
      mha::check_fits("the inputs and buffers", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
    }
    keep_planned_shapes(plan);  // (after the checks: a refused call keeps nothing)
    planned_steps_ = steps.present() ? planned_steps_of(plan, checked) : val::null();
    planned_sizes_ = sizes_of(plan);
  });
}

CacheHandle* LayerHandle::createCache(double batch, double capacity, bool f16) {
  CacheHandle* made = nullptr;
  guard([&] {
    const mha::ResolvedConfig& c = layer_->config();
    const auto dtype = f16 ? mha::CacheDtype::kF16 : mha::CacheDtype::kF32;
    const auto bytes = [&](int64_t head_dim, int64_t value_head_dim) {  // (keys and values: two buffers)
      return mha::KvCache::byte_size(static_cast<int64_t>(batch), c.num_kv_heads, static_cast<int64_t>(capacity),
                                     head_dim, value_head_dim, dtype);
    };
    mha::check_fits("the cache would", {{"keys", bytes(c.head_dim, 0)}, {"values", bytes(0, c.value_head_dim)}},
                    heap_in_use(), mha::addressable_bytes());
    made = new CacheHandle(layer_->create_cache(static_cast<int64_t>(batch), static_cast<int64_t>(capacity), dtype));
  });
  return made;
}

CacheHandle* LayerHandle::createPlannedCache(double batch, double capacity) {
  CacheHandle* made = nullptr;
  guard([&] {
    made = new CacheHandle(
        layer_->create_cache(static_cast<int64_t>(batch), static_cast<int64_t>(capacity), mha::CacheDtype::kF32, false));
  });
  return made;
}

bool LayerHandle::setKeyValue(CacheHandle& cache, val key, val value) {
  return guard([&] {
    const RequestReader<float> read(keys_, false);
    layer_->set_key_value(cache.cache(), read.tensor(key), read.tensor(value));
  });
}

bool LayerHandle::planKeyValue(CacheHandle& cache, val key, val value) {
  return guard([&] {
    const RequestReader<float> read(keys_, true);
    const int64_t S = layer_->check_key_value(cache.cache(), read.tensor(key), read.tensor(value));
    cache.cache().reset();
    cache.cache().advance(S);
    cache.cache().set_kind(mha::CacheKind::kCross);
  });
}

void LayerHandle::use_module_pool() {
#ifdef __EMSCRIPTEN_PTHREADS__
  layer_->set_thread_pool(module_pool);
#endif
}

val LayerHandle::planned_steps_of(const mha::ForwardPlan& plan, const mha::CheckedSteps& checked) const {
  const mha::ResolvedConfig& c = layer_->config();
  val captured = val::array();
  for (int s = 0; s < mha::kStepCount; ++s) {
    if (!checked.capture[s]) continue;
    val e = val::object();
    e.set("name", std::string(mha::step_name(static_cast<mha::Step>(s))));
    e.set("shape", array_of(mha::step_shape(c, plan, static_cast<mha::Step>(s))));
    captured.call<void>("push", e);
  }
  val planned = val::object();
  planned.set("captured", captured);
  if (checked.patching) {
    val patch = val::object();
    patch.set("name", std::string(mha::step_name(checked.patched)));
    patch.set("shape", array_of(mha::step_shape(c, plan, checked.patched)));
    val heads = val::array();
    for (bool h : checked.patched_heads) heads.call<void>("push", h);
    patch.set("heads", heads);
    planned.set("patch", patch);
  } else {
    planned.set("patch", val::null());
  }
  return planned;
}

}  // namespace mha_embind
