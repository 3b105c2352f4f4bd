#include "layer_config.hpp"

#include <string>

#include "mha/layer/parameters.hpp"
#include "request_keys.hpp"

namespace mha_embind {

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

val state_dict_shapes(const mha::ResolvedConfig& c) {
  val o = val::object();
  for (const auto& [key, shape] : mha::state_dict_layout(c)) o.set(key, array_of(shape));
  return o;
}

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

}  // namespace mha_embind
