// The embind layer: a thin handle over mha::MultiheadAttention. No C++ exception crosses into
// JavaScript; each call reports success, and the JS wrapper (bindings/js/) raises the error
// from lastError()/lastErrorKind(). Tensors arrive as pointers into the wasm heap that the JS
// wrapper allocated and filled; results stay in the handle until the wrapper copies them out.
#include <emscripten/bind.h>
#include <emscripten/em_macros.h>
#include <emscripten/val.h>
#include <malloc.h>
#include <unistd.h>

#include <memory>
#include <new>
#include <string>

#include "mha/attention_function.hpp"
#include "mha/attention_steps.hpp"
#include "mha/errors.hpp"
#include "mha/float64_attention.hpp"
#include "mha/kernels/linear.hpp"
#include "mha/kernels/mlp_activation.hpp"
#include "mha/linear_layer.hpp"
#include "mha/memory_budget.hpp"
#include "mha/multihead_attention.hpp"
#include "mha/saved_forward.hpp"
#include "mha/thread_pool.hpp"

using emscripten::val;

namespace {

// Bytes the allocator has handed out: mallinfo's int field, read back as the unsigned 32-bit
// count it holds (above 2 GiB in use the int is negative).
uint64_t heap_in_use() { return static_cast<uint32_t>(mallinfo().uordblks); }

// The same where only "do `need` more bytes fit?" is asked: mallinfo walks every chunk of the
// heap (2% of a small layer's decode step), while the heap's top (sbrk(0)) bounds the bytes in
// use from above for free. The walk runs only when that bound leaves too little room, so a
// refusal's message still gives the exact count.
uint64_t heap_in_use_unless_fits(const std::vector<mha::MemoryItem>& items) {
  const uint64_t top = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sbrk(0)));
  return mha::total_bytes(items) + top <= mha::addressable_bytes() ? top : heap_in_use();
}

// The request properties' names as JS strings, made once per layer handle: `request["causal"]`
// makes its key string anew, a call into JS, on every read (14% of a small layer's decode step
// went to making key strings). (A function-local static would also allocate, in the threads
// build, at its first use: a forward's heap accounting would see it.)
struct RequestKeys {
  val length{"length"}, ptr{"ptr"}, shape{"shape"}, isBool{"isBool"}, causal{"causal"}, needWeights{"needWeights"},
      averageWeights{"averageWeights"}, training{"training"}, seed{"seed"}, weightsBeforeDropout{"weightsBeforeDropout"},
      query{"query"}, key{"key"}, value{"value"}, keyPaddingMask{"keyPaddingMask"}, attnMask{"attnMask"},
      positions{"positions"}, cache{"cache"}, grad{"grad"}, capture{"capture"}, patch{"patch"},
      steps{"steps"}, tensor{"tensor"}, heads{"heads"}, staticK{"staticK"}, staticV{"staticV"};
};

mha::Shape shape_of(const RequestKeys& keys, const val& v) {
  mha::Shape s;
  const int n = v[keys.length].as<int>();
  for (int i = 0; i < n; ++i) s.push_back(static_cast<int64_t>(v[i].as<double>()));
  return s;
}

val array_of(const mha::Shape& s) {
  val a = val::array();
  for (int64_t d : s) a.call<void>("push", static_cast<double>(d));
  return a;
}

// A plan's sizes as the JS backends read them (LayerHandle::plannedSizes).
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

template <typename T>
const T* pointer_of(const RequestKeys& keys, const val& v) {
  return reinterpret_cast<const T*>(v[keys.ptr].as<uintptr_t>());
}

mha::TensorRef tensor_of(const RequestKeys& keys, const val& v) {
  if (v.isUndefined() || v.isNull()) return {};
  return {pointer_of<float>(keys, v), shape_of(keys, v[keys.shape])};
}

void positions_of(const RequestKeys& keys, const val& v, mha::ForwardOptions& o) {
  if (v.isUndefined() || v.isNull()) return;
  o.positions = pointer_of<int32_t>(keys, v);
  o.positions_shape = shape_of(keys, v[keys.shape]);
}

mha::MaskRef mask_of(const RequestKeys& keys, const val& v) {
  if (v.isUndefined() || v.isNull()) return {};
  return {v[keys.isBool].as<bool>() ? mha::MaskType::kBool : mha::MaskType::kFloat, pointer_of<void>(keys, v),
          shape_of(keys, v[keys.shape])};
}

#ifdef __EMSCRIPTEN_PTHREADS__
// The threads build's execution context: one pool for every layer of this module (wasm
// threads are workers the module preallocates, so they are a per-module resource), with one
// thread per core; setNumThreads resizes it. Made at module start (static initialization, once
// Emscripten has loaded its preallocated workers), not at the first call that needs it: its
// workers' start-up allocations (src/mha/thread_pool.hpp) are then made before any call, never
// inside one that a caller measures the heap around.
const std::shared_ptr<mha::ThreadPool> module_pool = std::make_shared<mha::ThreadPool>(mha::ThreadPool::hardware_threads());

// Threads the layers use from the next forward call on (clamped to 1..256); returns that count.
int setNumThreads(int n) {
  module_pool->set_num_threads(n < 1 ? 1 : n > 256 ? 256 : n);
  return module_pool->size();
}

int numThreads() { return module_pool->size(); }

// The pool's workers whose thread has not started yet (beyond Emscripten's preallocated workers,
// a thread starts only once the main thread yields): the JS loaders wait for 0, so that each
// thread's start-up allocations are made before the caller's first call.
int threadsStarting() { return module_pool->starting(); }
#endif

// The pool the attention function and mha.Linear run on: the module's, or none (the calling
// thread) in a build without threads.
mha::ThreadPool* pool() {
#ifdef __EMSCRIPTEN_PTHREADS__
  return module_pool.get();
#else
  return nullptr;
#endif
}

// 0 = none, 1 = TypeError, 2 = RangeError, 3 = Error
enum ErrorCode { kNone = 0, kTypeError = 1, kRangeError = 2, kOtherError = 3 };

// A KV cache of one layer (made by LayerHandle::createCache; the JS wrapper checks every
// argument of truncate before calling, so nothing here throws).
class CacheHandle {
 public:
  explicit CacheHandle(std::unique_ptr<mha::KvCache> cache) : cache_(std::move(cache)) {}
  double length() const { return static_cast<double>(cache_->length()); }
  double capacity() const { return static_cast<double>(cache_->capacity()); }
  double batch() const { return static_cast<double>(cache_->batch()); }
  double byteSize() const { return static_cast<double>(cache_->byte_size()); }
  int kind() const { return static_cast<int>(cache_->kind()); }  // 0 none, 1 self, 2 cross
  void truncate(double n) {
    if (n >= 0 && n <= length()) cache_->truncate(static_cast<int64_t>(n));
  }
  void reset() { cache_->reset(); }
  // A storage-less cache (LayerHandle::createPlannedCache): n tokens were appended elsewhere.
  void advance(double n) { cache_->advance(static_cast<int64_t>(n)); }
  mha::KvCache& cache() { return *cache_; }

