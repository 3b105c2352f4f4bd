#include "mha/layer/multihead_attention.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "mha/layer/additive_mask.hpp"
#include "mha/layer/appended_keys.hpp"
#include "mha/plan/attention_kernel_choice.hpp"
#include "mha/plan/errors.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/layer/layer_stages.hpp"
#include "mha/layer/rotary.hpp"
#include "mha/layer/saved_forward.hpp"
#include "mha/layer/sequence_first.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/output_gate.hpp"
#include "mha/kernels/qk_norm.hpp"
#include "mha/kernels/weight_formats.hpp"

namespace mha {

MultiheadAttention::MultiheadAttention(const AttentionConfig& config) : config_(resolve(config)) {
  if (config_.float64) throw type_error("dtype 'float64': a float64 layer is a Float64Attention (float64_attention.hpp)");
  check_fits("the weights", weight_memory(config_), 0, addressable_bytes());
}

void MultiheadAttention::load_state_dict(const StateDict& state) {
  std::set<std::string> held;
  for (const auto& entry : pending_) held.insert(entry.first);
  AttentionParameters params = parameters_from_state_dict(config_, state, held);
  const ResolvedConfig& c = config_;
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  // A projection: float32 panels, or quantized (config weight_dtype) from its float weights,
  // or the quantized matrix load_quantized gave (the key absent from the state dict).
  const auto project = [&](const char* key, std::vector<float>& w, const std::vector<float>& b, int64_t out,
                           int64_t in) -> kernels::PackedLinear {
    if (w.empty()) return kernels::PackedLinear(pending_.at(key), bias(b));
    if (c.weight_dtype == WeightDtype::kF32) return kernels::PackedLinear(w.data(), bias(b), out, in);
    kernels::PackedLinear packed(kernels::quantize_matrix(c.weight_dtype, w.data(), out, in), bias(b));
    std::vector<float>().swap(w);  // the quantized panels replace the float32 copy
    return packed;
  };
  PackedProjections packed{project("q_proj_weight", params.q_weight, params.q_bias, c.q_dim(), c.embed_dim),
                           project("k_proj_weight", params.k_weight, params.k_bias, c.kv_dim(), c.kdim),
                           project("v_proj_weight", params.v_weight, params.v_bias, c.value_kv_dim(), c.vdim),
                           project("out_proj.weight", params.out_weight, params.out_bias, c.output_dim,
                                   c.attended_dim()),
                           c.gate ? project("gate_proj.weight", params.gate_weight, params.gate_bias, c.attended_dim(),
                                            c.embed_dim)
                                  : kernels::PackedLinear()};
  params_ = std::move(params);
  packed_ = std::move(packed);
  pending_.clear();
  loaded_ = true;
  ++weights_version_;
}

ForwardPlan MultiheadAttention::plan(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                     const ForwardOptions& options) const {
  if (!loaded_) throw no_weights_error();
  if (options.cache && options.cache->owner() != this)
    throw type_error("cache: this cache belongs to another layer (make one with this layer's createCache)");
  ForwardPlan p = plan_forward(config_, query, key, value, options);
  // Before anything is allocated: a call that cannot fit fails here, naming its buffers.
  check_fits("the buffers", forward_memory(config_, p, options, !key.present(), false, pool_ ? pool_->size() : 1), 0,
             addressable_bytes());
  return p;
}

ForwardResult MultiheadAttention::forward(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                          const ForwardOptions& options) const {
  ForwardPlan p = plan(query, key, value, options);
  ForwardResult r;
  r.output_shape = p.output_shape;
  r.weights_shape = p.weights_shape;
  r.output.resize(static_cast<size_t>(element_count(p.output_shape)));
  if (options.need_weights) r.weights.resize(static_cast<size_t>(element_count(p.weights_shape)));
  forward_into(p, query, key, value, options, r.output.data(), options.need_weights ? r.weights.data() : nullptr);
  return r;
}

void MultiheadAttention::forward_into(const ForwardPlan& p, const TensorRef& query, const TensorRef& key,
                                      const TensorRef& value, const ForwardOptions& options, float* output,
                                      float* weights) const {
  if (!p.sequence_first) return run_forward(p, query, key, value, options, output, weights, nullptr);
  // Sequence-first: the stages run on batch-first copies, and the output is swapped back
  // (the weights are [B, ...] in both layouts, as PyTorch's).
  const BatchFirstCall call(p, query, key, value);
  const Shape& out_shape = call.plan().output_shape;  // [B, L, outputDim]
  std::vector<float> batch_first(static_cast<size_t>(element_count(out_shape)));
  run_forward(call.plan(), call.query(), call.key(), call.value(), options, batch_first.data(), weights, nullptr);
  swap_leading_axes(batch_first.data(), output, out_shape[0], out_shape[1], out_shape[2]);
}

// The forward pass's stages: project, rotate, attend, gate, combine (layer_stages.hpp). With `saved`
// (a forward for training), q, k, v and the attended values are written into it rather than the
// workspace, with each row's log-sum-exp, for backward().
void MultiheadAttention::run_forward(const ForwardPlan& p, const TensorRef& query, const TensorRef& key_in,
                                     const TensorRef& value_in, const ForwardOptions& options, float* output,
                                     float* weights, SavedForward* saved) const {
  const ResolvedConfig& c = config_;
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, H = c.num_heads;
  // Row widths of the projected queries, keys, values and of the attended values.
  const int64_t Dh = c.head_dim, Dv = c.value_head_dim, QD = c.q_dim(), KV = c.kv_dim(), VKV = c.value_kv_dim(),
                AD = c.attended_dim();
  const bool self_attention = !key_in.present();
  const float* key = self_attention ? query.data : key_in.data;
  const float* value = self_attention ? query.data : value_in.data;
  // With a cache, the call projects only its new tokens (a self cache appends them; a cross
  // cache already holds its keys), and query row i sits at position first_position + i.
  KvCache* const cache = options.cache;
  const bool cross_cache = cache && cache->kind() == CacheKind::kCross;
  const int64_t projected_keys = cache ? p.appended : p.given_keys;
  const int64_t key_rows = cache ? projected_keys : S;  // per sequence, with the keys add_bias_kv / add_zero_attn append
  const bool causal = options.causal || (cache && !cross_cache);
  const bool widen = cache && cache->dtype() == CacheDtype::kF16;
  const float dropout = dropout_in(options);
  const StageRunner run(pool_.get());
  const int threads = run.threads();
  // A step whose attention will use the pool but whose query projection will not: wake the
  // workers now, so they are watching when the attention's job comes (thread_pool.hpp).
  const double attention_flops = 2.0 * B * H * L * S * (Dh + Dv);
  const bool query_projection_splits = run.projection_splits(packed_.q, B * L);
  if (pool_ && threads > 1 && attention_flops >= StageRunner::kMinParallelFlops && !query_projection_splits) {
    pool_->wake();
  }
  // After projections that used the pool, its workers are still watching (thread_pool.hpp), so
  // an attention job an eighth the size pays (Qwen-like step at 1024 cached tokens: 3.7 MFLOP).
  const bool attention_splits =
      attention_flops >= (query_projection_splits ? StageRunner::kMinParallelFlops / 8 : StageRunner::kMinParallelFlops);

  // Workspace: Q [B*L, H*Dh], K [B*S', Hkv*Dh], V [B*S', Hkv*Dv] (S' = the keys projected in
  // this call), attended values [B*L, H*Dv] (all four in `saved` instead, for training), with
  // the output gate one more [B*L, H*Dv] (its logits; for training the gated values), then
  // per thread one kernel scratch and, for an f16 cache, room to widen one head's keys and values.
  // The decode kernel (with its smaller scratch) takes a few rows, unless the call applies dropout
  // or trains (attention_kernel_choice.hpp; forward_memory counts the same kernel's scratch).
  const AttentionKernel kernel = choose_attention_kernel(L, dropout, saved != nullptr);
  const bool decoding = kernel == AttentionKernel::kDecode;
  const int64_t scratch_floats = attention_scratch_floats_per_thread(c, kernel, S);
  std::lock_guard<std::mutex> workspace_lock(workspace_->mutex);
  Workspace& workspace = *workspace_;
  // Natively the buffers stay for the next call. In wasm, freed memory stays in the heap
  // (no page faults to save), so the buffers go back and the heap stays flat between calls.
  struct ReleaseInWasm {
    Workspace& workspace;
    ~ReleaseInWasm() {
#ifdef __EMSCRIPTEN__
      workspace.buffers.reset();
      workspace.size = 0;
#endif
    }
  } release_in_wasm{workspace};
  const int64_t widen_floats = widen ? S * (Dh + Dv) : 0;
  const int64_t gate_floats = c.gate ? B * L * AD : 0;
  const int64_t activation_floats = (saved ? 0 : B * L * (QD + AD) + B * key_rows * (KV + VKV)) + gate_floats;
  const size_t needed = static_cast<size_t>(activation_floats + threads * (scratch_floats + widen_floats));
  if (workspace.size < needed) {
    workspace.buffers.reset();  // grow without copying the old contents
    workspace.buffers.reset(new float[needed]);
    workspace.size = needed;
  }
#ifdef MHA_POISON_WORKSPACE
  std::fill(workspace.buffers.get(), workspace.buffers.get() + workspace.size, std::numeric_limits<float>::quiet_NaN());
#endif
  float* q = workspace.buffers.get();
  float* k = q + B * L * QD;
  float* v = k + B * key_rows * KV;
  float* attended = v + B * key_rows * VKV;
  float* const gate_room = workspace.buffers.get() + activation_floats - gate_floats;
  float* const scratch = workspace.buffers.get() + activation_floats;
  float* const widened = scratch + threads * scratch_floats;
  if (saved) {
    q = saved->q.data();
    k = saved->k.data();
    v = saved->v.data();
    attended = saved->attended.data();
  }

  // 1. Project, then rotate q and the new k to their positions (each sequence starts at 0; a
  // self cache's new tokens after the ones it holds). A self cache then keeps the new k and v.
  kernels::QuantizedInput xq;  // decoding with int8 / q4 weights: each input row quantized once
  run.project(packed_.q, query.data, q, B * L, &xq);
  // (Static keys or values replace a projection, which then does not run.)
  const bool project_k = !options.static_k.present(), project_v = !options.static_v.present();
  if (projected_keys > 0 && c.extra_keys() == 0) {
    if (project_k) run.project(packed_.k, key, k, B * projected_keys, &xq);
    if (project_v) run.project(packed_.v, value, v, B * projected_keys, &xq);
  } else if (projected_keys > 0) {  // each sequence's keys, then the appended ones (appended_keys.hpp)
    for (int64_t b = 0; b < B; ++b) {
      if (project_k) run.project(packed_.k, key + b * projected_keys * c.kdim, k + b * S * KV, projected_keys);
      if (project_v) run.project(packed_.v, value + b * projected_keys * c.vdim, v + b * S * VKV, projected_keys);
    }
    append_keys(c, params_, k, v, B, S);
  }
  use_static_rows(options.static_k, k, B, S, c.num_kv_heads, Dh);
  use_static_rows(options.static_v, v, B, S, c.num_kv_heads, Dv);
  normalize_qk(q, B * L, k, B * projected_keys);
  rotate(p, options, self_attention, projected_keys, q, k, false);
  if (cache && !cross_cache) {
    cache->set_kind(CacheKind::kSelf);
    cache->append(k, v, L);
  }

  // 2. Attend. Head h reads key/value head h / (H / Hkv) (repeat-interleave, as PyTorch and
  // FlashAttention).
  AdditiveMask key_padding(options.key_padding_mask, 1, p.given_keys, S);
  AdditiveMask attn_mask(options.attn_mask, L, p.given_keys, S);
  AttentionStage attention{c, params_, p, q, attended, causal, key_padding, attn_mask};
  if (saved) attention.lse = saved->lse.data();
  attention.dropout = dropout;
  attention.seed = options.seed;
  attention.weights_before_dropout = options.weights_before_dropout;
  if (weights) std::fill(weights, weights + element_count(p.weights_shape), 0.0f);
  const bool heads_together = weights && options.average_weights;
  // Head h of batch row b, query rows first.., against key/value head kvh: the cache's
  // (contiguous; an f16 cache widened into the thread's room) or the projected ones.
  const auto head_args = [&](int64_t b, int64_t h, int64_t first, int64_t rows, int thread) {
    const int64_t kvh = h / c.heads_per_kv();
    kernels::AttentionHeadArgs a;
    if (cache) {
      float* room = widened + thread * widen_floats;
      a = attention.head(b, h, first, rows, cache->keys(b, kvh, room), cache->values(b, kvh, room + S * Dh), Dh, Dv);
    } else {
      a = attention.head(b, h, first, rows, k + b * S * KV + kvh * Dh, v + b * S * VKV + kvh * Dv, KV, VKV);
    }
    a.scratch = scratch + thread * scratch_floats;
    if (weights) {
      a.weights = weights + (heads_together ? b * L * S : (b * H + h) * L * S) + first * S;
      a.weights_factor = heads_together ? 1.0f / static_cast<float>(H) : 1.0f;
    }
    return a;
  };

  if (decoding) {
    // A token or a few (decoding): a task is a (batch row, kv head) pair, and the query heads
    // that share the kv head read its keys and values together, once, in place. With averaged
    // weights a batch row's heads add into one buffer: then one task per batch row.
    const int64_t kv_tasks = heads_together ? 1 : c.num_kv_heads, G = c.heads_per_kv();
    run.parallel(B * kv_tasks, attention_splits, [&](int64_t task, int thread) {
      const int64_t b = task / kv_tasks;
      std::vector<kernels::AttentionHeadArgs> group(static_cast<size_t>(G));
      for (int64_t kvh = heads_together ? 0 : task % kv_tasks; kvh < (heads_together ? c.num_kv_heads : task % kv_tasks + 1);
           ++kvh) {
        for (int64_t g = 0; g < G; ++g) group[g] = head_args(b, kvh * G + g, 0, L, thread);
        kernels::attention_heads_decode(group.data(), G);
      }
    });
  } else {
    // A task is (batch, query chunk, head), or all heads in turn when they average into one
    // weights buffer (so no two tasks add to the same weights). Heads are split into query
    // chunks only when there are too few (batch, head) pairs to keep every thread busy.
    const int64_t head_groups = heads_together ? 1 : H;
    const int64_t chunk = attention_query_chunk(threads, B * head_groups, L);
    const int64_t chunks = (L + chunk - 1) / chunk;
    run.parallel(B * chunks * head_groups, attention_splits, [&](int64_t task, int thread) {
      const int64_t group = task % head_groups, b = task / head_groups / chunks;
      const int64_t first = (task / head_groups % chunks) * chunk, rows = std::min(chunk, L - first);
      for (int64_t h = heads_together ? 0 : group; h < (heads_together ? H : group + 1); ++h)
        kernels::attention_head(head_args(b, h, first, rows, thread));
    });
  }

  // 3. Gate (config gate): the attended values times sigmoid of the query's gate projection, in
  // place; for training the gate is kept in `saved` and the gated values go to the workspace.
  if (c.gate) {
    float* const gate = saved ? saved->gate.data() : gate_room;
    float* const gated = saved ? gate_room : attended;
    apply_gate(run, query.data, attended, gate, gated, B * L, &xq);
    attended = gated;
  }

  // 4. Combine: the output projection.
  run.project(packed_.out, attended, output, B * L, &xq);
}

void MultiheadAttention::apply_gate(const StageRunner& run, const float* query, const float* attended, float* gate,
                                    float* gated, int64_t rows, kernels::QuantizedInput* xq) const {
  if (!config_.gate) return;
  run.project(packed_.gate, query, gate, rows, xq);
  kernels::output_gate({attended, gate, gated, rows * config_.attended_dim()});
}

void MultiheadAttention::normalize_qk(float* q, int64_t q_rows, float* k, int64_t k_rows) const {
  const ResolvedConfig& c = config_;
  if (!c.qk_norm) return;
  const bool per_head = c.qk_norm.over == QkNormScope::kHead;
  const auto norm = [&](float* x, int64_t rows, int64_t heads, const std::vector<float>& weight) {
    const int64_t width = heads * c.head_dim;
    kernels::qk_norm({x, rows, width, per_head ? heads : 1, per_head ? c.head_dim : width, weight.data(),
                      static_cast<float>(c.qk_norm.eps)});
  };
  norm(q, q_rows, c.num_heads, params_.q_norm);
  if (k_rows > 0) norm(k, k_rows, c.num_kv_heads, params_.k_norm);
}

// Rotary on q (and the call's projected keys, self-attention sharing the query's positions), or
// with `inverse` the transposed rotation, which maps gradients of rotated rows back (backward).
void MultiheadAttention::rotate(const ForwardPlan& p, const ForwardOptions& options, bool self_attention,
                                int64_t projected_keys, float* q, float* k, bool inverse) const {
  const ResolvedConfig& c = config_;
  if (c.rotary.dim == 0) return;
  const int64_t L = p.query_len, QD = c.q_dim(), KV = c.kv_dim();
  for (int64_t b = 0; b < p.batch; ++b) {
    const int32_t* positions = options.positions ? options.positions + b * L : nullptr;
    apply_rotary(c.rotary, q + b * L * QD, L, QD, c.num_heads, c.head_dim, positions, p.first_position, inverse);
    if (projected_keys > 0)
      apply_rotary(c.rotary, k + b * projected_keys * KV, projected_keys, KV, c.num_kv_heads, c.head_dim,
                   self_attention ? positions : nullptr, p.first_position, inverse);
  }
}

float MultiheadAttention::dropout_in(const ForwardOptions& options) const {
  return call_dropout(config_, options);
}

}  // namespace mha

