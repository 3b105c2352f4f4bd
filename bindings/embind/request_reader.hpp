// The one reader of a request the JS wrapper built ({ query, key, value, masks, options, ... },
// tensors as { ptr, shape } in the heap, their types already checked), for the float32 layer,
// the float64 layer and the attention function. T is the tensors' element type. In plan-only
// mode (checkForward / planForward: the tensors carry shapes only) every address is a
// placeholder, since planning reads shapes and never data.
#pragma once

#include <emscripten/val.h>

#include <string>
#include <type_traits>

#include "cache_handle.hpp"
#include "mha/steps/attention_steps.hpp"
#include "mha/float64/float64_attention.hpp"
#include "mha/plan/forward_plan.hpp"
#include "request_keys.hpp"

namespace mha_embind {

// The core's call of a layer with element type T: tensors, and where it takes static_k / static_v.
template <typename T>
struct LayerCallTypes;

template <>
struct LayerCallTypes<float> {
  using Tensor = mha::TensorRef;
  struct Call {
    Tensor query, key, value;
    mha::ForwardOptions options;
  };
  static Tensor& static_k(Call& c) { return c.options.static_k; }
  static Tensor& static_v(Call& c) { return c.options.static_v; }
};

template <>
struct LayerCallTypes<double> {
  using Tensor = mha::Float64TensorRef;
  using Call = mha::Float64Call;  // (its float masks hold doubles; bool masks stay bytes)
  static Tensor& static_k(Call& c) { return c.static_k; }
  static Tensor& static_v(Call& c) { return c.static_v; }
};

template <typename T>
class RequestReader {
 public:
  using Types = LayerCallTypes<T>;
  using Tensor = typename Types::Tensor;
  using Call = typename Types::Call;

  RequestReader(const RequestKeys& keys, bool plan_only) : keys_(keys), plan_only_(plan_only) {}

  Tensor tensor(const val& t) const {
    if (absent(t)) return {};
    return {plan_only_ ? kPlaceholder : pointer_of<T>(keys_, t), shape_of(keys_, t[keys_.shape])};
  }

  mha::MaskRef mask(const val& m) const {
    if (absent(m)) return {};
    return {m[keys_.isBool].as<bool>() ? mha::MaskType::kBool : mha::MaskType::kFloat,
            plan_only_ ? static_cast<const void*>(kPlaceholder) : pointer_of<void>(keys_, m), shape_of(keys_, m[keys_.shape])};
  }

  // An int32 tensor { ptr, shape } (positions, offsets, lengths), if given.
  void int32s(const val& v, const int32_t*& data, mha::Shape& shape) const {
    if (absent(v)) return;
    data = plan_only_ ? reinterpret_cast<const int32_t*>(kPlaceholder) : pointer_of<int32_t>(keys_, v);
    shape = shape_of(keys_, v[keys_.shape]);
  }

  // A layer's forward request: { query, key, value, keyPaddingMask, attnMask, positions, staticK,
  // staticV, cache (float32 layers only: a float64 layer has none), causal, grad, needWeights,
  // averageWeights, training, seed, weightsBeforeDropout }.
  Call layer_call(const val& request) const {
    Call call;
    call.query = tensor(request[keys_.query]);
    call.key = tensor(request[keys_.key]);
    call.value = tensor(request[keys_.value]);
    Types::static_k(call) = tensor(request[keys_.staticK]);
    Types::static_v(call) = tensor(request[keys_.staticV]);
    mha::ForwardOptions& o = call.options;
    // causal: true, false, or absent (a self cache implies it, and refuses only an explicit false).
    const val causal = request[keys_.causal];
    o.causal = causal.isTrue();
    o.causal_given = !absent(causal);
    o.grad = request[keys_.grad].isTrue();
    o.need_weights = request[keys_.needWeights].as<bool>();
    o.average_weights = request[keys_.averageWeights].as<bool>();
    o.training = request[keys_.training].as<bool>();
    o.seed = static_cast<uint64_t>(request[keys_.seed].as<double>());
    o.weights_before_dropout = request[keys_.weightsBeforeDropout].as<bool>();
    o.key_padding_mask = mask(request[keys_.keyPaddingMask]);
    o.attn_mask = mask(request[keys_.attnMask]);
    int32s(request[keys_.positions], o.positions, o.positions_shape);  // (a float64 layer's plan refuses them)
    if constexpr (std::is_same_v<T, float>) {
      if (CacheHandle* cache = cache_of(request[keys_.cache])) o.cache = &cache->cache();
    }
    return call;
  }

  // A float32 layer's step options (attention_steps.hpp): capture true or [names]; patch { steps:
  // [the names given], tensor: { ptr, shape }, heads: [h...] or null }.
  mha::StepRequest steps(const val& request, const mha::ResolvedConfig& config) const {
    static_assert(std::is_same_v<T, float>, "only float32 layers have steps");
    mha::StepRequest steps;
    const val capture = request[keys_.capture];
    if (capture.isTrue()) {
      steps.capture = mha::layer_step_names(config);
    } else if (capture.isArray()) {
      steps.capture = emscripten::vecFromJSArray<std::string>(capture);
    }
    const val patch = request[keys_.patch];
    if (!absent(patch)) {
      steps.patch.steps = emscripten::vecFromJSArray<std::string>(patch[keys_.steps]);
      steps.patch.tensor = tensor(patch[keys_.tensor]);
      const val heads = patch[keys_.heads];
      if (!absent(heads)) steps.patch.heads = shape_of(keys_, heads);
    }
    return steps;
  }

 private:
  static constexpr T kPlaceholder[1] = {};

  const RequestKeys& keys_;
  bool plan_only_;
};

}  // namespace mha_embind
