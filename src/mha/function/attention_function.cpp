#include "mha/function/attention_function.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/attention_kernel_choice.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/attention_row_steps.hpp"
#include "mha/layer/layer_stages.hpp"

namespace mha {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string text(int64_t n) { return std::to_string(n); }

void check_data(const char* name, const void* data, const Shape& shape) {
  if (data == nullptr && element_count(shape) > 0) throw type_error(std::string(name) + ": data is missing");
}

// The keys' (or values') shape in the call's form, for messages: [B, Hkv, S, E] etc.
std::string kv_form(const AttentionPlan& p, const char* seq, const char* dim) {
  if (p.packed_heads) return std::string("[B, ") + seq + ", Hkv*" + dim + "]";
  return p.batched ? std::string("[B, Hkv, ") + seq + ", " + dim + "]" : std::string("[Hkv, ") + seq + ", " + dim + "]";
}

// key or value: returns {heads, sequence length, head size}.
struct KvDims {
  int64_t heads, len, dim;
};

KvDims kv_dims(const char* name, const TensorRef& t, const AttentionPlan& p, int64_t kv_heads_3d, const char* dim) {
  const Shape& s = t.shape;
  const std::string form = kv_form(p, "S", dim);
  const size_t rank = p.packed_heads ? 3 : p.batched ? 4 : 3;
  if (s.size() != rank)
    throw range_error(std::string(name) + ": expected shape " + form + " like the query, got " + format_shape(s));
  if (p.batched && s[0] != p.batch)
    throw range_error(std::string(name) + ": expected shape " + form + " with B = " + text(p.batch) +
                      " (the query's), got " + format_shape(s));
  KvDims d{};
  if (p.packed_heads) {
    d.heads = kv_heads_3d;
    d.len = s[1];
    if (s[2] % kv_heads_3d != 0 || s[2] == 0)
      throw range_error(std::string(name) + ": expected shape " + form + " with Hkv = " + text(kv_heads_3d) +
                        " dividing the last dimension, got " + format_shape(s));
    d.dim = s[2] / kv_heads_3d;
  } else {
    d.heads = s[rank - 3];
    d.len = s[rank - 2];
    d.dim = s[rank - 1];
  }
  check_data(name, t.data, s);
  return d;
}

// The mask's shape broadcast against [B, Hq, L, T]: left-padded to 4 dims; each of the first
// three is 1 or the call's size; the last from 1 to T (shorter ones are padded, blocked).
Shape plan_mask(const MaskRef& m, const AttentionPlan& p) {
  const Shape& s = m.shape;
  const std::string target = p.batched ? "[B, Hq, L, T] = " + format_shape({p.batch, p.q_heads, p.query_len, p.total_len})
                                       : "[Hq, L, T] = " + format_shape({p.q_heads, p.query_len, p.total_len});
  const size_t max_rank = p.batched ? 4 : 3;
  if (s.empty() || s.size() > max_rank)
    throw range_error("attnMask: expected 1 to " + text(static_cast<int64_t>(max_rank)) +
                      " dimensions broadcasting to " + target + ", got " + format_shape(s));
  Shape padded(4 - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  const Shape full{p.batch, p.q_heads, p.query_len};
  for (int d = 0; d < 3; ++d)
    if (padded[d] != 1 && padded[d] != full[d])
      throw range_error("attnMask: shape " + format_shape(s) + " does not broadcast to " + target +
                        " (each dimension 1 or the call's size; the last may be shorter than T, then padded)");
  if (padded[3] < 1 || padded[3] > p.total_len)
    throw range_error("attnMask: the last dimension must be from 1 to T = P + S = " + text(p.total_len) +
                      " (shorter masks are padded with blocked keys), got shape " + format_shape(s));
  check_data("attnMask", m.data, s);
  return padded;
}

// The mask as the kernels read it: an additive [L, T] block per (batch row, head), -inf where
// blocked. A float mask of full rows is read in place; any other is converted once into
// [Bm, Hm, L, T] (Bm, Hm: the mask's own 1 or B, 1 or Hq).
class BroadcastMask {
 public:
  BroadcastMask(const MaskRef& m, const AttentionPlan& p) : L_(p.query_len), T_(p.total_len) {
    if (!m.present()) return;
    const Shape& s = p.mask_shape;
    per_batch_ = s[0] > 1;
    per_head_ = s[1] > 1;
    heads_ = s[1];
    const bool in_place = m.type == MaskType::kFloat && s[2] == L_ && s[3] == T_;
    if (in_place) {
      data_ = static_cast<const float*>(m.data);
      return;
    }
    const int64_t blocks = s[0] * s[1], Lm = s[2], Tm = s[3];
    converted_.resize(static_cast<size_t>(blocks * L_ * T_));
    for (int64_t block = 0; block < blocks; ++block)
      for (int64_t i = 0; i < L_; ++i) {
        const int64_t source_row = (block * Lm + (Lm == 1 ? 0 : i)) * Tm;
        float* row = converted_.data() + (block * L_ + i) * T_;
        for (int64_t j = 0; j < T_; ++j) {
          // ONNX pads a short last dimension with blocked keys (a length-1 one too).
          if (j >= Tm) {
            row[j] = kNegInf;
          } else if (m.type == MaskType::kBool) {
            row[j] = static_cast<const uint8_t*>(m.data)[source_row + j] ? 0.0f : kNegInf;
          } else {
            row[j] = static_cast<const float*>(m.data)[source_row + j];
          }
        }
      }
    data_ = converted_.data();
  }
  BroadcastMask(const BroadcastMask&) = delete;
  BroadcastMask& operator=(const BroadcastMask&) = delete;

  // Head h of batch row b: [L, T], or null without a mask.
  const float* rows(int64_t b, int64_t h) const {
    if (!data_) return nullptr;
    return data_ + ((per_batch_ ? b : 0) * heads_ + (per_head_ ? h : 0)) * L_ * T_;
  }

 private:
  int64_t L_, T_, heads_ = 1;
  bool per_batch_ = false, per_head_ = false;
  const float* data_ = nullptr;
  std::vector<float> converted_;
};

// Where head h's rows live in a tensor of the call's form: [B, H, N, D] (row stride D) or, packed,
// [B, N, H*D] (row stride H*D).
struct HeadLayout {
  const AttentionPlan& p;
  int64_t offset(int64_t b, int64_t h, int64_t heads, int64_t rows, int64_t dim) const {
    return p.packed_heads ? b * rows * heads * dim + h * dim : (b * heads + h) * rows * dim;
  }
  int64_t stride(int64_t heads, int64_t dim) const { return p.packed_heads ? heads * dim : dim; }
};

}  // namespace

AttentionPlan plan_attention(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                             const AttentionFunctionOptions& o) {
  AttentionPlan p{};
  const Shape& qs = query.shape;
  if (o.num_heads < 0 || o.kv_num_heads < 0)
    throw range_error(std::string(o.num_heads < 0 ? "numHeads" : "kvNumHeads") + " must be a positive integer");
  if (o.kv_num_heads > 0 && o.num_heads == 0)
    throw type_error("kvNumHeads: only with numHeads, for 3-D inputs [B, L, H*E]");
  if (o.num_heads > 0) {
    p.packed_heads = p.batched = true;
    if (qs.size() != 3)
      throw range_error("query: with numHeads, expected shape [B, L, numHeads*E], got " + format_shape(qs));
    p.batch = qs[0];
    p.query_len = qs[1];
    p.q_heads = o.num_heads;
    if (qs[2] % o.num_heads != 0 || qs[2] == 0)
      throw range_error("query: the last dimension of shape [B, L, numHeads*E] must be a positive multiple of numHeads = " +
                        text(o.num_heads) + ", got " + format_shape(qs));
    p.head_dim = qs[2] / o.num_heads;
  } else if (qs.size() == 4 || qs.size() == 3) {
    p.batched = qs.size() == 4;
    p.packed_heads = false;
    p.batch = p.batched ? qs[0] : 1;
    p.q_heads = qs[qs.size() - 3];
    p.query_len = qs[qs.size() - 2];
    p.head_dim = qs.back();
  } else {
    throw range_error("query: expected shape [B, Hq, L, E], [Hq, L, E], or [B, L, Hq*E] with numHeads, got " +
                      format_shape(qs));
  }
  if (p.batch < 1 || p.q_heads < 1 || p.query_len < 1 || p.head_dim < 1)
    throw range_error("query: every dimension must be at least 1, got shape " + format_shape(qs));
  check_data("query", query.data, qs);

  if (!key.present() || !value.present())
    throw type_error(std::string(key.present() ? "value" : "key") + ": required, shape " +
                     kv_form(p, "S", key.present() ? "Ev" : "E"));
  const int64_t kv_heads_3d = o.kv_num_heads > 0 ? o.kv_num_heads : o.num_heads;
  const KvDims k = kv_dims("key", key, p, kv_heads_3d, "E");
  const KvDims v = kv_dims("value", value, p, kv_heads_3d, "Ev");
  if (k.dim != p.head_dim)
    throw range_error("key: expected shape " + kv_form(p, "S", "E") + " with E = " + text(p.head_dim) +
                      " (the query's head size), got " + format_shape(key.shape));
  if (v.heads != k.heads || v.len != k.len)
    throw range_error("value: expected shape " + kv_form(p, "S", "Ev") + " with Hkv = " + text(k.heads) + " and S = " +
                      text(k.len) + " (the key's), got " + format_shape(value.shape));
  if (k.heads < 1 || v.dim < 1)
    throw range_error("key: the heads and head sizes of key and value must be at least 1, got shapes " +
                      format_shape(key.shape) + " and " + format_shape(value.shape));
  if (p.q_heads % k.heads != 0)
    throw range_error("key: the query's heads (Hq = " + text(p.q_heads) + ") must be a multiple of the key's (Hkv = " +
                      text(k.heads) + "), got shape " + format_shape(key.shape));
  p.kv_heads = k.heads;
  p.key_len = k.len;
  p.value_head_dim = v.dim;

  p.past_len = 0;
  if (o.past_key.present() != o.past_value.present())
    throw type_error(std::string(o.past_key.present() ? "pastValue" : "pastKey") +
                     ": pastKey and pastValue must be given together");
  if (o.past_key.present()) {
    const Shape& ps = o.past_key.shape;
    const size_t rank = p.batched ? 4 : 3;
    const std::string form = p.batched ? "[B, Hkv, P, E]" : "[Hkv, P, E]";
    if (ps.size() != rank)
      throw range_error("pastKey: expected shape " + form + ", got " + format_shape(ps));
    p.past_len = ps[rank - 2];
    const auto want = [&](int64_t dim) {
      Shape s{p.kv_heads, p.past_len, dim};
      if (p.batched) s.insert(s.begin(), p.batch);
      return s;
    };
    if (ps != want(p.head_dim))
      throw range_error("pastKey: expected shape " + form + " = " + format_shape(want(p.head_dim)) + ", got " +
                        format_shape(ps));
    if (o.past_value.shape != want(p.value_head_dim))
      throw range_error("pastValue: expected shape " + std::string(p.batched ? "[B, Hkv, P, Ev]" : "[Hkv, P, Ev]") +
                        " = " + format_shape(want(p.value_head_dim)) + ", got " + format_shape(o.past_value.shape));
    check_data("pastKey", o.past_key.data, ps);
    check_data("pastValue", o.past_value.data, o.past_value.shape);
  }
  p.total_len = p.past_len + p.key_len;
  if (p.total_len < 1)
    throw range_error("key: there must be at least one key (S + P >= 1), got shape " + format_shape(key.shape));

  p.scale = o.scale ? *o.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  if (!std::isfinite(p.scale)) throw range_error("scale must be a finite number, got " + number_text(p.scale));
  // The layer's rules (attention_config.hpp); here a softcap of 0 is none.
  check_variants(o.sliding_window, o.alibi_slopes, p.q_heads, {"one slope per query head (Hq = ", ")"},
                 o.softcap != 0.0f ? std::optional<float>(o.softcap) : std::nullopt, o.dropout);
  if (o.sinks || !o.sinks_shape.empty()) {
    if (o.sinks_shape != Shape{p.q_heads})
      throw range_error("sinks: expected shape [Hq] = [" + text(p.q_heads) + "], got " + format_shape(o.sinks_shape));
    check_data("sinks", o.sinks, o.sinks_shape);
  }

  if (o.causal == CausalMode::kOffset) {
    const Shape& cs = o.causal_offsets_shape;
    if (cs != Shape{1} && cs != Shape{p.batch})
      throw range_error("causalOffset: expected a number or one offset per batch row, shape [B] = [" + text(p.batch) +
                        "], got " + format_shape(cs));
    check_data("causalOffset", o.causal_offsets, cs);
  } else if (o.causal_offsets) {
    throw type_error("causalOffset: given without causal mode 'offset'");
  }
  if (o.kv_seq_lens || !o.kv_seq_lens_shape.empty()) {
    if (o.kv_seq_lens_shape != Shape{p.batch})
      throw range_error("kvSeqLens: expected shape [B] = [" + text(p.batch) + "], got " +
                        format_shape(o.kv_seq_lens_shape));
    check_data("kvSeqLens", o.kv_seq_lens, o.kv_seq_lens_shape);
    for (int64_t b = 0; o.kv_seq_lens && b < p.batch; ++b)
      if (o.kv_seq_lens[b] < 0 || o.kv_seq_lens[b] > p.total_len)
        throw range_error("kvSeqLens: every length must be from 0 to T = P + S = " + text(p.total_len) + ", got " +
                          text(o.kv_seq_lens[b]) + " for batch row " + text(b));
  }
  if (o.attn_mask.present()) p.mask_shape = plan_mask(o.attn_mask, p);

  const auto batched = [&](Shape s) {
    if (p.batched) s.insert(s.begin(), p.batch);
    return s;
  };
  p.output_shape = p.packed_heads ? Shape{p.batch, p.query_len, p.q_heads * p.value_head_dim}
                                  : batched({p.q_heads, p.query_len, p.value_head_dim});
  if (o.past_key.present()) {
    p.present_key_shape = batched({p.kv_heads, p.total_len, p.head_dim});
    p.present_value_shape = batched({p.kv_heads, p.total_len, p.value_head_dim});
  }
  if (o.need_weights) p.weights_shape = batched({p.q_heads, p.query_len, p.total_len});
  if (o.capture) p.step_shape = batched({p.q_heads, p.query_len, p.total_len});
  return p;
}

namespace {

// [B, Hkv, T, D] = past [B, Hkv, P, D] then the new rows (in the call's layout).
void concatenate(const AttentionPlan& p, const float* past, const float* fresh, float* present, int64_t D) {
  const HeadLayout layout{p};
  const int64_t Hkv = p.kv_heads, P = p.past_len, S = p.key_len, T = p.total_len;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < Hkv; ++h) {
      float* rows = present + (b * Hkv + h) * T * D;
      std::copy_n(past + (b * Hkv + h) * P * D, P * D, rows);
      const float* source = fresh + layout.offset(b, h, Hkv, S, D);
      for (int64_t j = 0; j < S; ++j) std::copy_n(source + j * layout.stride(Hkv, D), D, rows + (P + j) * D);
    }
}

// One call's heads as the kernels take them: where head h's q, k, v and output rows are, its
// masks, positions, score step and dropout. The forward and backward passes both build their
// kernel arguments here, so they cannot disagree about a head.
class AttentionHeads {
 public:
  // keys / values: the presents [B, Hkv, T, D] with a past, else null (the inputs are read in place).
  AttentionHeads(const AttentionPlan& p, const TensorRef& query, const TensorRef& key, const TensorRef& value,
                 const AttentionFunctionOptions& o, const float* keys, const float* values, const float* output)
      : p_(p), o_(o), layout_{p}, query_(query.data), keys_(keys ? keys : key.data), values_(values ? values : value.data),
        output_(output), in_place_(keys == nullptr), mask_(o.attn_mask, p) {
    if (o.kv_seq_lens) {
      key_bias_.resize(static_cast<size_t>(p.batch * p.total_len));
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t j = 0; j < p.total_len; ++j)
          key_bias_[b * p.total_len + j] = j < o.kv_seq_lens[b] ? 0.0f : kNegInf;
    }
  }

