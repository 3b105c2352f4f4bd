// The step-by-step forward pass (attention_steps.hpp): the layer's own projections, rotary,
// cache and output projection (layer_stages.hpp), and head by head each query row's steps
// (kernels/attention_row_steps.hpp, the score step of kernels/score_epilogue.hpp), each step kept
// where the caller asked and patched where it said. One query row at a time: slow and plain.
#include "mha/steps/attention_steps.hpp"

#include <algorithm>
#include <cmath>

#include "mha/layer/additive_mask.hpp"
#include "mha/plan/errors.hpp"
#include "mha/kernels/attention_row_steps.hpp"
#include "mha/kernels/dropout.hpp"
#include "mha/layer/layer_stages.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"
#include "mha/layer/sequence_first.hpp"

namespace mha {

namespace {

constexpr const char* kStepNames[kStepCount] = {"q", "k", "v", "scores", "logits", "pattern", "z", "gate", "result"};

std::string all_step_names() {
  std::string names;
  for (const char* n : kStepNames) names += (names.empty() ? "" : ", ") + std::string(n);
  return names;
}

}  // namespace

const char* step_name(Step step) { return kStepNames[static_cast<int>(step)]; }

std::vector<std::string> layer_step_names(const ResolvedConfig& c) {
  std::vector<std::string> names;
  for (int s = 0; s < kStepCount; ++s)
    if (static_cast<Step>(s) != Step::kGate || c.gate) names.push_back(kStepNames[s]);
  return names;
}

Step parse_step(const std::string& name, const std::string& argument) {
  for (int s = 0; s < kStepCount; ++s)
    if (name == kStepNames[s]) return static_cast<Step>(s);
  throw type_error(argument + ": unknown step '" + name + "'; the steps are " + all_step_names());
}

bool patchable(Step step) {
  return step == Step::kQ || step == Step::kK || step == Step::kV || step == Step::kPattern || step == Step::kZ ||
         step == Step::kGate;
}

Shape step_shape(const ResolvedConfig& c, const ForwardPlan& p, Step step) {
  const int64_t B = p.batch, H = c.num_heads, Hkv = c.num_kv_heads, L = p.query_len, S = p.key_len;
  Shape s;
  switch (step) {
    case Step::kQ: s = {B, H, L, c.head_dim}; break;
    case Step::kK: s = {B, Hkv, S, c.head_dim}; break;
    case Step::kV: s = {B, Hkv, S, c.value_head_dim}; break;
    case Step::kScores:
    case Step::kLogits:
    case Step::kPattern: s = {B, H, L, S}; break;
    case Step::kZ:
    case Step::kGate: s = {B, L, H, c.value_head_dim}; break;
    case Step::kResult: s = {B, L, H, c.output_dim}; break;
  }
  if (!p.batched) s.erase(s.begin());
  return s;
}

// The symbolic form of a step's shape, for messages.
static std::string symbolic_shape(Step step, bool batched) {
  const char* dims[kStepCount] = {"H, L, Dh", "Hkv, S, Dh", "Hkv, S, Dv", "H, L, S", "H, L, S", "H, L, S", "L, H, Dv",
                                  "L, H, Dv", "L, H, outputDim"};
  return std::string("[") + (batched ? "B, " : "") + dims[static_cast<int>(step)] + "]";
}

CheckedSteps check_steps(const ResolvedConfig& c, const ForwardPlan& p, const StepRequest& request, bool grad) {
  if (c.extra_keys() > 0 && request.present())
    throw type_error(std::string(request.capture.empty() ? "patch" : "capture") + ": not with " +
                     (c.add_bias_kv ? "addBiasKv" : "addZeroAttn") + " yet (the step-by-step path does not append keys)");
  CheckedSteps checked;
  const auto has = [&](Step step, const std::string& argument) {
    if (step == Step::kGate && !c.gate)
      throw type_error(argument + ": the step 'gate' needs a layer with the output gate (config gate: true)");
    return step;
  };
  for (size_t i = 0; i < request.capture.size(); ++i) {
    const std::string argument = "capture[" + std::to_string(i) + "]";
    checked.capture[static_cast<int>(has(parse_step(request.capture[i], argument), argument))] = true;
  }
  const StepPatch& patch = request.patch;
  if (!patch.present()) return checked;
  if (patch.steps.size() != 1) {
    std::string given;
    for (const auto& s : patch.steps) given += (given.empty() ? "" : ", ") + s;
    throw type_error("patch: give exactly one step to patch (q, k, v, pattern, z or gate) beside heads, got " + given);
  }
  const Step step = has(parse_step(patch.steps[0], "patch"), "patch");
  if (!patchable(step))
    throw type_error("patch: the step '" + patch.steps[0] +
                     "' cannot be patched (the steps a later step reads can: q, k, v, pattern, z, gate)");
  const std::string name = "patch." + patch.steps[0];
  const Shape want = step_shape(c, p, step);
  if (patch.tensor.shape != want)
    throw range_error(name + ": expected the step's shape " + symbolic_shape(step, p.batched) + " = " +
                      format_shape(want) + ", got " + format_shape(patch.tensor.shape));
  if (patch.tensor.data == nullptr) throw type_error(name + ": data is missing");
  const bool kv = step == Step::kK || step == Step::kV;
  const int64_t heads = kv ? c.num_kv_heads : c.num_heads;
  checked.patched_heads.assign(static_cast<size_t>(heads), patch.heads.empty());
  for (size_t i = 0; i < patch.heads.size(); ++i) {
    const int64_t h = patch.heads[i];
    if (h < 0 || h >= heads)
      throw range_error("patch.heads[" + std::to_string(i) + "]: head " + std::to_string(h) + " is out of range: " +
                        patch.steps[0] + " has " + std::to_string(heads) + (kv ? " key/value" : "") + " heads (0 to " +
                        std::to_string(heads - 1) + ")");
    if (checked.patched_heads[h])
      throw range_error("patch.heads[" + std::to_string(i) + "]: head " + std::to_string(h) + " is listed twice");
    checked.patched_heads[h] = true;
  }
  if (grad && step == Step::kPattern)
    throw type_error("patch.pattern: not with grad: true (the backward pass recomputes the softmax from q and k; "
                     "patch q, k, v or z instead)");
  checked.patching = true;
  checked.patched = step;
  checked.patch_data = patch.tensor.data;
  return checked;
}

std::vector<MemoryItem> steps_memory(const ResolvedConfig& c, const ForwardPlan& p, const CheckedSteps& steps,
                                     bool inputs) {
  std::vector<MemoryItem> items;
  const int64_t B = p.batch, S = p.key_len;
  // The whole call's keys and values in one layout (a cache's gathered), and three rows per head.
  items.push_back({"keys and values of every head", saturating_bytes({B, S, c.kv_dim() + c.value_kv_dim()}, 4)});
  items.push_back({"a head's score rows", saturating_bytes({3, S}, 4)});
  for (int s = 0; s < kStepCount; ++s)
    if (steps.capture[s])
      items.push_back({std::string("captured ") + kStepNames[s], saturating_bytes(step_shape(c, p, static_cast<Step>(s)), 4)});
  if (steps.captures(Step::kResult) && c.weight_dtype != WeightDtype::kF32)
    items.push_back({"out_proj as float32", saturating_bytes({c.output_dim, c.attended_dim()}, 4)});
  if (inputs && steps.patching) items.push_back({"patch", saturating_bytes(step_shape(c, p, steps.patched), 4)});
  return items;
}

namespace {

// Copies between a step's head-split layout [B, heads, rows, D] and the layer's row layout
// [B * rows, heads * D] (what the projections write and the attention reads).
void rows_to_heads(const float* rows_layout, float* heads_layout, int64_t B, int64_t heads, int64_t rows, int64_t D) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(rows_layout + (b * rows + r) * heads * D + h * D, D, heads_layout + ((b * heads + h) * rows + r) * D);
}

// The patch's heads (patched_heads) from the head-split `patch` into the row layout.
void patch_rows(const float* patch, float* rows_layout, const std::vector<bool>& patched_heads, int64_t B, int64_t rows,
                int64_t D) {
  const int64_t heads = static_cast<int64_t>(patched_heads.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      if (patched_heads[h])
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(patch + ((b * heads + h) * rows + r) * D, D, rows_layout + (b * rows + r) * heads * D + h * D);
}

}  // namespace

ForwardResult MultiheadAttention::forward_steps(const TensorRef& query, const TensorRef& key,
                                                const TensorRef& value, const ForwardOptions& options,
                                                const StepRequest& request, std::vector<CapturedStep>& captured) const {
  const ForwardPlan p = plan(query, key, value, options);
  if (!p.sequence_first) return run_steps(p, query, key, value, options, request, captured, nullptr);
  // Sequence-first: the steps run on batch-first copies (captured steps keep their [B, ...] layouts).
  const BatchFirstCall call(p, query, key, value);
  ForwardResult r = run_steps(call.plan(), call.query(), call.key(), call.value(), options, request, captured, nullptr);
  r.output = to_batch_first(r.output.data(), r.output_shape);  // [B, L, F] -> [L, B, F]: the same swap
  r.output_shape = p.output_shape;
  return r;
}

ForwardResult MultiheadAttention::run_steps(const ForwardPlan& p, const TensorRef& query, const TensorRef& key_in,
                                            const TensorRef& value_in, const ForwardOptions& options,
                                            const StepRequest& request, std::vector<CapturedStep>& captured,
                                            SavedForward* saved) const {
  const ResolvedConfig& c = config_;
  if (options.static_k.present() || options.static_v.present())
    throw type_error(std::string(request.capture.empty() ? "patch" : "capture") + ": not with " +
                     (options.static_k.present() ? "staticK" : "staticV") + " yet");
  const CheckedSteps steps = check_steps(c, p, request, saved != nullptr);
  if (!saved) {  // (forward_for_training counts its own buffers, these included)
    std::vector<MemoryItem> need = forward_memory(c, p, options, !key_in.present(), false, pool_ ? pool_->size() : 1);
    for (const MemoryItem& item : steps_memory(c, p, steps, false)) need.push_back(item);
    check_fits("the buffers", need, 0, addressable_bytes());
  }

  const int64_t B = p.batch, L = p.query_len, S = p.key_len, H = c.num_heads, Hkv = c.num_kv_heads;
  const int64_t Dh = c.head_dim, Dv = c.value_head_dim, QD = c.q_dim(), KV = c.kv_dim(), VKV = c.value_kv_dim(),
                AD = c.attended_dim(), OD = c.output_dim;
  const bool self_attention = !key_in.present();
  KvCache* const cache = options.cache;
  const bool cross_cache = cache && cache->kind() == CacheKind::kCross;
  const int64_t projected_keys = cache ? p.appended : S;
  const StageRunner run(pool_.get());
  const auto patched = [&](Step s) { return steps.patching && steps.patched == s; };

  captured.clear();
  const auto keep = [&](Step s) -> float* {  // the buffer of a captured step, or null
    if (!steps.captures(s)) return nullptr;
    captured.push_back({s, std::vector<float>(static_cast<size_t>(element_count(step_shape(c, p, s)))), step_shape(c, p, s)});
    return captured.back().data.data();
  };
  captured.reserve(kStepCount);  // (keep()'s pointers stay valid)

  // 1. Project and rotate, as forward(); a self cache keeps the new k and v. Then the call's keys
  // and values in one row layout [B * S, Hkv * D]: the projections, or the cache's gathered.
  std::vector<float> q(static_cast<size_t>(B * L * QD)), k(static_cast<size_t>(B * S * KV)),
      v(static_cast<size_t>(B * S * VKV)), z(static_cast<size_t>(B * L * AD));
  std::vector<float> new_k(cache ? static_cast<size_t>(B * projected_keys * KV) : 0),
      new_v(cache ? static_cast<size_t>(B * projected_keys * VKV) : 0);
  float* const pk = cache ? new_k.data() : k.data();
  float* const pv = cache ? new_v.data() : v.data();
  run.project(packed_.q, query.data, q.data(), B * L);
  if (projected_keys > 0) {
    run.project(packed_.k, self_attention ? query.data : key_in.data, pk, B * projected_keys);
    run.project(packed_.v, self_attention ? query.data : value_in.data, pv, B * projected_keys);
  }
  normalize_qk(q.data(), B * L, pk, B * projected_keys);
  rotate(p, options, self_attention, projected_keys, q.data(), pk, false);
  if (cache) {
    if (!cross_cache) {
      cache->set_kind(CacheKind::kSelf);
      cache->append(pk, pv, L);
    }
    std::vector<float> room(static_cast<size_t>(S * std::max(Dh, Dv)));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h) {
        const float* keys = cache->keys(b, h, room.data());
        for (int64_t j = 0; j < S; ++j) std::copy_n(keys + j * Dh, Dh, k.data() + (b * S + j) * KV + h * Dh);
        const float* values = cache->values(b, h, room.data());
        for (int64_t j = 0; j < S; ++j) std::copy_n(values + j * Dv, Dv, v.data() + (b * S + j) * VKV + h * Dv);
      }
  }
  if (patched(Step::kQ)) patch_rows(steps.patch_data, q.data(), steps.patched_heads, B, L, Dh);
  if (patched(Step::kK)) patch_rows(steps.patch_data, k.data(), steps.patched_heads, B, S, Dh);
  if (patched(Step::kV)) patch_rows(steps.patch_data, v.data(), steps.patched_heads, B, S, Dv);
  if (float* out = keep(Step::kQ)) rows_to_heads(q.data(), out, B, H, L, Dh);
  if (float* out = keep(Step::kK)) rows_to_heads(k.data(), out, B, Hkv, S, Dh);
  if (float* out = keep(Step::kV)) rows_to_heads(v.data(), out, B, Hkv, S, Dv);

