#include "multihead_attention.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "additive_mask.hpp"
#include "errors.hpp"
#include "memory_budget.hpp"
#include "rotary.hpp"
#include "kernels/attention_kernel.hpp"

namespace mha {

MultiheadAttention::MultiheadAttention(const AttentionConfig& config) : config_(resolve(config)) {
  check_fits("the weights", weight_memory(config_), 0, addressable_bytes());
}

void MultiheadAttention::load_state_dict(const StateDict& state) {
  AttentionParameters params = parameters_from_state_dict(config_, state);
  const ResolvedConfig& c = config_;
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  PackedProjections packed{
      {params.q_weight.data(), bias(params.q_bias), c.q_dim(), c.embed_dim},
      {params.k_weight.data(), bias(params.k_bias), c.kv_dim(), c.kdim},
      {params.v_weight.data(), bias(params.v_bias), c.value_kv_dim(), c.vdim},
      {params.out_weight.data(), bias(params.out_bias), c.output_dim, c.attended_dim()}};
  params_ = std::move(params);
  packed_ = std::move(packed);
  loaded_ = true;
}

ForwardPlan MultiheadAttention::plan(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                                     const ForwardOptions& options) const {
  if (!loaded_) throw type_error("the layer has no weights yet; call loadStateDict() first");
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

void MultiheadAttention::forward_into(const ForwardPlan& p, const TensorRef& query, const TensorRef& key_in,
                                      const TensorRef& value_in, const ForwardOptions& options, float* output,
                                      float* weights) const {
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
  const int64_t projected_keys = cache ? p.appended : S;
  const bool causal = options.causal || (cache && !cross_cache);
  const bool widen = cache && cache->dtype() == CacheDtype::kF16;
  const int threads = pool_ ? pool_->size() : 1;
  // Work below ~4 MFLOP (tens of microseconds) runs on the calling thread: waking the pool costs
  // about as much in wasm, and a decode step makes five such calls (Qwen-like step at 128 cached
  // tokens: 0.56 ms with 2 threads against 0.28 ms on one, before this threshold).
  constexpr double kMinParallelFlops = 4e6;
  // A projection of a few rows (decoding) streams its weights once and is bound by the memory
  // bandwidth, which a second thread more than doubles (bench/stream-read.mjs); it splits from
  // 256 KiB of weights on (a Qwen-like layer's 896 x 128 key projection: 448 KiB).
  constexpr double kMinParallelBytes = 1 << 18;
  const auto parallel = [&](int64_t count, bool worth_splitting, const ThreadPool::Task& task) {
    if (pool_ && count > 1 && worth_splitting) {
      pool_->parallel_for(count, task);
    } else {
      for (int64_t i = 0; i < count; ++i) task(i, 0);
    }
  };
  const auto projection_splits = [&](const kernels::PackedLinear& w, int64_t rows) {
    if (rows < kernels::PackedLinear::few_rows()) return 4.0 * w.in_features() * w.out_features() >= kMinParallelBytes;
    return 2.0 * rows * w.in_features() * w.out_features() >= kMinParallelFlops;
  };
  // A step whose attention will use the pool but whose query projection will not: wake the
  // workers now, so they are watching when the attention's job comes (thread_pool.hpp).
  const double attention_flops = 2.0 * B * H * L * S * (Dh + Dv);
  const bool query_projection_splits = projection_splits(packed_.q, B * L);
  if (pool_ && threads > 1 && attention_flops >= kMinParallelFlops && !query_projection_splits) {
    pool_->wake();
  }
  // After projections that used the pool, its workers are still watching (thread_pool.hpp), so
  // an attention job an eighth the size pays (Qwen-like step at 1024 cached tokens: 3.7 MFLOP).
  const bool attention_splits = attention_flops >= (query_projection_splits ? kMinParallelFlops / 8 : kMinParallelFlops);
  const auto project = [&](const kernels::PackedLinear& w, const float* x, float* y, int64_t rows) {
    if (rows < kernels::PackedLinear::few_rows()) {  // decoding: split the weights' columns instead
      const int64_t panels = w.num_panels(), step = (panels + 2 * threads - 1) / (2 * threads);
      parallel((panels + step - 1) / step, projection_splits(w, rows), [&](int64_t t, int) {
        w.apply_few_rows(x, y, rows, t * step, std::min(panels, (t + 1) * step));
      });
      return;
    }
    const int64_t step = kernels::PackedLinear::rows_per_task(rows, threads);
    parallel((rows + step - 1) / step, projection_splits(w, rows),
             [&](int64_t t, int) { w.apply(x, y, t * step, std::min(rows, (t + 1) * step)); });
  };

  // Workspace: Q [B*L, H*Dh], K [B*S', Hkv*Dh], V [B*S', Hkv*Dv] (S' = the keys projected in
  // this call), attended values [B*L, H*Dv], then per thread one kernel scratch and, for an f16
  // cache, room to widen one head's keys and values.
  const bool decoding = L < kernels::decode_query_rows();  // the decode kernel, with its smaller scratch
  const int64_t scratch_floats = attention_scratch_floats_per_thread(c, L, S);
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
  const size_t needed = static_cast<size_t>(B * L * (QD + AD) + B * projected_keys * (KV + VKV) +
                                            threads * (scratch_floats + widen_floats));
  if (workspace.size < needed) {
    workspace.buffers.reset();  // grow without copying the old contents
    workspace.buffers.reset(new float[needed]);
    workspace.size = needed;
  }
#ifdef MHA_POISON_WORKSPACE
  std::fill(workspace.buffers.get(), workspace.buffers.get() + workspace.size, std::numeric_limits<float>::quiet_NaN());
#endif
  float* const q = workspace.buffers.get();
  float* const k = q + B * L * QD;
  float* const v = k + B * projected_keys * KV;
  float* const attended = v + B * projected_keys * VKV;
  float* const scratch = attended + B * L * AD;
  float* const widened = scratch + threads * scratch_floats;

  // 1. Project, then rotate q and the new k to their positions (each sequence starts at 0; a
  // self cache's new tokens after the ones it holds). A self cache then keeps the new k and v.
  project(packed_.q, query.data, q, B * L);
  if (projected_keys > 0) {
    project(packed_.k, key, k, B * projected_keys);
    project(packed_.v, value, v, B * projected_keys);
  }
  if (c.rotary.dim > 0) {
    for (int64_t b = 0; b < B; ++b) {
      const int32_t* positions = options.positions ? options.positions + b * L : nullptr;
      apply_rotary(c.rotary, q + b * L * QD, L, QD, H, Dh, positions, p.first_position);
      if (projected_keys > 0)
        apply_rotary(c.rotary, k + b * projected_keys * KV, projected_keys, KV, c.num_kv_heads, Dh,
                     self_attention ? positions : nullptr, p.first_position);
    }
  }
  if (cache && !cross_cache) {
    cache->set_kind(CacheKind::kSelf);
    cache->append(k, v, L);
  }

  // 2. Attend. Head h reads key/value head h / (H / Hkv) (repeat-interleave, as PyTorch and
  // FlashAttention).
  AdditiveMask key_padding(options.key_padding_mask, S);
  AdditiveMask attn_mask(options.attn_mask, L * S);
  if (weights) std::fill(weights, weights + element_count(p.weights_shape), 0.0f);
  const bool heads_together = weights && options.average_weights;
  struct KeysValues {
    const float *k, *v;
    int64_t k_stride, v_stride;
  };
  // Key/value head kvh of batch row b: the cache's (contiguous; an f16 cache widened into the
  // thread's room) or the projected ones.
  const auto keys_values = [&](int64_t b, int64_t kvh, int thread) -> KeysValues {
    if (cache) {
      float* room = widened + thread * widen_floats;
      return {cache->keys(b, kvh, room), cache->values(b, kvh, room + S * Dh), Dh, Dv};
    }
    return {k + b * S * KV + kvh * Dh, v + b * S * VKV + kvh * Dv, KV, VKV};
  };
  // Query rows first .. first + rows - 1 of head h of batch row b.
  const auto head_args = [&](int64_t b, int64_t h, int64_t first, int64_t rows, int thread, const KeysValues& kv) {
    kernels::AttentionHeadArgs a{};
    a.q = q + (b * L + first) * QD + h * Dh;
    a.k = kv.k;
    a.v = kv.v;
    a.k_stride = kv.k_stride;
    a.v_stride = kv.v_stride;
    a.out = attended + (b * L + first) * AD + h * Dv;
    a.scratch = scratch + thread * scratch_floats;
    a.q_stride = QD;
    a.out_stride = AD;
    a.query_len = rows;
    a.key_len = S;
    a.head_dim = Dh;
    a.value_head_dim = Dv;
    a.scale = c.scale;
    a.causal = causal;
    a.epilogue.window = c.sliding_window;
    a.epilogue.softcap = c.softcap;
    if (!c.alibi_slopes.empty()) a.epilogue.alibi_slope = c.alibi_slopes[h];
    if (c.sinks) a.epilogue.sink = params_.sinks[h];
    a.first_query = p.first_position + first;
    a.key_bias = key_padding.rows(b);
    const float* mask_rows = attn_mask.rows(p.attn_mask_per_head ? b * H + h : 0);
    a.attn_bias = mask_rows ? mask_rows + first * S : nullptr;
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
    parallel(B * kv_tasks, attention_splits, [&](int64_t task, int thread) {
      const int64_t b = task / kv_tasks;
      std::vector<kernels::AttentionHeadArgs> group(static_cast<size_t>(G));
      for (int64_t kvh = heads_together ? 0 : task % kv_tasks; kvh < (heads_together ? c.num_kv_heads : task % kv_tasks + 1);
           ++kvh) {
        const KeysValues kv = keys_values(b, kvh, thread);
        for (int64_t g = 0; g < G; ++g) group[g] = head_args(b, kvh * G + g, 0, L, thread, kv);
        kernels::attention_heads_decode(group.data(), G);
      }
    });
  } else {
    // A task is (batch, query chunk, head), or all heads in turn when they average into one
    // weights buffer (so no two tasks add to the same weights). Heads are split into query
    // chunks only when there are too few (batch, head) pairs to keep every thread busy.
    const int64_t head_groups = heads_together ? 1 : H;
    const int64_t wanted_chunks = (2 * threads + B * head_groups - 1) / (B * head_groups);
    const int64_t block = kernels::attention_query_block();
    const int64_t chunk = (std::max<int64_t>(32, (L + wanted_chunks - 1) / wanted_chunks) + block - 1) / block * block;
    const int64_t chunks = (L + chunk - 1) / chunk;
    parallel(B * chunks * head_groups, attention_splits, [&](int64_t task, int thread) {
      const int64_t group = task % head_groups, b = task / head_groups / chunks;
      const int64_t first = (task / head_groups % chunks) * chunk, rows = std::min(chunk, L - first);
      for (int64_t h = heads_together ? 0 : group; h < (heads_together ? H : group + 1); ++h)
        kernels::attention_head(head_args(b, h, first, rows, thread, keys_values(b, h / c.heads_per_kv(), thread)));
    });
  }

  // 3. Output projection.
  project(packed_.out, attended, output, B * L);
}

}  // namespace mha

namespace mha {

void MultiheadAttention::set_key_value(KvCache& cache, const TensorRef& key, const TensorRef& value) const {
  if (!loaded_) throw type_error("the layer has no weights yet; call loadStateDict() first");
  if (cache.owner() != this)
    throw type_error("cache: this cache belongs to another layer (make one with this layer's createCache)");
  if (cache.kind() == CacheKind::kSelf)
    throw type_error("setKeyValue: this cache holds self-attention tokens; a cache is one kind or the other "
                     "(reset() it first, or make another)");
  const ResolvedConfig& c = config_;
  const int64_t B = cache.batch();
  const auto check = [&](const char* name, const TensorRef& t, int64_t features) -> int64_t {
    const Shape& s = t.shape;
    const bool ok = (s.size() == 3 && s[0] == B && s[2] == features) || (s.size() == 2 && B == 1 && s[1] == features);
    if (!ok || s[s.size() - 2] < 1)
      throw range_error(std::string(name) + ": expected shape [B, S, " + (name[0] == 'k' ? "kdim" : "vdim") + "] = [" +
                        std::to_string(B) + ", S, " + std::to_string(features) + "] with S >= 1, got " +
                        format_shape(s));
    if (t.data == nullptr) throw type_error(std::string(name) + ": data is missing");
    return s[s.size() - 2];
  };
  const int64_t S = check("key", key, c.kdim);
  if (check("value", value, c.vdim) != S)
    throw range_error("value: expected as many tokens as the key (" + std::to_string(S) + "), got shape " +
                      format_shape(value.shape));
  if (S > cache.capacity())
    throw range_error("setKeyValue: " + std::to_string(S) + " tokens do not fit the cache's capacity of " +
                      std::to_string(cache.capacity()));
  std::vector<float> k(static_cast<size_t>(B * S * c.kv_dim())), v(static_cast<size_t>(B * S * c.value_kv_dim()));
  packed_.k.apply(key.data, k.data(), 0, B * S);
  packed_.v.apply(value.data, v.data(), 0, B * S);
  if (c.rotary.dim > 0)
    for (int64_t b = 0; b < B; ++b)
      apply_rotary(c.rotary, k.data() + b * S * c.kv_dim(), S, c.kv_dim(), c.num_kv_heads, c.head_dim, nullptr, 0);
  cache.reset();
  cache.append(k.data(), v.data(), S);
  cache.set_kind(CacheKind::kCross);
}

}  // namespace mha
