// The layer: torch.nn.MultiheadAttention's forward pass (batch_first, inference), plus
// grouped-query heads and a custom scale.
#pragma once

#include <vector>

#include "attention_config.hpp"
#include "forward_plan.hpp"
#include "parameters.hpp"
#include "shape.hpp"

namespace mha {

struct ForwardResult {
  std::vector<float> output;   // output_shape
  Shape output_shape;
  std::vector<float> weights;  // weights_shape; empty unless need_weights
  Shape weights_shape;
};

class MultiheadAttention {
 public:
  explicit MultiheadAttention(const AttentionConfig& config);  // throws ArgumentError

  const ResolvedConfig& config() const { return config_; }
  bool has_weights() const { return loaded_; }
  void load_state_dict(const StateDict& state);  // all or nothing; throws ArgumentError
  const AttentionParameters& parameters() const { return params_; }

  // Checks the inputs and returns the shapes forward would produce, without computing.
  ForwardPlan plan(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                   const ForwardOptions& options) const;

  // key and value may be empty TensorRefs for self-attention.
  ForwardResult forward(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                        const ForwardOptions& options = {}) const;

  // The same, into caller buffers sized by plan(): output always, weights when need_weights.
  void forward_into(const ForwardPlan& plan, const TensorRef& query, const TensorRef& key,
                    const TensorRef& value, const ForwardOptions& options, float* output,
                    float* weights) const;

 private:
  ResolvedConfig config_;
  AttentionParameters params_;
  bool loaded_ = false;
};

}  // namespace mha
