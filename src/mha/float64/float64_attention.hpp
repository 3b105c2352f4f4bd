// nn.MultiheadAttention in float64: a layer of config dtype 'float64' (PyTorch's dtype=torch.float64)
// takes, computes in and returns doubles, forward and backward. Plain loops written as the math
// reads (no blocking, no SIMD, no online softmax): its figure against the float32 layer is in
// docs/performance.md. Its shapes and their errors are the float32 layer's (plan_forward); its
// options are nn.MultiheadAttention's own (attention_config.hpp's resolve() refuses the rest):
// masks, causal, kdim/vdim, bias, batchFirst, addBiasKv, addZeroAttn, static keys and values,
// need/average weights, grouped-query heads and free head sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/layer/forward_result.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

// A read-only float64 tensor owned by the caller.
struct Float64TensorRef {
  const double* data = nullptr;
  Shape shape;
  bool present() const { return data != nullptr || !shape.empty(); }
};

// One float64 forward call. `options` as the float32 layer's, but: its float masks hold doubles
// (bool masks stay bytes), its static_k / static_v are unused (the tensors here replace them),
// and a cache or positions is refused (a float64 layer has neither).
struct Float64Call {
  Float64TensorRef query, key, value;  // key and value absent: self-attention
  Float64TensorRef static_k, static_v;
  ForwardOptions options;
};

// dLoss/d everything the forward pass read that carries a gradient (Gradients' float64 twin).
struct Float64Gradients {
  std::vector<double> query;        // query's shape; with self-attention the sum of its three uses
  std::vector<double> key, value;   // key's and value's shapes; empty when forward got none
  Float64Parameters params;         // the parameters' layout (zeros where static keys or values replace a projection)
};

// What a forward pass with grad keeps: copies of its inputs, batch-first, with its masks and
// options (backward runs the forward pass again from them).
struct Float64SavedForward {
  ForwardPlan plan;
  bool self_attention;
  std::vector<double> query, key, value, static_k, static_v;
  std::vector<uint8_t> key_padding_mask, attn_mask;  // the masks' bytes (bools, or doubles)
  ForwardOptions options;                           // its masks point into the copies above
  uint64_t weights_version;
};

class Float64Attention {
 public:
  explicit Float64Attention(const AttentionConfig& config);  // config.dtype 'float64'; throws ArgumentError

  const ResolvedConfig& config() const { return config_; }
  bool has_weights() const { return loaded_; }
  void load_state_dict(const Float64StateDict& state);  // all or nothing; throws ArgumentError
  const Float64Parameters& parameters() const { return params_; }
  uint64_t weight_bytes() const;

  // Checks the call (plan_forward's checks, and what a float64 layer refuses) and returns its sizes.
  ForwardPlan plan(const Float64Call& call) const;
  // Bytes a planned call allocates (grad: with its saved copies), for check_fits before it runs.
  std::vector<MemoryItem> forward_memory(const ForwardPlan& plan, bool grad) const;

  Float64Result forward(const Float64Call& call) const;
  // forward() that also keeps what backward() needs.
  Float64Result forward_for_training(const Float64Call& call, std::unique_ptr<Float64SavedForward>& saved) const;
  // d_output: dLoss/dOutput, the forward's output shape. Throws when the weights changed since.
  Float64Gradients backward(const Float64SavedForward& saved, const double* d_output) const;

 private:
  ResolvedConfig config_;
  Float64Parameters params_;
  bool loaded_ = false;
  uint64_t weights_version_ = 0;  // load_state_dict calls: a saved forward is only valid for its weights
};

// The weights' bytes of a float64 layer of config c, by state-dict key (8 bytes an element).
std::vector<MemoryItem> float64_weight_memory(const ResolvedConfig& c);

}  // namespace mha
