// The layer: torch.nn.MultiheadAttention's forward pass (batch_first, inference), plus
// grouped-query heads and a custom scale.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/layer/forward_result.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/cache/kv_cache.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/plan/shape.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace mha {

// What a forward pass with grad keeps for its backward pass (saved_forward.hpp): copies of the
// inputs, masks and positions, the projected and rotated q, k, v, the attended values and each
// row's log-sum-exp. O((L + S) x features), never L x S.
struct SavedForward;

// Runs a call's work on the layer's pool (layer_stages.hpp).
class StageRunner;

// Step-by-step forward passes (attention_steps.hpp).
struct StepRequest;
struct CapturedStep;

// dLoss/d everything a forward pass read that can learn or carries a gradient.
struct Gradients {
  std::vector<float> query;  // query's shape; with self-attention the sum of its three uses
  std::vector<float> key, value;  // key's and value's shapes; empty when forward got none
  Shape query_shape, key_shape, value_shape;
  AttentionParameters params;  // the parameters' layout; biases / sinks empty where the layer has none
};

class MultiheadAttention {
 public:
  explicit MultiheadAttention(const AttentionConfig& config);  // throws ArgumentError

  const ResolvedConfig& config() const { return config_; }
  bool has_weights() const { return loaded_; }
  void load_state_dict(const StateDict& state);  // all or nothing; throws ArgumentError
  // The float32 parameters the layer keeps: the projections' weights are empty where they are
  // held quantized (config weight_dtype, or load_quantized); float_parameters() has them all.
  const AttentionParameters& parameters() const { return params_; }
  AttentionParameters float_parameters() const;  // every weight as float32 (dequantized)

  // One projection in the canonical quantized layout (kernels/weight_formats.hpp), stored as is:
  // name is a projection's state-dict key (q_proj_weight, k_proj_weight, v_proj_weight,
  // out_proj.weight, or in_proj_weight where the layout fuses), dtype f16, int8 or q4; zero
  // points (q4 only) may be absent. On a layer with weights it replaces that projection; before
  // the first load_state_dict it is kept, and load_state_dict may then leave that key out (a
  // layer with no bias and no sinks is complete once its projections are all given). All or
  // nothing; throws ArgumentError naming the argument and the expected shape.
  void load_quantized(const std::string& name, WeightDtype dtype, const uint8_t* data, int64_t data_bytes,
                      const float* scales, int64_t scale_count, const uint8_t* zero_points, int64_t zero_point_bytes);
  // Bytes of weights the layer holds: projections as stored (panels, scales, zero points, and
  // float32 copies the backward pass reads), biases, sinks.
  uint64_t weight_bytes() const;
  // Whether any projection is stored quantized (then backward() gives input gradients only).
  bool quantized() const;
  // Projection `which` ('q', 'k', 'v', 'o' or 'g', the gate) as the kernels hold it: its quantized panels, or
  // null when it is float32 (the WebGPU backend reads the canonical bytes from these).
  const kernels::QuantizedPanels* quantized_projection(char which) const;

  // Threads forward() may use: a pool shared with the caller's other layers, or null for the
  // calling thread only (the default).
  void set_thread_pool(std::shared_ptr<ThreadPool> pool) { pool_ = std::move(pool); }
  const std::shared_ptr<ThreadPool>& thread_pool() const { return pool_; }

  // Checks the inputs and returns the shapes forward would produce, without computing.
  ForwardPlan plan(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                   const ForwardOptions& options) const;

  // key and value may be empty TensorRefs for self-attention.
  ForwardResult forward(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                        const ForwardOptions& options = {}) const;

  // forward() step by step (attention_steps.hpp), for calls that capture steps or patch one:
  // `captured` receives the steps `steps` asks for, in the chain's order. The default paths
  // never come here. Throws ArgumentError for a request check_steps refuses.
  ForwardResult forward_steps(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                              const ForwardOptions& options, const StepRequest& steps,
                              std::vector<CapturedStep>& captured) const;

  // Training: forward() that also returns what backward() needs (options.cache must be null;
  // options.training with config.dropout > 0 applies dropout with options.seed).
  struct TrainingForward;
  // With `steps` (capture or patch), the step-by-step path runs (forward_steps): `captured`
  // receives the steps, and the gradients treat a patched tensor as a constant.
  TrainingForward forward_for_training(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                       const ForwardOptions& options, const StepRequest* steps = nullptr,
                                       std::vector<CapturedStep>* captured = nullptr) const;
  // d_output: dLoss/dOutput, the forward's output shape. Throws when the layer's weights changed
  // since that forward (load_state_dict).
  Gradients backward(const SavedForward& saved, const float* d_output) const;

