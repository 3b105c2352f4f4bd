// The float32 layer's handle: a thin handle over mha::MultiheadAttention (bindings/js/core/layer.js
// wraps it). Tensors arrive as pointers into the wasm heap that the JS wrapper allocated and
// filled; results stay in the handle until the wrapper copies them out.
#pragma once

#include <emscripten/val.h>

#include <memory>
#include <string>
#include <vector>

#include "cache_handle.hpp"
#include "layer_handle_base.hpp"
#include "mha/steps/attention_steps.hpp"
#include "mha/layer/forward_result.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "saved_handle.hpp"

namespace mha_embind {

class LayerHandle : public LayerHandleBase<mha::MultiheadAttention, float, mha::ForwardResult> {
 public:
  explicit LayerHandle(val config);

  // Before the JS wrapper copies a state dict of `floats` floats in: does loading fit?
  bool checkLoadStateDict(double floats);

  // One projection in the canonical quantized layout (src/mha/kernels/weight_formats.hpp), from
  // bytes the JS wrapper copied into the heap: name a projection's state-dict key, dtype 'f16',
  // 'int8' or 'q4'; zeroPointsLength 0 = no zero points (q4: 8). Lengths in elements (bytes of
  // data and zero points, floats of scales); pointers as numbers (unsigned, up to 4 GiB).
  bool loadQuantized(std::string name, std::string dtype, double bytesPtr, double bytesLength, double scalesPtr,
                     double scalesLength, double zeroPointsPtr, double zeroPointsLength);

  // Whether a projection is stored quantized (backward then gives input gradients only).
  bool quantized() const { return layer_->quantized(); }

  // Projection `which` ('q', 'k', 'v', 'o') in the canonical quantized layout, copied out:
  // { dtype, data: Uint8Array, scales: Float32Array, zeroPoints: Uint8Array | null }, or null
  // when it is float32 (or the layer has no weights). The WebGPU backend uploads these bytes.
  val quantizedProjection(std::string which) const;

  // Copies of the current weights: [{ name, ptr, length }] valid until the next call.
  val stateDict();

  // request: { query, key, value, keyPaddingMask, attnMask, causal, needWeights, averageWeights,
  // capture, patch }. `steps`: the request has capture or patch (read only then, so the other
  // calls cost what they did): the steps' path runs, and capturedEntries() lists what it kept.
  bool forward(val request, bool steps_given);

  // The last forward's captured steps: [{ name, ptr, length, shape }] in the chain's order.
  val capturedEntries() const;

  // forward() that keeps what backward needs: the result as forward's, plus the saved state
  // (null with lastError set on failure).
  SavedForwardHandle* forwardForTraining(val request, bool steps_given);

  // The gradients for dLoss/dOutput at d_output (the forward's output shape; the JS wrapper
  // checked its size), kept until releaseGradients(): gradientEntries() lists them.
  bool backward(const SavedForwardHandle& saved, double d_output);

  // Checks a forward request before the JS wrapper copies its inputs in: the shapes, then
  // whether the inputs and the call's buffers fit in the wasm memory still free. The request's
  // tensors carry shapes only.
  bool checkForward(val request, bool steps_given) { return check_forward(request, steps_given, true); }

  // The same checks of the shapes and options (the same plan, the same errors) without the wasm
  // memory budget: for a backend whose buffers are not in the wasm heap (the WebGPU layer checks
  // its own device's limits); capture / patch steps checked and planned as checkForward does.
  bool planForward(val request, bool steps_given) { return check_forward(request, steps_given, false); }

  // The steps the last successful checkForward / planForward planned, for a backend that runs them itself (the
  // WebGPU backend's step path): { captured: [{ name, shape }] in the chain's order, patch: { name,
  // shape, heads: [bool per head of the step] } or null }; null when the call asked for no steps.
  val plannedSteps() const { return planned_steps_; }

  // The sizes the last successful checkForward / planForward planned, for a backend that sizes its
  // own buffers and dispatches (the WebGPU backend): { batch, queryLen, keyLen, appended,
  // firstPosition, projectedKeys, crossCache } (forward_plan.hpp's ForwardPlan).
  val plannedSizes() const { return planned_sizes_; }

  // A KV cache for this layer, or null with lastError set (e.g. it does not fit in memory).
  CacheHandle* createCache(double batch, double capacity, bool f16);

  // A cache that holds no keys or values, only its length and kind (the WebGPU backend keeps them
  // on the GPU and plans its calls with it); null with lastError set for a bad batch or capacity.
  CacheHandle* createPlannedCache(double batch, double capacity);

  // key/value: { ptr, shape } in the heap, as for forward.
  bool setKeyValue(CacheHandle& cache, val key, val value);

  // The WebGPU backend's setKeyValue on a storage-less cache (createPlannedCache): the wasm
  // layer's checks of key { shape } and value { shape } (set_key_value's, with no data), then the
  // cache records S cross-attention tokens (their keys and values live on the GPU).
  bool planKeyValue(CacheHandle& cache, val key, val value);

  void releaseResult() {
    result_ = mha::ForwardResult{};
    std::vector<mha::CapturedStep>().swap(captured_);
  }

 private:
  bool check_forward(val request, bool steps_given, bool heap_budget);

  // The threads build runs every layer on the module's pool (its size as setNumThreads left it).
  void use_module_pool();

  val planned_steps_of(const mha::ForwardPlan& plan, const mha::CheckedSteps& checked) const;

  std::vector<mha::CapturedStep> captured_;
  val planned_steps_ = val::null();
  val planned_sizes_ = val::null();
};

}  // namespace mha_embind
