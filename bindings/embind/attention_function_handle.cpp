#include "attention_function_handle.hpp"

#include "mha/function/attention_function.hpp"
#include "module_pool.hpp"
#include "request_reader.hpp"

namespace mha_embind {

namespace {

// A request's tensors and options, pointing into the heap.
struct Request {
  mha::TensorRef query, key, value;
  mha::AttentionFunctionOptions options;

  Request(const RequestKeys& keys, const val& request) {
    const RequestReader<float> read(keys, false);
    query = read.tensor(request[keys.query]);
    key = read.tensor(request[keys.key]);
    value = read.tensor(request[keys.value]);
    mha::AttentionFunctionOptions& o = options;
    const auto number = [&](const char* name) {
      const val v = request[name];
      return v.isUndefined() ? 0.0 : v.as<double>();
    };
    o.num_heads = static_cast<int64_t>(number("numHeads"));
    o.kv_num_heads = static_cast<int64_t>(number("kvNumHeads"));
    o.past_key = read.tensor(request["pastKey"]);
    o.past_value = read.tensor(request["pastValue"]);
    o.attn_mask = read.mask(request[keys.attnMask]);
    o.causal = static_cast<mha::CausalMode>(static_cast<int>(number("causal")));
    read.int32s(request["causalOffsets"], o.causal_offsets, o.causal_offsets_shape);
    read.int32s(request["kvSeqLens"], o.kv_seq_lens, o.kv_seq_lens_shape);
    if (!request["scale"].isUndefined()) o.scale = static_cast<float>(number("scale"));
    o.softcap = static_cast<float>(number("softcap"));
    o.dropout = static_cast<float>(number("dropout"));
    o.seed = static_cast<uint64_t>(number("seed"));
    o.sliding_window = static_cast<int64_t>(number("slidingWindow"));
    if (!request["alibiSlopes"].isUndefined())
      o.alibi_slopes = emscripten::convertJSArrayToNumberVector<float>(request["alibiSlopes"]);
    const mha::TensorRef sinks = read.tensor(request["sinks"]);
    o.sinks = sinks.data;
    o.sinks_shape = sinks.shape;
    o.need_weights = request[keys.needWeights].as<bool>();
    o.capture = request[keys.capture].as<bool>();
  }
};

// The plan's sizes, in attention_function.hpp's letters, for a backend that lays the tensors out
// itself (the WebGPU backend): { B, Hq, Hkv, L, S, P, T, E, Ev, packed ([B, L, H*E] inputs),
// batched (false for [Hq, L, E]) }.
val sizes_of(const mha::AttentionPlan& p) {
  val sizes = val::object();
  sizes.set("B", static_cast<double>(p.batch));
  sizes.set("Hq", static_cast<double>(p.q_heads));
  sizes.set("Hkv", static_cast<double>(p.kv_heads));
  sizes.set("L", static_cast<double>(p.query_len));
  sizes.set("S", static_cast<double>(p.key_len));
  sizes.set("P", static_cast<double>(p.past_len));
  sizes.set("T", static_cast<double>(p.total_len));
  sizes.set("E", static_cast<double>(p.head_dim));
  sizes.set("Ev", static_cast<double>(p.value_head_dim));
  sizes.set("packed", p.packed_heads);
  sizes.set("batched", p.batched);
  return sizes;
}

// The address the wrapper put in object[name] (0: none), as a float pointer.
float* address(const val& object, const char* name) { return at<float>(object[name].as<double>()); }

}  // namespace

val AttentionFunctionHandle::plan(val request) {
  val planned = val::null();
  guard([&] {
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
    planned.set("sizes", sizes_of(p));
  });
  return planned;
}

bool AttentionFunctionHandle::run(val request, val outputs) {
  return guard([&] {
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

bool AttentionFunctionHandle::backward(val request, val buffers) {
  return guard([&] {
    const Request r(keys_, request);
    const mha::AttentionPlan p = mha::plan_attention(r.query, r.key, r.value, r.options);
    const auto at = [&](const char* name) { return address(buffers, name); };
    mha::AttentionGradients g;
    g.d_query = at("dQuery");
    g.d_key = at("dKey");
    g.d_value = at("dValue");
    g.d_past_key = at("dPastKey");
    g.d_past_value = at("dPastValue");
    mha::run_attention_backward(p, r.query, r.key, r.value, r.options, at("output"), at("lse"), at("dOutput"), g, pool());
  });
}

}  // namespace mha_embind