namespace mha {

void MultiheadAttention::set_key_value(KvCache& cache, const TensorRef& key, const TensorRef& value) const {
  if (!loaded_) throw no_weights_error();
  const int64_t S = check_key_value(cache, key, value);
  const ResolvedConfig& c = config_;
  const int64_t B = cache.batch();
  // Sequence-first [S, B, features]: projected from batch-first copies.
  const bool swap = !c.batch_first && key.shape.size() == 3;
  const std::vector<float> key_bf = swap ? to_batch_first(key.data, key.shape) : std::vector<float>();
  const std::vector<float> value_bf = swap ? to_batch_first(value.data, value.shape) : std::vector<float>();
  std::vector<float> k(static_cast<size_t>(B * S * c.kv_dim())), v(static_cast<size_t>(B * S * c.value_kv_dim()));
  packed_.k.apply(swap ? key_bf.data() : key.data, k.data(), 0, B * S);
  packed_.v.apply(swap ? value_bf.data() : value.data, v.data(), 0, B * S);
  normalize_qk(nullptr, 0, k.data(), B * S);
  if (c.rotary.dim > 0)
    for (int64_t b = 0; b < B; ++b)
      apply_rotary(c.rotary, k.data() + b * S * c.kv_dim(), S, c.kv_dim(), c.num_kv_heads, c.head_dim, nullptr, 0);
  cache.reset();
  cache.append(k.data(), v.data(), S);
  cache.set_kind(CacheKind::kCross);
}

int64_t MultiheadAttention::check_key_value(const KvCache& cache, const TensorRef& key, const TensorRef& value) const {
  if (cache.owner() != this)
    throw type_error("cache: this cache belongs to another layer (make one with this layer's createCache)");
  if (cache.kind() == CacheKind::kSelf)
    throw type_error("setKeyValue: this cache holds self-attention tokens; a cache is one kind or the other "
                     "(reset() it first, or make another)");
  const ResolvedConfig& c = config_;
  const int64_t B = cache.batch();
  const bool seq_first = !c.batch_first;  // [S, B, features]
  const auto check = [&](const char* name, const TensorRef& t, int64_t features) -> int64_t {
    const Shape& s = t.shape;
    const bool ok = (s.size() == 3 && s[seq_first ? 1 : 0] == B && s[2] == features) ||
                    (s.size() == 2 && B == 1 && s[1] == features);
    const int64_t tokens = s.size() == 3 && seq_first ? s[0] : s[s.size() - 2];
    if (!ok || tokens < 1) {
      const std::string f = name[0] == 'k' ? "kdim" : "vdim", b = std::to_string(B), n = std::to_string(features);
      throw range_error(std::string(name) + ": expected shape " +
                        (seq_first ? "[S, B, " + f + "] = [S, " + b : "[B, S, " + f + "] = [" + b + ", S") + ", " + n +
                        "] with S >= 1, got " + format_shape(s));
    }
    if (t.data == nullptr) throw type_error(std::string(name) + ": data is missing");
    return tokens;
  };
  const int64_t S = check("key", key, c.kdim);
  if (check("value", value, c.vdim) != S)
    throw range_error("value: expected as many tokens as the key (" + std::to_string(S) + "), got shape " +
                      format_shape(value.shape));
  if (S > cache.capacity())
    throw range_error("setKeyValue: " + std::to_string(S) + " tokens do not fit the cache's capacity of " +
                      std::to_string(cache.capacity()));
  return S;
}

}  // namespace mha
