// The wasm module's embind API: each handle class and free function registered once (the handles
// themselves are in this folder, one file each; kernel_choice.cpp registers the kernel
// choice's functions in its own block).
#include <emscripten/bind.h>
#include <emscripten/em_macros.h>

#include <string>

#include "attention_function_handle.hpp"
#include "cache_handle.hpp"
#include "float64_layer_handle.hpp"
#include "heap.hpp"
#include "layer_handle.hpp"
#include "linear_handle.hpp"
#include "mha/kernels/linear.hpp"
#include "module_pool.hpp"

namespace mha_embind {
namespace {

// A member function of Handle or of a base it has, as Handle's own: embind registers a method
// on the class of its member pointer, and a base class is not registered.
template <typename Handle, typename R, typename Base, typename... Args>
auto method(R (Base::*f)(Args...)) {
  return static_cast<R (Handle::*)(Args...)>(f);
}
template <typename Handle, typename R, typename Base, typename... Args>
auto method(R (Base::*f)(Args...) const) {
  return static_cast<R (Handle::*)(Args...) const>(f);
}

// The methods the float32 and the float64 layer handles share (LayerHandleBase and the same-named
// methods of each), registered on either.
template <typename Handle>
void register_layer_methods(const emscripten::class_<Handle>& c) {
  c.template constructor<val>()
      .function("lastErrorKind", method<Handle>(&Handle::lastErrorKind))
      .function("lastError", method<Handle>(&Handle::lastError))
      .function("config", method<Handle>(&Handle::config))
      .function("stateDictShapes", method<Handle>(&Handle::stateDictShapes))
      .function("loadStateDict", method<Handle>(&Handle::loadStateDict))
      .function("checkLoadStateDict", &Handle::checkLoadStateDict)
      .function("weightBytes", method<Handle>(&Handle::weightBytes))
      .function("quantized", &Handle::quantized)
      .function("forward", &Handle::forward)
      .function("forwardForTraining", &Handle::forwardForTraining, emscripten::allow_raw_pointers())
      .function("backward", &Handle::backward)
      .function("gradientEntries", method<Handle>(&Handle::gradientEntries))
      .function("releaseGradients", method<Handle>(&Handle::releaseGradients))
      .function("stateDict", &Handle::stateDict)
      .function("releaseStateDict", method<Handle>(&Handle::releaseStateDict))
      .function("checkForward", &Handle::checkForward)
      .function("plannedOutputShape", method<Handle>(&Handle::plannedOutputShape))
      .function("plannedWeightsShape", method<Handle>(&Handle::plannedWeightsShape))
      .function("outputPtr", method<Handle>(&Handle::outputPtr))
      .function("outputShape", method<Handle>(&Handle::outputShape))
      .function("weightsPtr", method<Handle>(&Handle::weightsPtr))
      .function("weightsShape", method<Handle>(&Handle::weightsShape))
      .function("releaseResult", &Handle::releaseResult);
}

// nn.Linear's forward and backward on heap addresses the JS wrapper (bindings/js/core/linear.js)
// allocated, filled and checked; 0 for an absent bias / gradient.
void linearForward(double x, double weight, double bias, double y, double rows, double in, double out) {
  mha::kernels::linear({at<const float>(x), at<const float>(weight), at<const float>(bias), at<float>(y),
                        static_cast<int64_t>(rows), static_cast<int64_t>(in), static_cast<int64_t>(out)});
}

void linearBackward(double d_y, double x, double weight, double d_x, double d_weight, double d_bias, double rows,
                    double in, double out) {
  mha::kernels::linear_backward({at<const float>(d_y), at<const float>(x), at<const float>(weight), at<float>(d_x),
                                 at<float>(d_weight), at<float>(d_bias), static_cast<int64_t>(rows),
                                 static_cast<int64_t>(in), static_cast<int64_t>(out)});
}

// Bytes the allocator has handed out and not yet freed; the leak tests watch this.
double heapAllocatedBytes() { return static_cast<double>(heap_in_use()); }

// The most the heap can grow to (the module's maximum memory: 4 GiB for wasm32).
double heapLimitBytes() { return static_cast<double>(mha::addressable_bytes()); }

}  // namespace
}  // namespace mha_embind