  // Query rows first .. first + rows - 1 of head h of batch row b.
  kernels::AttentionHeadArgs head(int64_t b, int64_t h, int64_t first, int64_t rows) const {
    const int64_t Hq = p_.q_heads, Hkv = p_.kv_heads, L = p_.query_len, T = p_.total_len, E = p_.head_dim,
                  Ev = p_.value_head_dim, kvh = h / p_.heads_per_kv();
    kernels::AttentionHeadArgs a{};
    a.q = query_ + layout_.offset(b, h, Hq, L, E) + first * layout_.stride(Hq, E);
    a.q_stride = layout_.stride(Hq, E);
    if (in_place_) {
      a.k = keys_ + layout_.offset(b, kvh, Hkv, T, E);
      a.v = values_ + layout_.offset(b, kvh, Hkv, T, Ev);
      a.k_stride = layout_.stride(Hkv, E);
      a.v_stride = layout_.stride(Hkv, Ev);
    } else {
      a.k = keys_ + (b * Hkv + kvh) * T * E;
      a.v = values_ + (b * Hkv + kvh) * T * Ev;
      a.k_stride = E;
      a.v_stride = Ev;
    }
    // (The backward kernel reads the forward's output through `out`; it never writes it.)
    a.out = const_cast<float*>(output_) + layout_.offset(b, h, Hq, L, Ev) + first * layout_.stride(Hq, Ev);
    a.out_stride = layout_.stride(Hq, Ev);
    a.query_len = rows;
    a.key_len = T;
    a.head_dim = E;
    a.value_head_dim = Ev;
    a.scale = p_.scale;
    a.causal = o_.causal != CausalMode::kNone;
    a.epilogue.window = o_.sliding_window;
    a.epilogue.softcap = o_.softcap;
    if (!o_.alibi_slopes.empty()) a.epilogue.alibi_slope = o_.alibi_slopes[h];
    if (o_.sinks) a.epilogue.sink = o_.sinks[h];
    a.first_query = first_position(b) + first;
    a.key_bias = key_bias_.empty() ? nullptr : key_bias_.data() + b * T;
    const float* mask_rows = mask_.rows(b, h);
    a.attn_bias = mask_rows ? mask_rows + first * T : nullptr;
    if (o_.dropout > 0.0f) a.dropout = {o_.dropout, o_.seed, static_cast<uint64_t>(b * Hq + h)};
    return a;
  }