 private:
  std::unique_ptr<mha::KvCache> cache_;
};

}  // namespace

// val::as<CacheHandle*>() gets the JS object's address as a double, and embind 3.1.6 keeps class
// pointers signed in JS: above 2 GiB the double is negative, and its cast to uintptr_t gives null
// (the request then ran without its cache). Through a signed 64-bit integer both forms convert.
template <>
struct emscripten::internal::GenericWireTypeConverter<CacheHandle*> {
  static CacheHandle* from(double address) {
    return reinterpret_cast<CacheHandle*>(static_cast<uintptr_t>(static_cast<int64_t>(address)));
  }
};

namespace {

CacheHandle* cache_of(const val& v) {
  if (v.isUndefined() || v.isNull()) return nullptr;
  return v.as<CacheHandle*>(emscripten::allow_raw_pointers());
}

// What a forward pass with grad kept for its backward pass (made by LayerHandle::forwardForTraining;
// the JS wrapper deletes it after backward or on release()).
class SavedForwardHandle {
 public:
  explicit SavedForwardHandle(std::unique_ptr<mha::SavedForward> saved) : saved_(std::move(saved)) {}
  const mha::SavedForward& saved() const { return *saved_; }

 private:
  std::unique_ptr<mha::SavedForward> saved_;
};

using NamedFloats = std::vector<std::pair<std::string, std::vector<float>>>;
using NamedDoubles = std::vector<std::pair<std::string, std::vector<double>>>;

// [{ name, ptr, length }] over named buffers the handle keeps (the JS wrapper copies them out).
template <typename T>
val entries_of(const std::vector<std::pair<std::string, std::vector<T>>>& named) {
  val list = val::array();
  for (const auto& [name, data] : named) {
    val e = val::object();
    e.set("name", name);
    e.set("ptr", static_cast<double>(reinterpret_cast<uintptr_t>(data.data())));
    e.set("length", static_cast<double>(data.size()));
    list.call<void>("push", e);
  }
  return list;
}

// A request's step options (attention_steps.hpp): capture true or [names]; patch { steps: [the
// names given], tensor: { ptr, shape }, heads: [h...] or null }. `data` replaces the patch's
// pointer (checkForward plans without data). The JS wrapper checked their types.
mha::StepRequest steps_of(const RequestKeys& keys, const val& request, const mha::ResolvedConfig& config,
                          const float* data = nullptr) {
  mha::StepRequest steps;
  const val capture = request[keys.capture];
  if (capture.isTrue()) {
    steps.capture = mha::layer_step_names(config);
  } else if (capture.isArray()) {
    steps.capture = emscripten::vecFromJSArray<std::string>(capture);
  }
  const val patch = request[keys.patch];
  if (!patch.isUndefined() && !patch.isNull()) {
    steps.patch.steps = emscripten::vecFromJSArray<std::string>(patch[keys.steps]);
    const val tensor = patch[keys.tensor];
    steps.patch.tensor = {data ? data : pointer_of<float>(keys, tensor), shape_of(keys, tensor[keys.shape])};
    const val heads = patch[keys.heads];
    if (!heads.isUndefined() && !heads.isNull()) steps.patch.heads = shape_of(keys, heads);
  }
  return steps;
}

// Options every forward request shares (the JS wrapper checked their types).
void read_options(const RequestKeys& keys, const val& request, mha::ForwardOptions& o) {
  // causal: true, false, or absent (a self cache implies it, and refuses only an explicit false).
  const val causal = request[keys.causal];
  o.causal = causal.isTrue();
  o.causal_given = !causal.isUndefined() && !causal.isNull();
  o.grad = request[keys.grad].isTrue();
  o.need_weights = request[keys.needWeights].as<bool>();
  o.average_weights = request[keys.averageWeights].as<bool>();
  o.training = request[keys.training].as<bool>();
  o.seed = static_cast<uint64_t>(request[keys.seed].as<double>());
  o.weights_before_dropout = request[keys.weightsBeforeDropout].as<bool>();
}

// A forward request's tensors and options, pointing into the heap (the JS wrapper copied them in).
struct ForwardRequest {
  mha::TensorRef query, key, value;
  mha::ForwardOptions options;

