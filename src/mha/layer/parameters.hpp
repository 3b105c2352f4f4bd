// The layer's learned weights, in nn.Linear layout [out, in], and how a PyTorch state dict maps onto them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"

namespace mha {

// T: float for the layer (float32), double for a dtype 'float64' layer (float64_attention.hpp).
template <typename T>
struct BasicParameters {
  std::vector<T> q_weight;    // [H*Dh, E]
  std::vector<T> k_weight;    // [Hkv*Dh, kdim]
  std::vector<T> v_weight;    // [Hkv*Dv, vdim]
  std::vector<T> out_weight;  // [outputDim, H*Dv]
  std::vector<T> q_bias, k_bias, v_bias, out_bias;  // empty when the layer has no bias
  std::vector<T> sinks;       // [H] sink logits; empty unless config.sinks
  std::vector<T> gate_weight;  // [H*Dv, E] the output gate's projection; empty unless config.gate
  std::vector<T> gate_bias;    // [H*Dv]; empty unless config.gate and config.bias
  std::vector<T> bias_k, bias_v;  // [Hkv*Dh] / [Hkv*Dv] (PyTorch's [1, 1, E]); empty unless add_bias_kv
  // (last: code that builds a parameter set positionally ends before them)
  std::vector<T> q_norm, k_norm;  // [Dh] each, or [H*Dh] / [Hkv*Dh]: the q/k norms' weights; empty unless config.qk_norm
};
using AttentionParameters = BasicParameters<float>;
using Float64Parameters = BasicParameters<double>;

// One caller-owned entry of a state dict: a flat buffer of floats (doubles for a float64 layer).
template <typename T>
struct BasicStateDictEntry {
  const T* data = nullptr;
  int64_t length = 0;
};
template <typename T>
using BasicStateDict = std::map<std::string, BasicStateDictEntry<T>>;
using StateDictEntry = BasicStateDictEntry<float>;
using StateDict = BasicStateDict<float>;
using Float64StateDict = BasicStateDict<double>;

// The keys nn.MultiheadAttention would have in its state dict for this config, with their shapes.
// (in_proj_weight for PyTorch's own shapes, else q/k/v_proj_weight; bias_k / bias_v [1, 1, ·] with
// add_bias_kv; 'sinks' [H] with sinks; 'q_norm.weight' and 'k_norm.weight' with qk_norm; 'gate_proj.weight' [H*Dv, E] and, with bias, 'gate_proj.bias'
// [H*Dv] with the gate.)
std::vector<std::pair<std::string, std::vector<int64_t>>> state_dict_layout(const ResolvedConfig& config);

// Copies a state dict into parameters. Throws ArgumentError naming the key for a missing,
// unknown or mis-sized entry. The separate q/k/v form is also accepted where PyTorch would fuse.
// Projection keys in `held` (q_proj_weight, ..., out_proj.weight: weights the layer already holds
// quantized, from loadQuantized) may be absent; their weights then stay empty.
// (Instantiated for float and double in parameters.cpp.)
template <typename T>
BasicParameters<T> parameters_from_state_dict(const ResolvedConfig& config, const BasicStateDict<T>& state,
                                              const std::set<std::string>& held = {});

// The inverse: parameters (or their gradients, which share the layout) as state-dict entries,
// keyed and ordered exactly as state_dict_layout (in_proj_weight fused where PyTorch fuses).
template <typename T>
std::vector<std::pair<std::string, std::vector<T>>> state_dict_from_parameters(const ResolvedConfig& config,
                                                                               const BasicParameters<T>& params);

}  // namespace mha