  // 2. Attend, head by head and row by row: scores, logits, pattern, z. The head's arguments
  // (masks, variants, positions, dropout) come from AttentionStage, as for the kernels.
  AdditiveMask key_padding(options.key_padding_mask, 1, p.given_keys, S);
  AdditiveMask attn_mask(options.attn_mask, L, p.given_keys, S);
  const bool causal = options.causal || (cache && !cross_cache);
  AttentionStage attention{c, params_, p, q.data(), z.data(), causal, key_padding, attn_mask};
  attention.dropout = dropout_in(options);
  attention.seed = options.seed;
  float* const kept_scores = keep(Step::kScores);
  float* const kept_logits = keep(Step::kLogits);
  float* const kept_pattern = keep(Step::kPattern);
  std::vector<float> rows(static_cast<size_t>(3 * S));
  ForwardResult r;
  r.output_shape = p.output_shape;
  r.weights_shape = p.weights_shape;
  r.output.resize(static_cast<size_t>(element_count(p.output_shape)));
  if (options.need_weights) r.weights.assign(static_cast<size_t>(element_count(p.weights_shape)), 0.0f);
  const bool heads_together = options.average_weights;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / c.heads_per_kv();
      const kernels::AttentionHeadArgs a =
          attention.head(b, h, 0, L, k.data() + b * S * KV + kvh * Dh, v.data() + b * S * VKV + kvh * Dv, KV, VKV);
      const kernels::DropoutMask dropout(a.dropout);
      const bool patch_pattern = patched(Step::kPattern) && steps.patched_heads[h];
      for (int64_t i = 0; i < L; ++i) {
        const int64_t at = ((b * H + h) * L + i) * S;  // row i of this head in [B, H, L, S]
        float* scores = kept_scores ? kept_scores + at : rows.data();
        float* logits = kept_logits ? kept_logits + at : rows.data() + S;
        float* pattern = kept_pattern ? kept_pattern + at : rows.data() + 2 * S;
        const int64_t position = a.first_query + i;
        const float lse = kernels::attention_row_steps(a, i, scores, nullptr, logits, pattern);
        if (saved) saved->lse.data()[(b * H + h) * L + i] = lse;
        if (patch_pattern) std::copy_n(steps.patch_data + at, S, pattern);
        // z row = (pattern, after dropout when training) . v; the weights as forward() gives them.
        float* zi = a.out + i * a.out_stride;
        std::fill(zi, zi + Dv, 0.0f);
        float* weights = options.need_weights ? r.weights.data() + (heads_together ? b * L * S : (b * H + h) * L * S) + i * S
                                              : nullptr;
        const float factor = heads_together ? 1.0f / static_cast<float>(H) : 1.0f;
        for (int64_t j = 0; j < S; ++j) {
          float pj = pattern[j];
          if (weights && (options.weights_before_dropout || !a.dropout.active())) weights[j] += factor * pj;
          if (a.dropout.active()) {
            pj = dropout.keep(position, j) ? pj * dropout.scale() : 0.0f;
            if (weights && !options.weights_before_dropout) weights[j] += factor * pj;
          }
          if (pj == 0.0f) continue;
          const float* vj = a.v + j * a.v_stride;
          for (int64_t d = 0; d < Dv; ++d) zi[d] += pj * vj[d];
        }
      }
    }
  if (patched(Step::kZ))
    for (int64_t row = 0; row < B * L; ++row)
      for (int64_t h = 0; h < H; ++h)
        if (steps.patched_heads[h]) std::copy_n(steps.patch_data + (row * H + h) * Dv, Dv, z.data() + row * AD + h * Dv);
  if (float* out = keep(Step::kZ)) std::copy(z.begin(), z.end(), out);

  // 3. Gate (config gate): gated = z ⊙ sigmoid(the query's gate projection), as forward().
  std::vector<float> gate(c.gate ? static_cast<size_t>(B * L * AD) : 0), gated(gate.size());
  if (c.gate) {
    apply_gate(run, query.data, z.data(), gate.data(), gated.data(), B * L);
    if (patched(Step::kGate)) {
      patch_rows(steps.patch_data, gate.data(), steps.patched_heads, B * L, 1, Dv);
      for (size_t i = 0; i < gate.size(); ++i) gated[i] = z[i] * gate[i];
    }
    if (float* out = keep(Step::kGate)) std::copy(gate.begin(), gate.end(), out);
  }
  const std::vector<float>& combined = c.gate ? gated : z;  // what out_proj reads

  if (saved) {  // what backward reads: the values that flowed, and which of them were constants
    std::copy(q.begin(), q.end(), saved->q.data());
    std::copy(k.begin(), k.end(), saved->k.data());
    std::copy(v.begin(), v.end(), saved->v.data());
    std::copy(z.begin(), z.end(), saved->attended.data());
    std::copy(gate.begin(), gate.end(), saved->gate.data());
    if (steps.patching) {
      std::vector<bool>* constant[kStepCount] = {&saved->constant_q, &saved->constant_k, &saved->constant_v, nullptr,
                                                 nullptr, nullptr, &saved->constant_z, &saved->constant_gate, nullptr};
      *constant[static_cast<int>(steps.patched)] = steps.patched_heads;
    }
  }

  // 4. Combine: the output projection of the concatenated (gated) z, and on request each head's share.
  run.project(packed_.out, combined.data(), r.output.data(), B * L);
  if (float* out = keep(Step::kResult)) {
    const std::vector<float> dequantized = params_.out_weight.empty() ? packed_.out.weight() : std::vector<float>();
    const float* w = params_.out_weight.empty() ? dequantized.data() : params_.out_weight.data();  // [OD, AD]
    for (int64_t row = 0; row < B * L; ++row)
      for (int64_t h = 0; h < H; ++h) {
        const float* zh = combined.data() + row * AD + h * Dv;
        float* share = out + (row * H + h) * OD;
        for (int64_t o = 0; o < OD; ++o) {
          float acc = 0.0f;
          for (int64_t d = 0; d < Dv; ++d) acc += w[o * AD + h * Dv + d] * zh[d];
          share[o] = acc;
        }
      }
  }
  return r;
}

}  // namespace mha
