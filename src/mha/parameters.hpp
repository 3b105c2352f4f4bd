// The layer's learned weights, in nn.Linear layout [out, in], and how a PyTorch state dict maps onto them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attention_config.hpp"

namespace mha {

struct AttentionParameters {
  std::vector<float> q_weight;    // [H*Dh, E]
  std::vector<float> k_weight;    // [Hkv*Dh, kdim]
  std::vector<float> v_weight;    // [Hkv*Dv, vdim]
  std::vector<float> out_weight;  // [outputDim, H*Dv]
  std::vector<float> q_bias, k_bias, v_bias, out_bias;  // empty when the layer has no bias
  std::vector<float> sinks;       // [H] sink logits; empty unless config.sinks
  std::vector<float> gate_weight;  // [H*Dv, E] the output gate's projection; empty unless config.gate
  std::vector<float> gate_bias;    // [H*Dv]; empty unless config.gate and config.bias
  std::vector<float> bias_k, bias_v;  // [Hkv*Dh] / [Hkv*Dv] (PyTorch's [1, 1, E]); empty unless add_bias_kv
};

// One caller-owned entry of a state dict: a flat float32 buffer.
struct StateDictEntry {
  const float* data = nullptr;
  int64_t length = 0;
};
using StateDict = std::map<std::string, StateDictEntry>;

// The keys nn.MultiheadAttention would have in its state dict for this config, with their shapes.
// (in_proj_weight for PyTorch's own shapes, else q/k/v_proj_weight; bias_k / bias_v [1, 1, ·] with
// add_bias_kv; 'sinks' [H] with sinks; 'gate_proj.weight' [H*Dv, E] and, with bias, 'gate_proj.bias'
// [H*Dv] with the gate.)
std::vector<std::pair<std::string, std::vector<int64_t>>> state_dict_layout(const ResolvedConfig& config);

// Copies a state dict into parameters. Throws ArgumentError naming the key for a missing,
// unknown or mis-sized entry. The separate q/k/v form is also accepted where PyTorch would fuse.
// Projection keys in `held` (q_proj_weight, ..., out_proj.weight: weights the layer already holds
// quantized, from loadQuantized) may be absent; their weights then stay empty.
AttentionParameters parameters_from_state_dict(const ResolvedConfig& config, const StateDict& state,
                                               const std::set<std::string>& held = {});

// The inverse: parameters (or their gradients, which share the layout) as state-dict entries,
// keyed and ordered exactly as state_dict_layout (in_proj_weight fused where PyTorch fuses).
std::vector<std::pair<std::string, std::vector<float>>> state_dict_from_parameters(const ResolvedConfig& config,
                                                                                   const AttentionParameters& params);

}  // namespace mha
