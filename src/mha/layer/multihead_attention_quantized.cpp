// The layer's quantized weights: load_quantized (one projection in the canonical layout of
// kernels/weight_formats.hpp, checked here), and what the layer holds (weight_bytes, the
// float32 view for stateDict and backward).
#include <set>

#include "mha/plan/errors.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/plan/shape.hpp"

namespace mha {
namespace {

// Rows [first, first + count) of a canonical matrix (in_proj_weight's q, k and v parts).
kernels::QuantizedMatrix rows_of(const kernels::QuantizedMatrix& m, int64_t first, int64_t count) {
  using kernels::QuantizedMatrix;
  kernels::QuantizedMatrix part;
  part.dtype = m.dtype;
  part.out_features = count;
  part.in_features = m.in_features;
  const auto slice = [&](const auto& all, int64_t per_row) {
    using V = std::decay_t<decltype(all)>;
    return all.empty() ? V() : V(all.begin() + first * per_row, all.begin() + (first + count) * per_row);
  };
  const int64_t in = m.in_features;
  part.data = slice(m.data, QuantizedMatrix::data_bytes(m.dtype, 1, in));
  part.scales = slice(m.scales, QuantizedMatrix::scale_count(m.dtype, 1, in));
  part.zero_points = slice(m.zero_points, QuantizedMatrix::zero_point_bytes(m.dtype, 1, in));
  return part;
}

std::string layout_text(WeightDtype dtype, int64_t out, int64_t in) {
  const std::string o = std::to_string(out), i = std::to_string(in), b = std::to_string(kernels::q4_blocks(in));
  switch (dtype) {
    case WeightDtype::kInt8: return "data int8 [" + o + ", " + i + "], scales float32 [" + o + "]";
    case WeightDtype::kQ4:
      return "data uint8 [" + o + ", " + b + ", 16], scales float32 [" + o + ", " + b +
             "], zeroPoints uint8 [" + o + ", " + std::to_string((kernels::q4_blocks(in) + 1) / 2) + "] or none";
    default: return "data uint16 [" + o + ", " + i + "], no scales";
  }
}

}  // namespace

void MultiheadAttention::load_quantized(const std::string& name, WeightDtype dtype, const uint8_t* data,
                                        int64_t data_bytes, const float* scales, int64_t scale_count,
                                        const uint8_t* zero_points, int64_t zero_point_bytes) {
  using kernels::QuantizedMatrix;
  const ResolvedConfig& c = config_;
  // The projection's rows and columns, by its state-dict key.
  int64_t out = 0, in = 0;
  std::string keys;
  for (const auto& [key, shape] : state_dict_layout(c)) {
    if (shape.size() != 2) continue;  // biases, bias_k / bias_v, sinks: float32 only
    keys += (keys.empty() ? "'" : ", '") + key + "'";
    if (key == name) out = shape[0], in = shape[1];
  }
  if (state_dict_layout(c)[0].first == "in_proj_weight") {  // the separate form, as loadStateDict takes it
    keys += ", 'q_proj_weight', 'k_proj_weight', 'v_proj_weight'";
    if (name == "q_proj_weight" || name == "k_proj_weight" || name == "v_proj_weight") out = c.embed_dim, in = c.embed_dim;
  }
  if (out == 0) throw type_error("loadQuantized: name must be one of " + keys + ", got '" + name + "'");
  const std::string what = "loadQuantized('" + name + "', '" + weight_dtype_name(dtype) + "')";
  if (dtype == WeightDtype::kF32)
    throw type_error("loadQuantized: dtype must be 'f16', 'int8' or 'q4' (float32 weights go through loadStateDict), got 'f32'");
  const std::string expected = " (" + layout_text(dtype, out, in) + ")";
  const int64_t want_data = QuantizedMatrix::data_bytes(dtype, out, in);
  if (data_bytes != want_data || (want_data > 0 && !data))
    throw range_error(what + ": data: expected " + std::to_string(want_data) + " bytes" + expected + ", got " +
                      std::to_string(data_bytes));
  const int64_t want_scales = QuantizedMatrix::scale_count(dtype, out, in);
  if (scale_count != want_scales || (want_scales > 0 && !scales))
    throw range_error(what + ": scales: expected " + std::to_string(want_scales) + " floats" + expected + ", got " +
                      std::to_string(scale_count));
  const int64_t want_zero_points = QuantizedMatrix::zero_point_bytes(dtype, out, in);
  if (zero_point_bytes != 0 && (zero_point_bytes != want_zero_points || !zero_points))
    throw range_error(what + ": zeroPoints: expected " +
                      (want_zero_points ? std::to_string(want_zero_points) + " bytes or none" : std::string("none")) +
                      expected + ", got " + std::to_string(zero_point_bytes));

  QuantizedMatrix m;
  m.dtype = dtype;
  m.out_features = out;
  m.in_features = in;
  m.data.assign(data, data + data_bytes);
  if (scale_count) m.scales.assign(scales, scales + scale_count);
  if (zero_point_bytes) m.zero_points.assign(zero_points, zero_points + zero_point_bytes);

  // in_proj_weight: the q, k and v rows, each its own projection.
  std::vector<std::pair<std::string, QuantizedMatrix>> parts;
  if (name == "in_proj_weight") {
    const int64_t E = c.embed_dim;
    parts = {{"q_proj_weight", rows_of(m, 0, E)}, {"k_proj_weight", rows_of(m, E, E)}, {"v_proj_weight", rows_of(m, 2 * E, E)}};
  } else {
    parts.push_back({name, std::move(m)});
  }
  if (!loaded_) {
    for (auto& [key, part] : parts) pending_[key] = std::move(part);
    // Nothing else to load (no biases, no sinks): the layer is complete once all four are given.
    const bool all = pending_.count("q_proj_weight") && pending_.count("k_proj_weight") &&
                     pending_.count("v_proj_weight") && pending_.count("out_proj.weight") &&
                     (!c.gate || pending_.count("gate_proj.weight"));
    if (all && !c.bias && !c.sinks && !c.add_bias_kv) load_state_dict({});
    return;
  }
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  for (auto& [key, part] : parts) {
    kernels::PackedLinear* target = key == "q_proj_weight"      ? &packed_.q
                                    : key == "k_proj_weight"    ? &packed_.k
                                    : key == "v_proj_weight"    ? &packed_.v
                                    : key == "gate_proj.weight" ? &packed_.gate
                                                                : &packed_.out;
    std::vector<float>& held = key == "q_proj_weight"      ? params_.q_weight
                               : key == "k_proj_weight"    ? params_.k_weight
                               : key == "v_proj_weight"    ? params_.v_weight
                               : key == "gate_proj.weight" ? params_.gate_weight
                                                           : params_.out_weight;
    const std::vector<float>& b = key == "q_proj_weight"      ? params_.q_bias
                                  : key == "k_proj_weight"    ? params_.k_bias
                                  : key == "v_proj_weight"    ? params_.v_bias
                                  : key == "gate_proj.weight" ? params_.gate_bias
                                                              : params_.out_bias;
    *target = kernels::PackedLinear(part, bias(b));
    std::vector<float>().swap(held);
  }
  ++weights_version_;
}

bool MultiheadAttention::quantized() const {
  for (const auto* p : {&packed_.q, &packed_.k, &packed_.v, &packed_.out, &packed_.gate})
    if (p->dtype() != WeightDtype::kF32) return true;
  return false;
}

const kernels::QuantizedPanels* MultiheadAttention::quantized_projection(char which) const {
  switch (which) {
    case 'q': return packed_.q.quantized();
    case 'k': return packed_.k.quantized();
    case 'v': return packed_.v.quantized();
    case 'g': return packed_.gate.quantized();
    default: return packed_.out.quantized();
  }
}

uint64_t MultiheadAttention::weight_bytes() const {
  if (!loaded_) return 0;
  const auto floats = [](const std::vector<float>& v) { return static_cast<uint64_t>(v.size()) * sizeof(float); };
  uint64_t bytes = floats(params_.q_weight) + floats(params_.k_weight) + floats(params_.v_weight) +
                   floats(params_.out_weight) + floats(params_.sinks) + floats(params_.gate_weight) +
                   floats(params_.bias_k) + floats(params_.bias_v);
  for (const auto* p : {&packed_.q, &packed_.k, &packed_.v, &packed_.out, &packed_.gate}) bytes += p->weight_bytes();
  return bytes;
}

AttentionParameters MultiheadAttention::float_parameters() const {
  AttentionParameters p = params_;
  if (p.q_weight.empty()) p.q_weight = packed_.q.weight();
  if (p.k_weight.empty()) p.k_weight = packed_.k.weight();
  if (p.v_weight.empty()) p.v_weight = packed_.v.weight();
  if (p.out_weight.empty()) p.out_weight = packed_.out.weight();
  if (config_.gate && p.gate_weight.empty()) p.gate_weight = packed_.gate.weight();
  return p;
}

}  // namespace mha