 private:
  // Query row i of batch row b sits at position first_position(b) + i: causal masking, the window
  // and ALiBi compare it with key j (and dropout keys its row by it).
  int64_t first_position(int64_t b) const {
    switch (o_.causal) {
      case CausalMode::kBottomRight: return p_.total_len - p_.query_len;
      case CausalMode::kOffset: return o_.causal_offsets[o_.causal_offsets_shape[0] == 1 ? 0 : b];
      default: return 0;
    }
  }

  const AttentionPlan& p_;
  const AttentionFunctionOptions& o_;
  const HeadLayout layout_;
  const float *query_, *keys_, *values_, *output_;
  const bool in_place_;
  const BroadcastMask mask_;
  std::vector<float> key_bias_;
};

}  // namespace

void run_attention(const AttentionPlan& p, const TensorRef& query, const TensorRef& key, const TensorRef& value,
                   const AttentionFunctionOptions& o, const AttentionOutputs& out, ThreadPool* pool) {
  const int64_t B = p.batch, Hq = p.q_heads, Hkv = p.kv_heads, L = p.query_len, T = p.total_len, E = p.head_dim,
                Ev = p.value_head_dim;
  // The keys and values each head reads: with a past, the presents (which the caller gets too).
  const bool past = o.past_key.present();
  if (past) {
    concatenate(p, o.past_key.data, key.data, out.present_key, E);
    concatenate(p, o.past_value.data, value.data, out.present_value, Ev);
  }
  const AttentionHeads heads(p, query, key, value, o, past ? out.present_key : nullptr,
                             past ? out.present_value : nullptr, out.output);
  const auto head = [&](int64_t b, int64_t h, int64_t first, int64_t rows) {
    kernels::AttentionHeadArgs a = heads.head(b, h, first, rows);
    if (out.weights) {
      a.weights = out.weights + ((b * Hq + h) * L + first) * T;
      a.weights_factor = 1.0f;
    }
    if (out.lse) a.lse = out.lse + (b * Hq + h) * L + first;
    return a;
  };

  // Attend, as the layer's attention stage does (multihead_attention.cpp): a few query rows
  // without dropout or a backward to come (log-sum-exps) go to the decode kernel
  // (attention_kernel_choice.hpp), a GQA group reading its keys once; otherwise a task is
  // (batch row, query chunk, head) on the flash kernel.
  const StageRunner run(pool);
  const int threads = run.threads();
  const bool splits = 2.0 * B * Hq * L * T * (E + Ev) >= StageRunner::kMinParallelFlops;
  if (out.weights) std::fill(out.weights, out.weights + element_count(p.weights_shape), 0.0f);
  std::vector<std::vector<float>> scratch(static_cast<size_t>(threads));
  if (choose_attention_kernel(L, o.dropout, out.lse != nullptr) == AttentionKernel::kDecode) {
    const int64_t G = p.heads_per_kv();
    run.parallel(B * Hkv, splits, [&](int64_t task, int thread) {
      const int64_t b = task / Hkv, kvh = task % Hkv;
      std::vector<kernels::AttentionHeadArgs> group(static_cast<size_t>(G));
      for (int64_t g = 0; g < G; ++g) group[g] = head(b, kvh * G + g, 0, L);
      std::vector<float>& room = scratch[thread];
      room.resize(static_cast<size_t>(kernels::attention_decode_scratch_floats(group[0], G)));
      group[0].scratch = room.data();
      kernels::attention_heads_decode(group.data(), G);
    });
  } else {
    const int64_t chunk = attention_query_chunk(threads, B * Hq, L);
    const int64_t chunks = (L + chunk - 1) / chunk;
    run.parallel(B * chunks * Hq, splits, [&](int64_t task, int thread) {
      const int64_t h = task % Hq, b = task / Hq / chunks;
      const int64_t first = (task / Hq % chunks) * chunk, rows = std::min(chunk, L - first);
      kernels::AttentionHeadArgs a = head(b, h, first, rows);
      std::vector<float>& room = scratch[thread];
      room.resize(static_cast<size_t>(kernels::attention_scratch_floats(a)));
      a.scratch = room.data();
      kernels::attention_head(a);
    });
  }

  // The steps, on request: row by row (kernels/attention_row_steps.hpp), from the same arguments.
  if (out.scores) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const kernels::AttentionHeadArgs a = heads.head(b, h, 0, L);
        for (int64_t i = 0; i < L; ++i) {
          const int64_t at = ((b * Hq + h) * L + i) * T;
          kernels::attention_row_steps(a, i, out.scores + at, out.capped ? out.capped + at : nullptr,
                                       out.logits + at, out.pattern + at);
        }
      }
  }
}