  // A KV cache for this layer (kv_cache.hpp): batch rows of up to `capacity` tokens.
  // (Not for a layer that appends keys: config add_bias_kv / add_zero_attn.)
  std::unique_ptr<KvCache> create_cache(int64_t batch, int64_t capacity, CacheDtype dtype, bool storage = true) const {
    if (config_.extra_keys() > 0)
      throw type_error(std::string(config_.add_bias_kv ? "addBiasKv" : "addZeroAttn") +
                       ": a layer that appends keys takes no cache (the appended keys follow each call's keys; a "
                       "cache's keys grow from call to call)");
    return std::make_unique<KvCache>(config_, this, batch, capacity, dtype, storage);
  }

  // Makes `cache` a cross-attention cache holding the projected (and, with rotary, rotated) keys
  // and values of key [B, S, kdim] / value [B, S, vdim]: later forward calls with the cache
  // attend to them without projecting again. All or nothing.
  void set_key_value(KvCache& cache, const TensorRef& key, const TensorRef& value) const;
  // set_key_value's checks of the cache and the shapes (not of the weights): returns S. The
  // WebGPU backend plans its cross caches with it (a storage-less cache then records S tokens).
  int64_t check_key_value(const KvCache& cache, const TensorRef& key, const TensorRef& value) const;

  // The same, into caller buffers sized by plan(): output always, weights when need_weights.
  void forward_into(const ForwardPlan& plan, const TensorRef& query, const TensorRef& key,
                    const TensorRef& value, const ForwardOptions& options, float* output,
                    float* weights) const;

 private:
  // forward_steps for a planned batch-first call. With `saved` (forward_for_training), q, k, v, z
  // and each row's log-sum-exp are kept for backward(), and the patched heads recorded as constants.
  ForwardResult run_steps(const ForwardPlan& plan, const TensorRef& query, const TensorRef& key,
                          const TensorRef& value, const ForwardOptions& options, const StepRequest& steps,
                          std::vector<CapturedStep>& captured, SavedForward* saved) const;
  void run_forward(const ForwardPlan& plan, const TensorRef& query, const TensorRef& key, const TensorRef& value,
                   const ForwardOptions& options, float* output, float* weights, SavedForward* saved) const;
  void rotate(const ForwardPlan& plan, const ForwardOptions& options, bool self_attention, int64_t projected_keys,
              float* q, float* k, bool inverse) const;
  // The q/k norms (config qk_norm; kernels/qk_norm.hpp) on `q_rows` rows of projected queries and
  // `k_rows` of projected keys, in place, before rotary. No-op without them.
  void normalize_qk(float* q, int64_t q_rows, float* k, int64_t k_rows) const;
  float dropout_in(const ForwardOptions& options) const;  // p when dropout applies to this call, else 0
  // The output gate (config gate; kernels/output_gate.hpp) on `rows` rows: gate <- sigmoid(query
  // W_gate^T + b_gate), gated <- attended ⊙ gate (gated may be attended). No-op without a gate.
  void apply_gate(const StageRunner& run, const float* query, const float* attended, float* gate, float* gated,
                  int64_t rows, kernels::QuantizedInput* xq = nullptr) const;

  ResolvedConfig config_;
  AttentionParameters params_;
  bool loaded_ = false;
  uint64_t weights_version_ = 0;  // load_state_dict calls: a saved forward is only valid for its weights
  // The projections' weights repacked for the GEMM micro-kernel, once per load_state_dict.
  struct PackedProjections {
    kernels::PackedLinear q, k, v, out;
    kernels::PackedLinear gate;  // the output gate's projection (config gate), else empty
  } packed_;
  // Projections load_quantized received before the first load_state_dict, by state-dict key.
  std::map<std::string, kernels::QuantizedMatrix> pending_;
  std::shared_ptr<ThreadPool> pool_;
  // Buffers forward() reuses from call to call natively (projections, attended values,
  // per-thread kernel scratch): fresh multi-megabyte allocations each call cost page faults.
  // Calls on one layer from several threads take turns. Uninitialized (no std::vector zero
  // fill): every stage writes its part before reading it, as natively, where a call finds the
  // previous call's values here (the sanitizer builds fill it with NaN first, to check).
  struct Workspace {
    std::mutex mutex;
    std::unique_ptr<float[]> buffers;
    size_t size = 0;
  };
  std::unique_ptr<Workspace> workspace_ = std::make_unique<Workspace>();
};

struct MultiheadAttention::TrainingForward {
  ForwardResult result;
  std::unique_ptr<SavedForward> saved;
};

}  // namespace mha
