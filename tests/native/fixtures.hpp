// Reads the parity fixtures written by tools/make_fixtures.py (index.json + fixtures.bin).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mha/layer/multihead_attention.hpp"

namespace fixtures {

struct Tensor {
  std::string dtype;  // "float32", "uint8" or "int32"
  mha::Shape shape;
  std::vector<float> f32;
  std::vector<uint8_t> u8;
  std::vector<int32_t> i32;
};

struct Case {
  std::string name;
  nlohmann::json json;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Tensor> state;
  // Gradient cases only (index.json's gradientCases): dLoss/d(query, key, value) and, keyed as the
  // state dict and flat, dLoss/d(parameters), for loss = sum(output * tensors["gradOutput"]).
  std::map<std::string, Tensor> gradients;
  std::map<std::string, Tensor> param_gradients;

  mha::AttentionConfig config() const {
    const auto& c = json["config"];
    mha::AttentionConfig cfg;
    cfg.embed_dim = c["embedDim"];
    cfg.num_heads = c["numHeads"];
    cfg.kdim = c["kdim"];
    cfg.vdim = c["vdim"];
    cfg.bias = c["bias"];
    cfg.num_kv_heads = c["numKvHeads"];
    if (c.contains("scale")) cfg.scale = c["scale"].get<float>();
    cfg.head_dim = c.value("headDim", 0);
    cfg.value_head_dim = c.value("valueHeadDim", 0);
    cfg.output_dim = c.value("outputDim", 0);
    if (c.contains("rotary")) {
      cfg.rotary.dim = c["rotary"]["dim"];
      cfg.rotary.base = c["rotary"].value("base", 10000.0);
      cfg.rotary.interleaved = c["rotary"].value("interleaved", false);
    }
    cfg.sliding_window = c.value("slidingWindow", 0);
    cfg.alibi = c.value("alibi", false);
    if (c.contains("alibiSlopes")) cfg.alibi_slopes = c["alibiSlopes"].get<std::vector<float>>();
    if (c.contains("softcap")) cfg.softcap = c["softcap"].get<float>();
    cfg.sinks = c.value("sinks", false);
    return cfg;
  }
  mha::StateDict state_dict() const {
    mha::StateDict sd;
    for (const auto& [k, t] : state) sd[k] = {t.f32.data(), static_cast<int64_t>(t.f32.size())};
    return sd;
  }
  mha::TensorRef ref(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) return {};
    return {it->second.f32.data(), it->second.shape};
  }
  mha::MaskRef mask(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) return {};
    const Tensor& t = it->second;
    if (t.dtype == "uint8") return {mha::MaskType::kBool, t.u8.data(), t.shape};
    return {mha::MaskType::kFloat, t.f32.data(), t.shape};
  }
  mha::ForwardOptions options() const {
    mha::ForwardOptions o;
    o.causal = json["options"]["causal"];
    o.need_weights = json["options"]["needWeights"];
    o.average_weights = json["options"]["averageWeights"];
    o.key_padding_mask = mask("keyPaddingMask");
    o.attn_mask = mask("attnMask");
    if (auto it = tensors.find("positions"); it != tensors.end()) {
      o.positions = it->second.i32.data();
      o.positions_shape = it->second.shape;
    }
    return o;
  }
};

inline Tensor read_tensor(const nlohmann::json& j, const std::vector<char>& blob) {
  Tensor t;
  t.dtype = j["dtype"];
  t.shape = j["shape"].get<mha::Shape>();
  const size_t offset = j["offset"], length = j["length"];
  if (t.dtype == "float32") {
    t.f32.resize(length);
    std::memcpy(t.f32.data(), blob.data() + offset, length * sizeof(float));
  } else if (t.dtype == "int32") {
    t.i32.resize(length);
    std::memcpy(t.i32.data(), blob.data() + offset, length * sizeof(int32_t));
  } else {
    t.u8.assign(blob.begin() + offset, blob.begin() + offset + length);
  }
  return t;
}

// list: "cases" (forward parity) or "gradientCases".
inline std::vector<Case> load_all(const std::string& dir, const std::string& list = "cases") {
  std::ifstream index_file(dir + "/index.json");
  if (!index_file) throw std::runtime_error("cannot open " + dir + "/index.json");
  nlohmann::json index = nlohmann::json::parse(index_file);
  std::ifstream bin(dir + "/" + index["binary"].get<std::string>(), std::ios::binary);
  std::vector<char> blob((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());
  std::vector<Case> cases;
  for (const auto& c : index[list]) {
    Case fc;
    fc.name = c["name"];
    fc.json = c;
    for (const auto& [k, v] : c["tensors"].items()) fc.tensors[k] = read_tensor(v, blob);
    for (const auto& [k, v] : c["stateDict"].items()) fc.state[k] = read_tensor(v, blob);
    if (c.contains("gradients")) {
      for (const auto& [k, v] : c["gradients"].items()) fc.gradients[k] = read_tensor(v, blob);
      for (const auto& [k, v] : c["paramGradients"].items()) fc.param_gradients[k] = read_tensor(v, blob);
    }
    cases.push_back(std::move(fc));
  }
  return cases;
}

}  // namespace fixtures