void run_attention_backward(const AttentionPlan& p, const TensorRef& query, const TensorRef& key,
                            const TensorRef& value, const AttentionFunctionOptions& o, const float* output,
                            const float* lse, const float* d_output, const AttentionGradients& grads, ThreadPool* pool) {
  const int64_t B = p.batch, Hq = p.q_heads, Hkv = p.kv_heads, L = p.query_len, S = p.key_len, P = p.past_len,
                T = p.total_len, E = p.head_dim, Ev = p.value_head_dim, G = p.heads_per_kv();
  const HeadLayout layout{p};
  // dK and dV of every key (past and new) as [B, Hkv, T, D], split afterwards; with a past the
  // keys and values are read from their concatenation, as the forward read them.
  const bool past = o.past_key.present();
  std::vector<float> present_k, present_v;
  if (past) {
    present_k.resize(static_cast<size_t>(B * Hkv * T * E));
    present_v.resize(static_cast<size_t>(B * Hkv * T * Ev));
    concatenate(p, o.past_key.data, key.data, present_k.data(), E);
    concatenate(p, o.past_value.data, value.data, present_v.data(), Ev);
  }
  const AttentionHeads heads(p, query, key, value, o, past ? present_k.data() : nullptr,
                             past ? present_v.data() : nullptr, output);
  std::vector<float> dk(static_cast<size_t>(B * Hkv * T * E), 0.0f), dv(static_cast<size_t>(B * Hkv * T * Ev), 0.0f);
  std::fill(grads.d_query, grads.d_query + B * Hq * L * E, 0.0f);

  // Tasks (batch row, kv head): each adds its G query heads into its own rows of dK and dV
  // (FlashAttention-2's backward, the layer's kernel); each query head's dQ rows are its own.
  const StageRunner run(pool);
  std::vector<std::vector<float>> scratch(static_cast<size_t>(run.threads()));
  run.parallel(B * Hkv, 10.0 * B * Hq * L * T * std::max(E, Ev) >= StageRunner::kMinParallelFlops,
               [&](int64_t task, int thread) {
    const int64_t b = task / Hkv, kvh = task % Hkv;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t h = kvh * G + g;
      kernels::AttentionBackwardArgs a{};
      a.forward = heads.head(b, h, 0, L);
      a.lse = lse + (b * Hq + h) * L;
      a.d_out = d_output + layout.offset(b, h, Hq, L, Ev);
      a.d_out_stride = layout.stride(Hq, Ev);
      a.d_q = grads.d_query + layout.offset(b, h, Hq, L, E);
      a.d_q_stride = layout.stride(Hq, E);
      a.d_k = dk.data() + (b * Hkv + kvh) * T * E;
      a.d_k_stride = E;
      a.d_v = dv.data() + (b * Hkv + kvh) * T * Ev;
      a.d_v_stride = Ev;
      std::vector<float>& room = scratch[thread];
      room.resize(static_cast<size_t>(kernels::attention_backward_scratch_floats(a)));
      a.scratch = room.data();
      kernels::attention_head_backward(a);
    }
  });

  // Split dK / dV into the past's part [B, Hkv, P, D] and the new keys' (in key's layout).
  const auto split = [&](const std::vector<float>& d, float* d_past, float* d_new, int64_t D) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h) {
        const float* rows = d.data() + (b * Hkv + h) * T * D;
        if (d_past) std::copy_n(rows, P * D, d_past + (b * Hkv + h) * P * D);
        float* target = d_new + layout.offset(b, h, Hkv, S, D);
        for (int64_t j = 0; j < S; ++j) std::copy_n(rows + (P + j) * D, D, target + j * layout.stride(Hkv, D));
      }
  };
  split(dk, grads.d_past_key, grads.d_key, E);
  split(dv, grads.d_past_value, grads.d_value, Ev);
}

}  // namespace mha
