#include "mha/layer/parameters.hpp"

#include <algorithm>

#include "mha/plan/errors.hpp"
#include "mha/plan/shape.hpp"

namespace mha {
namespace {

// PyTorch's own layer: one [3E, E] in_proj_weight. Any other shape has separate q/k/v weights.
bool fused_in_proj(const ResolvedConfig& c) {
  const int64_t E = c.embed_dim;
  return c.kdim == E && c.vdim == E && c.num_kv_heads == c.num_heads && c.q_dim() == E &&
         c.value_head_dim == c.head_dim && c.output_dim == E;
}

std::string quoted_keys(const std::vector<std::pair<std::string, Shape>>& layout) {
  std::string s;
  for (const auto& [key, shape] : layout) s += (s.empty() ? "'" : ", '") + key + "'";
  return s;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> state_dict_layout(const ResolvedConfig& c) {
  const int64_t E = c.embed_dim, qd = c.q_dim(), kd = c.kv_dim(), vd = c.value_kv_dim();
  std::vector<std::pair<std::string, Shape>> layout;
  if (fused_in_proj(c)) {
    layout.push_back({"in_proj_weight", {3 * E, E}});
  } else {
    layout.push_back({"q_proj_weight", {qd, E}});
    layout.push_back({"k_proj_weight", {kd, c.kdim}});
    layout.push_back({"v_proj_weight", {vd, c.vdim}});
  }
  if (c.bias) layout.push_back({"in_proj_bias", {qd + kd + vd}});
  if (c.add_bias_kv) {  // (PyTorch's order: the layer's own parameters, then out_proj's)
    layout.push_back({"bias_k", {1, 1, kd}});
    layout.push_back({"bias_v", {1, 1, vd}});
  }
  layout.push_back({"out_proj.weight", {c.output_dim, c.attended_dim()}});
  if (c.bias) layout.push_back({"out_proj.bias", {c.output_dim}});
  if (c.sinks) layout.push_back({"sinks", {c.num_heads}});
  if (c.qk_norm) {
    const bool per_head = c.qk_norm.over == QkNormScope::kHead;
    layout.push_back({"q_norm.weight", {per_head ? c.head_dim : qd}});
    layout.push_back({"k_norm.weight", {per_head ? c.head_dim : kd}});
  }
  if (c.gate) {
    layout.push_back({"gate_proj.weight", {c.attended_dim(), E}});
    if (c.bias) layout.push_back({"gate_proj.bias", {c.attended_dim()}});
  }
  return layout;
}

template <typename T>
BasicParameters<T> parameters_from_state_dict(const ResolvedConfig& c, const BasicStateDict<T>& state,
                                              const std::set<std::string>& held) {
  auto layout = state_dict_layout(c);
  // Where PyTorch fuses q/k/v we also take the separate form, if that is what was given.
  const bool held_qkv = held.count("q_proj_weight") || held.count("k_proj_weight") || held.count("v_proj_weight");
  if (fused_in_proj(c) && !state.count("in_proj_weight") && (state.count("q_proj_weight") || held_qkv)) {
    layout.erase(layout.begin());
    const int64_t E = c.embed_dim;
    layout.insert(layout.begin(), {{"q_proj_weight", {E, E}}, {"k_proj_weight", {E, E}}, {"v_proj_weight", {E, E}}});
  }

  for (const auto& entry : state) {
    const std::string& key = entry.first;
    bool known = std::any_of(layout.begin(), layout.end(), [&](const auto& kv) { return kv.first == key; });
    if (!known) {
      std::string why = (key == "in_proj_bias" || key == "out_proj.bias" || key == "gate_proj.bias") && !c.bias
                            ? " (the layer has bias: false)"
                        : key.rfind("gate_proj.", 0) == 0 && !c.gate ? " (the layer has no gate: give gate: true)"
                        : (key == "q_norm.weight" || key == "k_norm.weight") && !c.qk_norm
                            ? " (the layer has no q/k norms: give qkNorm)"
                                                                    : "";
      throw type_error("stateDict: unexpected key '" + key + "'" + why + "; expected exactly " + quoted_keys(layout));
    }
  }
  auto get = [&](const std::string& key, const Shape& shape) -> std::vector<T> {
    auto it = state.find(key);
    const int64_t want = element_count(shape);
    if (it == state.end())
      throw type_error("stateDict: missing key '" + key + "' (expected " + std::to_string(want) +
                       " floats, shape " + format_shape(shape) + ")");
    const BasicStateDictEntry<T>& e = it->second;
    if (e.length != want)
      throw range_error("stateDict['" + key + "']: expected " + std::to_string(want) + " floats (shape " +
                        format_shape(shape) + "), got " + std::to_string(e.length));
    if (e.data == nullptr && want > 0) throw type_error("stateDict['" + key + "']: data is missing");
    return std::vector<T>(e.data, e.data + want);
  };

  // Check every entry before keeping any, so a failed load changes nothing.
  std::map<std::string, std::vector<T>> tensors;
  for (const auto& [key, shape] : layout)
    if (!held.count(key) || state.count(key)) tensors[key] = get(key, shape);

  BasicParameters<T> p;
  const int64_t E = c.embed_dim, qd = c.q_dim(), kd = c.kv_dim();
  if (tensors.count("in_proj_weight")) {
    const auto& w = tensors["in_proj_weight"];
    p.q_weight.assign(w.begin(), w.begin() + E * E);
    p.k_weight.assign(w.begin() + E * E, w.begin() + 2 * E * E);
    p.v_weight.assign(w.begin() + 2 * E * E, w.end());
  } else {
    p.q_weight = std::move(tensors["q_proj_weight"]);
    p.k_weight = std::move(tensors["k_proj_weight"]);
    p.v_weight = std::move(tensors["v_proj_weight"]);
  }
  p.out_weight = std::move(tensors["out_proj.weight"]);
  if (c.bias) {
    const auto& b = tensors["in_proj_bias"];
    p.q_bias.assign(b.begin(), b.begin() + qd);
    p.k_bias.assign(b.begin() + qd, b.begin() + qd + kd);
    p.v_bias.assign(b.begin() + qd + kd, b.end());
    p.out_bias = std::move(tensors["out_proj.bias"]);
  }
  if (c.sinks) p.sinks = std::move(tensors["sinks"]);
  if (c.qk_norm) {
    p.q_norm = std::move(tensors["q_norm.weight"]);
    p.k_norm = std::move(tensors["k_norm.weight"]);
  }
  if (c.gate) {
    p.gate_weight = std::move(tensors["gate_proj.weight"]);
    if (c.bias) p.gate_bias = std::move(tensors["gate_proj.bias"]);
  }
  if (c.add_bias_kv) {
    p.bias_k = std::move(tensors["bias_k"]);
    p.bias_v = std::move(tensors["bias_v"]);
  }
  return p;
}

template <typename T>
std::vector<std::pair<std::string, std::vector<T>>> state_dict_from_parameters(const ResolvedConfig& c,
                                                                               const BasicParameters<T>& p) {
  const auto joined = [](std::initializer_list<const std::vector<T>*> parts) {
    std::vector<T> all;
    for (const auto* part : parts) all.insert(all.end(), part->begin(), part->end());
    return all;
  };
  std::vector<std::pair<std::string, std::vector<T>>> entries;
  for (const auto& [key, shape] : state_dict_layout(c)) {
    if (key == "in_proj_weight") entries.push_back({key, joined({&p.q_weight, &p.k_weight, &p.v_weight})});
    else if (key == "q_proj_weight") entries.push_back({key, p.q_weight});
    else if (key == "k_proj_weight") entries.push_back({key, p.k_weight});
    else if (key == "v_proj_weight") entries.push_back({key, p.v_weight});
    else if (key == "in_proj_bias") entries.push_back({key, joined({&p.q_bias, &p.k_bias, &p.v_bias})});
    else if (key == "out_proj.weight") entries.push_back({key, p.out_weight});
    else if (key == "out_proj.bias") entries.push_back({key, p.out_bias});
    else if (key == "sinks") entries.push_back({key, p.sinks});
    else if (key == "q_norm.weight") entries.push_back({key, p.q_norm});
    else if (key == "k_norm.weight") entries.push_back({key, p.k_norm});
    else if (key == "gate_proj.weight") entries.push_back({key, p.gate_weight});
    else if (key == "gate_proj.bias") entries.push_back({key, p.gate_bias});
    else if (key == "bias_k") entries.push_back({key, p.bias_k});
    else if (key == "bias_v") entries.push_back({key, p.bias_v});
  }
  return entries;
}

template AttentionParameters parameters_from_state_dict(const ResolvedConfig&, const StateDict&,
                                                        const std::set<std::string>&);
template Float64Parameters parameters_from_state_dict(const ResolvedConfig&, const Float64StateDict&,
                                                      const std::set<std::string>&);
template std::vector<std::pair<std::string, std::vector<float>>> state_dict_from_parameters(const ResolvedConfig&,
                                                                                           const AttentionParameters&);
template std::vector<std::pair<std::string, std::vector<double>>> state_dict_from_parameters(const ResolvedConfig&,
                                                                                            const Float64Parameters&);

}  // namespace mha