#ifdef __EMSCRIPTEN_PTHREADS__
// A few bytes of the shared memory where a pool worker records a refused memory growth, so the
// main thread's out-of-memory message can name it (layout and use: src/mha/runtime/wasm_threads_pre.js).
extern "C" EMSCRIPTEN_KEEPALIVE uint32_t* mha_growth_refusal_record() {
  alignas(8) static uint32_t record[32];
  return record;
}
#endif

EMSCRIPTEN_BINDINGS(mha_wasm) {
  using namespace mha_embind;
  using emscripten::class_;
  class_<CacheHandle>("CacheHandle")
      .function("length", &CacheHandle::length)
      .function("capacity", &CacheHandle::capacity)
      .function("batch", &CacheHandle::batch)
      .function("byteSize", &CacheHandle::byteSize)
      .function("kind", &CacheHandle::kind)
      .function("truncate", &CacheHandle::truncate)
      .function("reset", &CacheHandle::reset)
      .function("advance", &CacheHandle::advance);
  class_<SavedForwardHandle>("SavedForwardHandle");
  register_layer_methods(class_<LayerHandle>("LayerHandle")
                             .function("loadQuantized", &LayerHandle::loadQuantized)
                             .function("quantizedProjection", &LayerHandle::quantizedProjection)
                             .function("planForward", &LayerHandle::planForward)
                             .function("createCache", &LayerHandle::createCache, emscripten::allow_raw_pointers())
                             .function("createPlannedCache", &LayerHandle::createPlannedCache, emscripten::allow_raw_pointers())
                             .function("setKeyValue", &LayerHandle::setKeyValue)
                             .function("planKeyValue", &LayerHandle::planKeyValue)
                             .function("plannedSteps", &LayerHandle::plannedSteps)
                             .function("plannedSizes", &LayerHandle::plannedSizes)
                             .function("capturedEntries", &LayerHandle::capturedEntries));
  class_<AttentionFunctionHandle>("AttentionFunctionHandle")
      .constructor<>()
      .function("lastErrorKind", method<AttentionFunctionHandle>(&AttentionFunctionHandle::lastErrorKind))
      .function("takeError", &AttentionFunctionHandle::takeError)
      .function("plan", &AttentionFunctionHandle::plan)
      .function("run", &AttentionFunctionHandle::run)
      .function("backward", &AttentionFunctionHandle::backward);
  class_<LinearHandle>("LinearHandle")
      .constructor<double, double, bool, std::string>()
      .function("lastErrorKind", method<LinearHandle>(&LinearHandle::lastErrorKind))
      .function("lastError", method<LinearHandle>(&LinearHandle::lastError))
      .function("weightBytes", &LinearHandle::weightBytes)
      .function("checkLoad", &LinearHandle::checkLoad)
      .function("load", &LinearHandle::load)
      .function("checkForward", &LinearHandle::checkForward)
      .function("forward", &LinearHandle::forward)
      .function("rows", &LinearHandle::rows);
  class_<Float64SavedHandle>("Float64SavedHandle");
  register_layer_methods(class_<Float64LayerHandle>("Float64LayerHandle"));
  emscripten::function("heapAllocatedBytes", &heapAllocatedBytes);
  emscripten::function("heapLimitBytes", &heapLimitBytes);
  emscripten::function("linearForward", &linearForward);
  emscripten::function("linearBackward", &linearBackward);
#ifdef __EMSCRIPTEN_PTHREADS__
  emscripten::function("setNumThreads", &setNumThreads);
  emscripten::function("numThreads", &numThreads);
  emscripten::function("threadsStarting", &threadsStarting);
#endif
}