  ForwardRequest(const RequestKeys& keys, const val& request)
      : query(tensor_of(keys, request[keys.query])), key(tensor_of(keys, request[keys.key])),
        value(tensor_of(keys, request[keys.value])) {
    read_options(keys, request, options);
    options.key_padding_mask = mask_of(keys, request[keys.keyPaddingMask]);
    options.attn_mask = mask_of(keys, request[keys.attnMask]);
    positions_of(keys, request[keys.positions], options);
    options.static_k = tensor_of(keys, request[keys.staticK]);
    options.static_v = tensor_of(keys, request[keys.staticV]);
    if (CacheHandle* cache = cache_of(request[keys.cache])) options.cache = &cache->cache();
  }
};

// Runs f, recording a C++ exception as an error kind and message for the JS wrapper (which raises
// it: bindings/js/core/errors.js); returns whether f succeeded.
template <typename F>
bool guarded(int& error_kind, std::string& error, F&& f) {
  error_kind = kNone;
  std::string().swap(error);  // frees the last message, so an error holds no memory past the next call
  try {
    f();
    return true;
  } catch (const mha::ArgumentError& e) {
    error_kind = e.kind() == mha::ErrorKind::kType ? kTypeError : kRangeError;
    error = e.what();
  } catch (const std::bad_alloc&) {
    error_kind = kRangeError;
    error = "out of memory: the request does not fit in WebAssembly memory";
  } catch (const std::exception& e) {
    error_kind = kOtherError;
    error = e.what();
  }
  return false;
}

// The JS config after bindings/js/core/layer.js checked its types; absent keys take the core's
// defaults, and resolve() checks the values.
mha::AttentionConfig config_of(const val& config) {
  const auto integer = [&](const char* key) -> int64_t {
    const val v = config[key];
    return v.isUndefined() ? 0 : static_cast<int64_t>(v.as<double>());
  };
  mha::AttentionConfig c;
  c.embed_dim = integer("embedDim");
  c.num_heads = integer("numHeads");
  c.kdim = integer("kdim");
  c.vdim = integer("vdim");
  c.bias = config["bias"].isUndefined() ? true : config["bias"].as<bool>();
  c.num_kv_heads = integer("numKvHeads");
  if (!config["scale"].isUndefined()) c.scale = config["scale"].as<double>();  // (float32 layers round it)
  c.head_dim = integer("headDim");
  c.value_head_dim = integer("valueHeadDim");
  c.output_dim = integer("outputDim");
  const val qk_norm = config["qkNorm"];
  if (!qk_norm.isUndefined()) {
    c.qk_norm.over = qk_norm["over"].as<std::string>();
    if (!qk_norm["eps"].isUndefined()) c.qk_norm.eps = qk_norm["eps"].as<double>();
  }
  const val rotary = config["rotary"];
  if (!rotary.isUndefined()) {
    c.rotary.dim = static_cast<int64_t>(rotary["dim"].as<double>());
    if (!rotary["base"].isUndefined()) c.rotary.base = rotary["base"].as<double>();
    if (!rotary["interleaved"].isUndefined()) c.rotary.interleaved = rotary["interleaved"].as<bool>();
  }
  c.sliding_window = integer("slidingWindow");
  c.alibi = !config["alibi"].isUndefined() && config["alibi"].as<bool>();
  if (!config["alibiSlopes"].isUndefined())
    c.alibi_slopes = emscripten::convertJSArrayToNumberVector<float>(config["alibiSlopes"]);
  if (!config["softcap"].isUndefined()) c.softcap = static_cast<float>(config["softcap"].as<double>());
  c.sinks = !config["sinks"].isUndefined() && config["sinks"].as<bool>();
  c.gate = !config["gate"].isUndefined() && config["gate"].as<bool>();
  if (!config["dropout"].isUndefined()) c.dropout = static_cast<float>(config["dropout"].as<double>());
  if (!config["weightDtype"].isUndefined()) c.weight_dtype = config["weightDtype"].as<std::string>();
  if (!config["batchFirst"].isUndefined()) c.batch_first = config["batchFirst"].as<bool>();
  c.add_bias_kv = !config["addBiasKv"].isUndefined() && config["addBiasKv"].as<bool>();
  c.add_zero_attn = !config["addZeroAttn"].isUndefined() && config["addZeroAttn"].as<bool>();
  if (!config["dtype"].isUndefined()) c.dtype = config["dtype"].as<std::string>();
  return c;
}

// The state-dict keys a layer of config c takes, with their shapes: { key: [dims] }.
val state_dict_shapes(const mha::ResolvedConfig& c) {
  val o = val::object();
  for (const auto& [key, shape] : mha::state_dict_layout(c)) o.set(key, array_of(shape));
  return o;
}

// A state dict from [{ name, ptr, length }] entries the JS wrapper copied into the heap (T: the layer's float type).
template <typename T>
mha::BasicStateDict<T> state_dict_of(const RequestKeys& keys, const val& entries) {
  mha::BasicStateDict<T> sd;
  const int n = entries[keys.length].as<int>();
  for (int i = 0; i < n; ++i) {
    val e = entries[i];
    sd[e["name"].as<std::string>()] = {pointer_of<T>(keys, e), static_cast<int64_t>(e[keys.length].as<double>())};
  }
  return sd;
}

// The resolved config as the JS layer's `config` shows it (the variants only where the layer has them).
val config_object(const mha::ResolvedConfig& c) {
  val o = val::object();
  o.set("embedDim", static_cast<double>(c.embed_dim));
  o.set("numHeads", static_cast<double>(c.num_heads));
  o.set("kdim", static_cast<double>(c.kdim));
  o.set("vdim", static_cast<double>(c.vdim));
  o.set("bias", c.bias);
  o.set("numKvHeads", static_cast<double>(c.num_kv_heads));
  o.set("headDim", static_cast<double>(c.head_dim));
  o.set("scale", c.float64 ? c.scale64 : static_cast<double>(c.scale));
  o.set("valueHeadDim", static_cast<double>(c.value_head_dim));
  o.set("outputDim", static_cast<double>(c.output_dim));
  // The variants appear only when the layer has them.
  if (c.qk_norm) {
    val qk_norm = val::object();
    qk_norm.set("over", std::string(c.qk_norm.over == mha::QkNormScope::kHead ? "head" : "projection"));
    qk_norm.set("eps", c.qk_norm.eps);
    o.set("qkNorm", qk_norm);
  }
  if (c.rotary.dim > 0) {
    val rotary = val::object();
    rotary.set("dim", static_cast<double>(c.rotary.dim));
    rotary.set("base", c.rotary.base);
    rotary.set("interleaved", c.rotary.interleaved);
    o.set("rotary", rotary);
  }
  if (c.sliding_window > 0) o.set("slidingWindow", static_cast<double>(c.sliding_window));
  if (!c.alibi_slopes.empty()) {
    val slopes = val::array();
    for (float s : c.alibi_slopes) slopes.call<void>("push", s);
    o.set("alibiSlopes", slopes);
  }
  if (c.softcap > 0) o.set("softcap", c.softcap);
  if (c.sinks) o.set("sinks", true);
  if (c.gate) o.set("gate", true);
  if (c.dropout > 0) o.set("dropout", c.dropout);
  if (c.weight_dtype != mha::WeightDtype::kF32) o.set("weightDtype", std::string(mha::weight_dtype_name(c.weight_dtype)));
  if (!c.batch_first) o.set("batchFirst", false);
  if (c.add_bias_kv) o.set("addBiasKv", true);
  if (c.add_zero_attn) o.set("addZeroAttn", true);
  if (c.float64) o.set("dtype", std::string("float64"));
  return o;
}

class LayerHandle {
 public:
  explicit LayerHandle(val config) {
    guard([&] {
      const mha::AttentionConfig c = config_of(config);
      layer_ = std::make_unique<mha::MultiheadAttention>(c);
      // Room for any rank up front, so the planned shapes never reallocate: the heap a handle
      // holds stays the same from call to call (tests/js/soak.test.js).
      planned_output_shape_.reserve(4);
      planned_weights_shape_.reserve(4);
    });
  }

  int lastErrorKind() const { return error_kind_; }
  std::string lastError() const { return error_; }

  val config() const { return config_object(layer_->config()); }

  val stateDictShapes() const { return state_dict_shapes(layer_->config()); }

  // entries: [{ name, ptr, length }]
  bool loadStateDict(val entries) {
    return guard([&] { layer_->load_state_dict(state_dict_of<float>(keys_, entries)); });
  }

  // One projection in the canonical quantized layout (src/mha/kernels/weight_formats.hpp), from
  // bytes the JS wrapper copied into the heap: name a projection's state-dict key, dtype 'f16',
  // 'int8' or 'q4'; zeroPointsLength 0 = no zero points (q4: 8). Lengths in elements (bytes of
  // data and zero points, floats of scales); pointers as numbers (unsigned, up to 4 GiB).
  bool loadQuantized(std::string name, std::string dtype, double bytesPtr, double bytesLength, double scalesPtr,
                     double scalesLength, double zeroPointsPtr, double zeroPointsLength) {
    return guard([&] {
      const auto address = [](double p) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(p)); };
      layer_->load_quantized(name, mha::parse_weight_dtype(dtype, "loadQuantized: dtype"),
                             static_cast<const uint8_t*>(address(bytesPtr)), static_cast<int64_t>(bytesLength),
                             static_cast<const float*>(address(scalesPtr)), static_cast<int64_t>(scalesLength),
                             static_cast<const uint8_t*>(address(zeroPointsPtr)), static_cast<int64_t>(zeroPointsLength));
    });
  }

  // Bytes of weights the layer holds (projections as stored, biases, sinks): JS layer.byteSize.
  double weightBytes() const { return static_cast<double>(layer_->weight_bytes()); }

  // Whether a projection is stored quantized (backward then gives input gradients only).
  bool quantized() const { return layer_->quantized(); }

  // Projection `which` ('q', 'k', 'v', 'o') in the canonical quantized layout, copied out:
  // { dtype, data: Uint8Array, scales: Float32Array, zeroPoints: Uint8Array | null }, or null
  // when it is float32 (or the layer has no weights). The WebGPU backend uploads these bytes.
  val quantizedProjection(std::string which) const {
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

  // Before the JS wrapper copies a state dict of `floats` floats in: does loading fit?
  bool checkLoadStateDict(double floats) {
    return guard([&] {
      mha::check_fits("the weights", mha::load_memory(layer_->config(), static_cast<uint64_t>(floats)),
                      heap_in_use(), mha::addressable_bytes());
    });
  }

  // request: { query, key, value, keyPaddingMask, attnMask, causal, needWeights, averageWeights,
  // capture, patch }. `steps`: the request has capture or patch (read only then, so the other
  // calls cost what they did): the steps' path runs, and capturedEntries() lists what it kept.
  bool forward(val request, bool steps_given) {
    releaseResult();
    return guard([&] {
      const ForwardRequest r(keys_, request);
      use_module_pool();
      const mha::StepRequest steps = steps_given ? steps_of(keys_, request, layer_->config()) : mha::StepRequest{};
      if (steps.present()) {
        result_ = layer_->forward_steps(r.query, r.key, r.value, r.options, steps, captured_);
      } else {
        result_ = layer_->forward(r.query, r.key, r.value, r.options);
      }
    });
  }

  // The last forward's captured steps: [{ name, ptr, length, shape }] in the chain's order.
  val capturedEntries() const {
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

  // forward() that keeps what backward needs: the result as forward's, plus the saved state
  // (null with lastError set on failure).
  SavedForwardHandle* forwardForTraining(val request, bool steps_given) {
    releaseResult();
    SavedForwardHandle* made = nullptr;
    guard([&] {
      const ForwardRequest r(keys_, request);  // (a cache is refused by forward_for_training)
      use_module_pool();
      const mha::StepRequest steps = steps_given ? steps_of(keys_, request, layer_->config()) : mha::StepRequest{};
      auto t = layer_->forward_for_training(r.query, r.key, r.value, r.options, &steps, &captured_);
      result_ = std::move(t.result);
      made = new SavedForwardHandle(std::move(t.saved));
    });
    return made;
  }

  // The gradients for dLoss/dOutput at d_output (the forward's output shape; the JS wrapper
  // checked its size), kept until releaseGradients(): gradientEntries() lists them.
  bool backward(const SavedForwardHandle& saved, double d_output) {
    releaseGradients();
    return guard([&] {
      use_module_pool();
      mha::Gradients g = layer_->backward(saved.saved(), reinterpret_cast<const float*>(static_cast<uintptr_t>(d_output)));
      gradients_.push_back({"query", std::move(g.query)});
      gradients_.push_back({"key", std::move(g.key)});
      gradients_.push_back({"value", std::move(g.value)});
      // (A quantized layer has no parameter gradients: the list ends with the inputs'.)
      if (!layer_->quantized())
        for (auto& entry : mha::state_dict_from_parameters(layer_->config(), g.params)) gradients_.push_back(std::move(entry));
    });
  }

  // [{ name, ptr, length }]: query, key, value (length 0 when forward had none), then the
  // parameters' gradients keyed and ordered as the state dict (none for a quantized layer).
  val gradientEntries() const {
    return entries_of(gradients_);
  }
  void releaseGradients() { NamedFloats().swap(gradients_); }

  // Copies of the current weights: [{ name, ptr, length }] valid until the next call.
  val stateDict() {
    if (!layer_->has_weights()) return val::null();
    state_dict_ = mha::state_dict_from_parameters(layer_->config(), layer_->float_parameters());
    return entries_of(state_dict_);
  }
  void releaseStateDict() { NamedFloats().swap(state_dict_); }

  // Checks a forward request before the JS wrapper copies its inputs in: the shapes, then
  // whether the inputs and the call's buffers fit in the wasm memory still free. The request's
  // tensors carry shapes only; planning never reads data, so each gets a placeholder address.
  bool checkForward(val request, bool steps_given) { return check_forward(request, steps_given, true); }

  // The same checks of the shapes and options (the same plan, the same errors) without the wasm
  // memory budget: for a backend whose buffers are not in the wasm heap (the WebGPU layer checks
  // its own device's limits); capture / patch steps checked and planned as checkForward does.
  bool planForward(val request, bool steps_given) { return check_forward(request, steps_given, false); }

  bool check_forward(val request, bool steps_given, bool heap_budget) {
    return guard([&] {
      static const float kPlaceholder[1] = {};
      const auto shape_only = [this](const val& t) -> mha::TensorRef {
        if (t.isUndefined() || t.isNull()) return {};
        return {kPlaceholder, shape_of(keys_, t[keys_.shape])};
      };
      const auto mask_shape_only = [this](const val& m) -> mha::MaskRef {
        if (m.isUndefined() || m.isNull()) return {};
        return {m[keys_.isBool].as<bool>() ? mha::MaskType::kBool : mha::MaskType::kFloat, kPlaceholder, shape_of(keys_, m[keys_.shape])};
      };
      const mha::TensorRef q = shape_only(request[keys_.query]), k = shape_only(request[keys_.key]), v = shape_only(request[keys_.value]);
      mha::ForwardOptions o;
      read_options(keys_, request, o);
      o.key_padding_mask = mask_shape_only(request[keys_.keyPaddingMask]);
      o.attn_mask = mask_shape_only(request[keys_.attnMask]);
      o.static_k = shape_only(request[keys_.staticK]);
      o.static_v = shape_only(request[keys_.staticV]);
      if (CacheHandle* cache = cache_of(request[keys_.cache])) {
        if (cache->cache().owner() != layer_.get())
          throw mha::type_error("cache: this cache belongs to another layer (make one with this layer's createCache)");
        o.cache = &cache->cache();
      }
      if (!request[keys_.positions].isUndefined() && !request[keys_.positions].isNull()) {
        o.positions = reinterpret_cast<const int32_t*>(kPlaceholder);
        o.positions_shape = shape_of(keys_, request[keys_.positions][keys_.shape]);
      }
      // (Missing weights are reported by forward() itself.)
      const mha::ForwardPlan plan = mha::plan_forward(layer_->config(), q, k, v, o);
      const bool grad = o.grad;
      const mha::StepRequest steps = steps_given ? steps_of(keys_, request, layer_->config(), kPlaceholder) : mha::StepRequest{};
      mha::CheckedSteps checked;
      if (steps.present()) checked = mha::check_steps(layer_->config(), plan, steps, grad);
      if (heap_budget) {
#ifdef __EMSCRIPTEN_PTHREADS__
        const int threads = module_pool->size();
#else
        const int threads = 1;
#endif
        std::vector<mha::MemoryItem> need = grad ? mha::training_memory(layer_->config(), plan, o, !k.present(), true, threads)
                                                 : mha::forward_memory(layer_->config(), plan, o, !k.present(), true, threads);
        if (steps.present()) {
          for (const mha::MemoryItem& item : mha::steps_memory(layer_->config(), plan, checked, true)) need.push_back(item);
        }
        mha::check_fits("the inputs and buffers", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
      }
      planned_output_shape_ = plan.output_shape;  // (after the checks: a refused call keeps nothing)
      planned_weights_shape_ = plan.weights_shape;
      planned_steps_ = steps.present() ? planned_steps_of(plan, checked) : val::null();
      planned_sizes_ = sizes_of(plan);
    });
  }

  // The steps the last successful checkForward / planForward planned, for a backend that runs them itself (the
  // WebGPU backend's step path): { captured: [{ name, shape }] in the chain's order, patch: { name,
  // shape, heads: [bool per head of the step] } or null }; null when the call asked for no steps.
  val plannedSteps() const { return planned_steps_; }

  // The sizes the last successful checkForward / planForward planned, for a backend that sizes its
  // own buffers and dispatches (the WebGPU backend): { batch, queryLen, keyLen, appended,
  // firstPosition, projectedKeys, crossCache } (forward_plan.hpp's ForwardPlan).
  val plannedSizes() const { return planned_sizes_; }

  // The shapes the last successful checkForward planned (for caller-owned output buffers).
  val plannedOutputShape() const { return array_of(planned_output_shape_); }
  val plannedWeightsShape() const { return planned_weights_shape_.empty() ? val::null() : array_of(planned_weights_shape_); }

  // A KV cache for this layer, or null with lastError set (e.g. it does not fit in memory).
  CacheHandle* createCache(double batch, double capacity, bool f16) {
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

  // A cache that holds no keys or values, only its length and kind (the WebGPU backend keeps them
  // on the GPU and plans its calls with it); null with lastError set for a bad batch or capacity.
  CacheHandle* createPlannedCache(double batch, double capacity) {
    CacheHandle* made = nullptr;
    guard([&] {
      made = new CacheHandle(
          layer_->create_cache(static_cast<int64_t>(batch), static_cast<int64_t>(capacity), mha::CacheDtype::kF32, false));
    });
    return made;
  }

  // key/value: { ptr, shape } in the heap, as for forward.
  bool setKeyValue(CacheHandle& cache, val key, val value) {
    return guard([&] { layer_->set_key_value(cache.cache(), tensor_of(keys_, key), tensor_of(keys_, value)); });
  }

  // The WebGPU backend's setKeyValue on a storage-less cache (createPlannedCache): the wasm
  // layer's checks of key { shape } and value { shape } (set_key_value's, with no data), then the
  // cache records S cross-attention tokens (their keys and values live on the GPU).
  bool planKeyValue(CacheHandle& cache, val key, val value) {
    return guard([&] {
      static const float kPlaceholder[1] = {};
      const auto shape_only = [this](const val& t) -> mha::TensorRef { return {kPlaceholder, shape_of(keys_, t[keys_.shape])}; };
      const int64_t S = layer_->check_key_value(cache.cache(), shape_only(key), shape_only(value));
      cache.cache().reset();
      cache.cache().advance(S);
      cache.cache().set_kind(mha::CacheKind::kCross);
    });
  }

  uintptr_t outputPtr() const { return reinterpret_cast<uintptr_t>(result_.output.data()); }
  val outputShape() const { return array_of(result_.output_shape); }
  uintptr_t weightsPtr() const { return reinterpret_cast<uintptr_t>(result_.weights.data()); }
  val weightsShape() const { return result_.weights.empty() ? val::null() : array_of(result_.weights_shape); }
  void releaseResult() {
    result_ = mha::ForwardResult{};
    std::vector<mha::CapturedStep>().swap(captured_);
  }

 private:
  // The threads build runs every layer on the module's pool (its size as setNumThreads left it).
  void use_module_pool() {
#ifdef __EMSCRIPTEN_PTHREADS__
    layer_->set_thread_pool(module_pool);
#endif
  }

  template <typename F>
  bool guard(F&& f) {
    return guarded(error_kind_, error_, f);
  }

  val planned_steps_of(const mha::ForwardPlan& plan, const mha::CheckedSteps& checked) const {
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

  RequestKeys keys_;
  std::unique_ptr<mha::MultiheadAttention> layer_;
  mha::ForwardResult result_;
  std::vector<mha::CapturedStep> captured_;
  NamedFloats gradients_, state_dict_;
  mha::Shape planned_output_shape_, planned_weights_shape_;
  val planned_steps_ = val::null();
  val planned_sizes_ = val::null();
  int error_kind_ = kNone;
  std::string error_;
};

// A dtype 'float64' layer (src/mha/float64_attention.hpp): LayerHandle's methods that such a layer
// has, on doubles (bindings/js/core/layer.js picks this handle for dtype 'float64'). The JS
// wrapper refuses what it lacks (caches, capture / patch, quantized weights) before calling.
class Float64SavedHandle {
 public:
  explicit Float64SavedHandle(std::unique_ptr<mha::Float64SavedForward> saved) : saved_(std::move(saved)) {}
  const mha::Float64SavedForward& saved() const { return *saved_; }

 private:
  std::unique_ptr<mha::Float64SavedForward> saved_;
};

class Float64LayerHandle {
 public:
  explicit Float64LayerHandle(val config) {
    guard([&] { layer_ = std::make_unique<mha::Float64Attention>(config_of(config)); });
  }

  int lastErrorKind() const { return error_kind_; }
  std::string lastError() const { return error_; }
  val config() const { return config_object(layer_->config()); }

  val stateDictShapes() const { return state_dict_shapes(layer_->config()); }

  // Before the JS wrapper copies a state dict of `count` doubles in: does loading fit?
  bool checkLoadStateDict(double count) {
    return guard([&] {
      const uint64_t weights = mha::total_bytes(mha::float64_weight_memory(layer_->config()));
      mha::check_fits("the weights",
                      {{"state dict copied in", mha::saturating_bytes({static_cast<int64_t>(count)}, sizeof(double))},
                       {"checked copy", weights},
                       {"parameters", weights}},
                      heap_in_use(), mha::addressable_bytes());
    });
  }

  // entries: [{ name, ptr, length }], ptr addressing doubles.
  bool loadStateDict(val entries) {
    return guard([&] { layer_->load_state_dict(state_dict_of<double>(keys_, entries)); });
  }

  val stateDict() {
    if (!layer_->has_weights()) return val::null();
    state_dict_ = mha::state_dict_from_parameters(layer_->config(), layer_->parameters());
    return entries_of(state_dict_);
  }
  void releaseStateDict() { NamedDoubles().swap(state_dict_); }
  double weightBytes() const { return static_cast<double>(layer_->weight_bytes()); }
  bool quantized() const { return false; }

  // The shapes (the float32 layer's plan and errors) and the wasm memory the call needs; the
  // request's tensors carry shapes only.
  bool checkForward(val request, bool /*steps*/) {
    return guard([&] {
      static const double kPlaceholder[1] = {};
      const Call call(keys_, request, kPlaceholder);
      const mha::ForwardPlan plan = layer_->plan(call.call);
      const std::vector<mha::MemoryItem> need = layer_->forward_memory(plan, call.call.options.grad);
      mha::check_fits("the inputs and buffers", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
      planned_output_shape_ = plan.output_shape;
      planned_weights_shape_ = plan.weights_shape;
    });
  }
  val plannedOutputShape() const { return array_of(planned_output_shape_); }
  val plannedWeightsShape() const { return planned_weights_shape_.empty() ? val::null() : array_of(planned_weights_shape_); }

  bool forward(val request, bool /*steps*/) {
    releaseResult();
    return guard([&] { result_ = layer_->forward(Call(keys_, request).call); });
  }

  Float64SavedHandle* forwardForTraining(val request, bool /*steps*/) {
    releaseResult();
    Float64SavedHandle* made = nullptr;
    guard([&] {
      std::unique_ptr<mha::Float64SavedForward> saved;
      result_ = layer_->forward_for_training(Call(keys_, request).call, saved);
      made = new Float64SavedHandle(std::move(saved));
    });
    return made;
  }

  // The gradients for dLoss/dOutput at d_output (doubles), kept until releaseGradients().
  bool backward(const Float64SavedHandle& saved, double d_output) {
    releaseGradients();
    return guard([&] {
      mha::Float64Gradients g = layer_->backward(saved.saved(), reinterpret_cast<const double*>(static_cast<uintptr_t>(d_output)));
      gradients_.push_back({"query", std::move(g.query)});
      gradients_.push_back({"key", std::move(g.key)});
      gradients_.push_back({"value", std::move(g.value)});
      for (auto& entry : mha::state_dict_from_parameters(layer_->config(), g.params)) gradients_.push_back(std::move(entry));
    });
  }
  val gradientEntries() const { return entries_of(gradients_); }
  void releaseGradients() { NamedDoubles().swap(gradients_); }

  uintptr_t outputPtr() const { return reinterpret_cast<uintptr_t>(result_.output.data()); }
  val outputShape() const { return array_of(result_.output_shape); }
  uintptr_t weightsPtr() const { return reinterpret_cast<uintptr_t>(result_.weights.data()); }
  val weightsShape() const { return result_.weights.empty() ? val::null() : array_of(result_.weights_shape); }
  void releaseResult() { result_ = mha::Float64Result{}; }

 private:
  // A request's tensors and masks as doubles in the heap (float masks too; bool masks are bytes).
  // `placeholder`: plan only (every tensor gets that address; planning never reads data).
  struct Call {
    mha::Float64Call call;
    Call(const RequestKeys& keys, const val& request, const double* placeholder = nullptr) {
      const auto tensor = [&](const val& t) -> mha::Float64TensorRef {
        if (t.isUndefined() || t.isNull()) return {};
        return {placeholder ? placeholder : pointer_of<double>(keys, t), shape_of(keys, t[keys.shape])};
      };
      const auto mask = [&](const val& m) -> mha::MaskRef {
        if (m.isUndefined() || m.isNull()) return {};
        return {m[keys.isBool].as<bool>() ? mha::MaskType::kBool : mha::MaskType::kFloat,
                placeholder ? static_cast<const void*>(placeholder) : pointer_of<void>(keys, m), shape_of(keys, m[keys.shape])};
      };
      call.query = tensor(request[keys.query]);
      call.key = tensor(request[keys.key]);
      call.value = tensor(request[keys.value]);
      call.static_k = tensor(request[keys.staticK]);
      call.static_v = tensor(request[keys.staticV]);
      read_options(keys, request, call.options);
      call.options.key_padding_mask = mask(request[keys.keyPaddingMask]);
      call.options.attn_mask = mask(request[keys.attnMask]);
      const val positions = request[keys.positions];  // (the plan refuses them: a float64 layer has no rotary)
      if (!positions.isUndefined() && !positions.isNull()) {
        call.options.positions = placeholder ? reinterpret_cast<const int32_t*>(placeholder) : pointer_of<int32_t>(keys, positions);
        call.options.positions_shape = shape_of(keys, positions[keys.shape]);
      }
    }
  };

  template <typename F>
  bool guard(F&& f) {
    return guarded(error_kind_, error_, f);
  }

  RequestKeys keys_;
  std::unique_ptr<mha::Float64Attention> layer_;
  mha::Float64Result result_;
  NamedDoubles gradients_, state_dict_;
  mha::Shape planned_output_shape_, planned_weights_shape_;
  int error_kind_ = kNone;
  std::string error_;
};

// nn.Linear's forward and backward on heap addresses the JS wrapper (bindings/js/core/linear.js)
// allocated, filled and checked; 0 for an absent bias / gradient.
template <typename T>
T* at(double address) { return reinterpret_cast<T*>(static_cast<uintptr_t>(address)); }

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

// mha.Linear's handle (bindings/js/core/linear-layer.js): an nn.Linear whose weights stay packed in
// the heap (src/mha/linear_layer.hpp). The wrapper checks types and sizes, asks checkLoad /
// checkForward whether the buffers fit, then passes heap addresses.
class LinearHandle {
 public:
  LinearHandle(double in_features, double out_features, bool bias, std::string dtype) {
    guard([&] {
      layer_ = std::make_unique<mha::LinearLayer>(static_cast<int64_t>(in_features), static_cast<int64_t>(out_features),
                                                  bias, mha::parse_weight_dtype(dtype));
    });
  }

  int lastErrorKind() const { return error_kind_; }
  std::string lastError() const { return error_; }
  double weightBytes() const { return static_cast<double>(layer_->weight_bytes()); }

  // Before the wrapper copies a weight of `weight_bytes` bytes in `source`'s format ('f32', 'f16'
  // or 'bf16') and the bias in: does loading fit?
  bool checkLoad(double weight_bytes, std::string source) {
    return guard([&] {
      mha::check_fits("the weights", layer_->load_memory(static_cast<uint64_t>(weight_bytes), mha::parse_weight_source(source)),
                      heap_in_use(), mha::addressable_bytes());
    });
  }

  // weight [out, in]: float32, or binary16 / bfloat16 bits (`source`); bias [out] or 0.
  bool load(double weight, std::string source, double bias) {
    return guard([&] { layer_->load(at<const void>(weight), mha::parse_weight_source(source), at<const float>(bias)); });
  }

  // out [n, in] = rows ids[0..n) of the weight (an embedding lookup).
  bool rows(double ids, double n, double out) {
    return guard([&] { layer_->rows(at<const int32_t>(ids), static_cast<int64_t>(n), at<float>(out)); });
  }

  bool checkForward(double rows) {
    return guard([&] {
      const auto need = layer_->forward_memory(static_cast<int64_t>(rows));
      mha::check_fits("the input and output", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
    });
  }

  bool forward(double x, double y, double rows) {
    return guard([&] { layer_->forward(at<const float>(x), at<float>(y), static_cast<int64_t>(rows), pool()); });
  }

 private:
  template <typename F>
  bool guard(F&& f) {
    return guarded(error_kind_, error_, f);
  }

  std::unique_ptr<mha::LinearLayer> layer_;
  int error_kind_ = kNone;
  std::string error_;
};

// The attention function (src/mha/attention_function.hpp) on tensors the JS wrapper
// (bindings/js/core/attention-function.js) checked and copied into the heap: plan() gives the
// result's shapes, run() writes into the outputs the wrapper then allocated. A request:
// { query, key, value, pastKey?, pastValue?, attnMask? (isBool: nonzero = attend), causalOffsets?,
// kvSeqLens?, sinks? ({ ptr, shape } each), numHeads, kvNumHeads, causal (0 none, 1 top-left,
// 2 bottom-right, 3 offset), scale?, softcap, dropout, seed, slidingWindow, alibiSlopes?,
// needWeights, capture }.
class AttentionFunctionHandle {
 public:
  int lastErrorKind() const { return error_kind_; }
  // The last error's message, handed over: the handle lives as long as the module, and keeps no
  // message after the wrapper has read it.
  std::string takeError() {
    std::string message;
    message.swap(error_);
    return message;
  }

  // { output, presentKey, presentValue, weights, steps: shapes or null, capped: bool }, or null
  // after an error.
  val plan(val request) {
    val planned = val::null();
    guarded(error_kind_, error_, [&] {
      const Request r(keys_, request);
      const mha::AttentionPlan p = mha::plan_attention(r.query, r.key, r.value, r.options);
      const auto shape_or_null = [](const mha::Shape& s) { return s.empty() ? val::null() : array_of(s); };
      planned = val::object();
      planned.set("output", array_of(p.output_shape));
      planned.set("presentKey", shape_or_null(p.present_key_shape));
      planned.set("presentValue", shape_or_null(p.present_value_shape));
      planned.set("weights", shape_or_null(p.weights_shape));
      planned.set("steps", shape_or_null(p.step_shape));
      planned.set("capped", r.options.softcap > 0.0f);
    });
    return planned;
  }

  // outputs: { output, presentKey, presentValue, weights, scores, capped, logits, pattern, lse }
  // addresses sized by plan() (0: not asked for).
  bool run(val request, val outputs) {
    return guarded(error_kind_, error_, [&] {
      const Request r(keys_, request);
      const mha::AttentionPlan p = mha::plan_attention(r.query, r.key, r.value, r.options);
      const auto at = [&](const char* name) { return address(outputs, name); };
      mha::AttentionOutputs o;
      o.output = at("output");
      o.present_key = at("presentKey");
      o.present_value = at("presentValue");
      o.weights = at("weights");
      o.scores = at("scores");
      o.capped = at("capped");
      o.logits = at("logits");
      o.pattern = at("pattern");
      o.lse = at("lse");
      mha::run_attention(p, r.query, r.key, r.value, r.options, o, pool());
    });
  }

  // The backward pass of a run() with lse, on the same request: buffers { output, lse, dOutput,
  // dQuery, dKey, dValue, dPastKey, dPastValue } (addresses; the pasts' 0 without a past).
  bool backward(val request, val buffers) {
    return guarded(error_kind_, error_, [&] {
      const Request r(keys_, request);
      const mha::AttentionPlan p = mha::plan_attention(r.query, r.key, r.value, r.options);
      const auto at = [&](const char* name) { return address(buffers, name); };
      mha::AttentionGradients g;
      g.d_query = at("dQuery");
      g.d_key = at("dKey");
      g.d_value = at("dValue");
      g.d_past_key = at("dPastKey");
      g.d_past_value = at("dPastValue");
      mha::run_attention_backward(p, r.query, r.key, r.value, r.options, at("output"), at("lse"), at("dOutput"), g,
                                  pool());
    });
  }

 private:
  // The address the wrapper put in object[name] (0: none), as a float pointer.
  static float* address(const val& object, const char* name) {
    return reinterpret_cast<float*>(static_cast<uintptr_t>(object[name].as<double>()));
  }

  struct Request {
    mha::TensorRef query, key, value;
    mha::AttentionFunctionOptions options;

    Request(const RequestKeys& keys, const val& request)
        : query(tensor_of(keys, request[keys.query])), key(tensor_of(keys, request[keys.key])),
          value(tensor_of(keys, request[keys.value])) {
      mha::AttentionFunctionOptions& o = options;
      const auto number = [&](const char* name) {
        const val v = request[name];
        return v.isUndefined() ? 0.0 : v.as<double>();
      };
      const auto int32s = [&](const char* name, const int32_t*& data, mha::Shape& shape) {
        const val v = request[name];
        if (v.isUndefined() || v.isNull()) return;
        data = pointer_of<int32_t>(keys, v);
        shape = shape_of(keys, v[keys.shape]);
      };
      o.num_heads = static_cast<int64_t>(number("numHeads"));
      o.kv_num_heads = static_cast<int64_t>(number("kvNumHeads"));
      o.past_key = tensor_of(keys, request["pastKey"]);
      o.past_value = tensor_of(keys, request["pastValue"]);
      o.attn_mask = mask_of(keys, request[keys.attnMask]);
      o.causal = static_cast<mha::CausalMode>(static_cast<int>(number("causal")));
      int32s("causalOffsets", o.causal_offsets, o.causal_offsets_shape);
      int32s("kvSeqLens", o.kv_seq_lens, o.kv_seq_lens_shape);
      if (!request["scale"].isUndefined()) o.scale = static_cast<float>(number("scale"));
      o.softcap = static_cast<float>(number("softcap"));
      o.dropout = static_cast<float>(number("dropout"));
      o.seed = static_cast<uint64_t>(number("seed"));
      o.sliding_window = static_cast<int64_t>(number("slidingWindow"));
      if (!request["alibiSlopes"].isUndefined())
        o.alibi_slopes = emscripten::convertJSArrayToNumberVector<float>(request["alibiSlopes"]);
      const mha::TensorRef sinks = tensor_of(keys, request["sinks"]);
      o.sinks = sinks.data;
      o.sinks_shape = sinks.shape;
      o.need_weights = request[keys.needWeights].as<bool>();
      o.capture = request[keys.capture].as<bool>();
    }
  };

  RequestKeys keys_;
  int error_kind_ = kNone;
  std::string error_;
};

// Bytes the allocator has handed out and not yet freed; the leak tests watch this.
double heapAllocatedBytes() { return static_cast<double>(heap_in_use()); }

// mha-wasm/models' MLP activation (bindings/js/models/mlp-activation.js) on heap addresses: out
// [rows, I] = act(gate) * up of [rows, 2I] (gated) or act(x) of [rows, I]; act 'silu' or
// 'gelu_tanh' (the wrapper checked it and the sizes).
void mlpActivation(double in, double rows, double width, std::string act, bool gated, double out) {
  mha::kernels::mlp_activation(at<const float>(in), static_cast<int64_t>(rows), static_cast<int64_t>(width),
                               act == "silu" ? mha::kernels::MlpActivation::kSilu : mha::kernels::MlpActivation::kGeluTanh,
                               gated, at<float>(out));
}
// The most the heap can grow to (the module's maximum memory: 4 GiB for wasm32).
double heapLimitBytes() { return static_cast<double>(mha::addressable_bytes()); }

}  // namespace

#ifdef __EMSCRIPTEN_PTHREADS__
// A few bytes of the shared memory where a pool worker records a refused memory growth, so the
// main thread's out-of-memory message can name it (layout and use: src/mha/wasm_threads_pre.js).
extern "C" EMSCRIPTEN_KEEPALIVE uint32_t* mha_growth_refusal_record() {
  alignas(8) static uint32_t record[32];
  return record;
}
#endif

EMSCRIPTEN_BINDINGS(mha_wasm) {
  emscripten::class_<CacheHandle>("CacheHandle")
      .function("length", &CacheHandle::length)
      .function("capacity", &CacheHandle::capacity)
      .function("batch", &CacheHandle::batch)
      .function("byteSize", &CacheHandle::byteSize)
      .function("kind", &CacheHandle::kind)
      .function("truncate", &CacheHandle::truncate)
      .function("reset", &CacheHandle::reset)
      .function("advance", &CacheHandle::advance);
  emscripten::class_<SavedForwardHandle>("SavedForwardHandle");
  emscripten::class_<LayerHandle>("LayerHandle")
      .constructor<val>()
      .function("lastErrorKind", &LayerHandle::lastErrorKind)
      .function("lastError", &LayerHandle::lastError)
      .function("config", &LayerHandle::config)
      .function("stateDictShapes", &LayerHandle::stateDictShapes)
      .function("loadStateDict", &LayerHandle::loadStateDict)
      .function("checkLoadStateDict", &LayerHandle::checkLoadStateDict)
      .function("loadQuantized", &LayerHandle::loadQuantized)
      .function("weightBytes", &LayerHandle::weightBytes)
      .function("quantized", &LayerHandle::quantized)
      .function("quantizedProjection", &LayerHandle::quantizedProjection)
      .function("forward", &LayerHandle::forward)
      .function("forwardForTraining", &LayerHandle::forwardForTraining, emscripten::allow_raw_pointers())
      .function("backward", &LayerHandle::backward)
      .function("gradientEntries", &LayerHandle::gradientEntries)
      .function("releaseGradients", &LayerHandle::releaseGradients)
      .function("stateDict", &LayerHandle::stateDict)
      .function("releaseStateDict", &LayerHandle::releaseStateDict)
      .function("checkForward", &LayerHandle::checkForward)
      .function("planForward", &LayerHandle::planForward)
      .function("createCache", &LayerHandle::createCache, emscripten::allow_raw_pointers())
      .function("createPlannedCache", &LayerHandle::createPlannedCache, emscripten::allow_raw_pointers())
      .function("setKeyValue", &LayerHandle::setKeyValue)
      .function("planKeyValue", &LayerHandle::planKeyValue)
      .function("plannedOutputShape", &LayerHandle::plannedOutputShape)
      .function("plannedWeightsShape", &LayerHandle::plannedWeightsShape)
      .function("plannedSteps", &LayerHandle::plannedSteps)
      .function("plannedSizes", &LayerHandle::plannedSizes)
      .function("outputPtr", &LayerHandle::outputPtr)
      .function("outputShape", &LayerHandle::outputShape)
      .function("weightsPtr", &LayerHandle::weightsPtr)
      .function("weightsShape", &LayerHandle::weightsShape)
      .function("capturedEntries", &LayerHandle::capturedEntries)
      .function("releaseResult", &LayerHandle::releaseResult);
  emscripten::class_<AttentionFunctionHandle>("AttentionFunctionHandle")
      .constructor<>()
      .function("lastErrorKind", &AttentionFunctionHandle::lastErrorKind)
      .function("takeError", &AttentionFunctionHandle::takeError)
      .function("plan", &AttentionFunctionHandle::plan)
      .function("run", &AttentionFunctionHandle::run)
      .function("backward", &AttentionFunctionHandle::backward);
  emscripten::class_<LinearHandle>("LinearHandle")
      .constructor<double, double, bool, std::string>()
      .function("lastErrorKind", &LinearHandle::lastErrorKind)
      .function("lastError", &LinearHandle::lastError)
      .function("weightBytes", &LinearHandle::weightBytes)
      .function("checkLoad", &LinearHandle::checkLoad)
      .function("load", &LinearHandle::load)
      .function("checkForward", &LinearHandle::checkForward)
      .function("forward", &LinearHandle::forward)
      .function("rows", &LinearHandle::rows);
  emscripten::class_<Float64SavedHandle>("Float64SavedHandle");
  emscripten::class_<Float64LayerHandle>("Float64LayerHandle")
      .constructor<val>()
      .function("lastErrorKind", &Float64LayerHandle::lastErrorKind)
      .function("lastError", &Float64LayerHandle::lastError)
      .function("config", &Float64LayerHandle::config)
      .function("stateDictShapes", &Float64LayerHandle::stateDictShapes)
      .function("checkLoadStateDict", &Float64LayerHandle::checkLoadStateDict)
      .function("loadStateDict", &Float64LayerHandle::loadStateDict)
      .function("stateDict", &Float64LayerHandle::stateDict)
      .function("releaseStateDict", &Float64LayerHandle::releaseStateDict)
      .function("weightBytes", &Float64LayerHandle::weightBytes)
      .function("quantized", &Float64LayerHandle::quantized)
      .function("checkForward", &Float64LayerHandle::checkForward)
      .function("plannedOutputShape", &Float64LayerHandle::plannedOutputShape)
      .function("plannedWeightsShape", &Float64LayerHandle::plannedWeightsShape)
      .function("forward", &Float64LayerHandle::forward)
      .function("forwardForTraining", &Float64LayerHandle::forwardForTraining, emscripten::allow_raw_pointers())
      .function("backward", &Float64LayerHandle::backward)
      .function("gradientEntries", &Float64LayerHandle::gradientEntries)
      .function("releaseGradients", &Float64LayerHandle::releaseGradients)
      .function("outputPtr", &Float64LayerHandle::outputPtr)
      .function("outputShape", &Float64LayerHandle::outputShape)
      .function("weightsPtr", &Float64LayerHandle::weightsPtr)
      .function("weightsShape", &Float64LayerHandle::weightsShape)
      .function("releaseResult", &Float64LayerHandle::releaseResult);
  emscripten::function("heapAllocatedBytes", &heapAllocatedBytes);
  emscripten::function("heapLimitBytes", &heapLimitBytes);
  emscripten::function("mlpActivation", &mlpActivation);
  emscripten::function("linearForward", &linearForward);
  emscripten::function("linearBackward", &linearBackward);
#ifdef __EMSCRIPTEN_PTHREADS__
  emscripten::function("setNumThreads", &setNumThreads);
  emscripten::function("numThreads", &numThreads);
  emscripten::function("threadsStarting", &threadsStarting);
#endif
}
