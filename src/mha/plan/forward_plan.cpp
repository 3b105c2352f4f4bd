#include "mha/plan/forward_plan.hpp"

#include <string>

#include "mha/cache/kv_cache.hpp"

namespace mha {
namespace {

std::string dims(std::initializer_list<std::string> names) {
  std::string s = "[";
  bool first = true;
  for (const auto& n : names) {
    if (!first) s += ", ";
    s += n;
    first = false;
  }
  return s + "]";
}

void expect_shape(const char* name, const Shape& got, const Shape& want, const std::string& symbolic) {
  if (got != want)
    throw range_error(std::string(name) + ": expected shape " + symbolic + " = " + format_shape(want) +
                      ", got " + format_shape(got));
}

void check_data(const char* name, const void* data, const Shape& shape) {
  if (data == nullptr && element_count(shape) > 0)
    throw type_error(std::string(name) + ": data is missing");
}

// PyTorch's static_k / static_v rules, in its words where they apply: [B*Hkv, S, head size], with
// S the given keys' length (the masks cover those keys).
void check_static(const char* torch_name, const char* name, const TensorRef& t, const ResolvedConfig& c,
                  const ForwardPlan& p, int64_t head_size, bool cache) {
  if (!t.present()) return;
  const std::string what = name;
  if (c.add_bias_kv)
    throw type_error(std::string("bias cannot be added to static ") + (name[6] == 'K' ? "key." : "value.") +
                     " (" + what + " with addBiasKv)");
  if (cache) throw type_error(what + ": not with a cache (a cache holds the keys and values)");
  if (c.rotary.dim > 0) throw type_error(what + ": not with rotary (the static keys and values are used as given)");
  if (c.qk_norm && name[6] == 'K') throw type_error(what + ": not with qkNorm (the static keys and values are used as given)");
  const int64_t heads = p.batch * c.num_kv_heads;
  const Shape want{heads, p.given_keys, head_size};
  const std::string symbolic = std::string(p.batched ? "[B*numKvHeads, S, " : "[numKvHeads, S, ") +
                               (name[6] == 'K' ? "headDim]" : "valueHeadDim]");
  if (t.shape.size() != 3)
    throw range_error(what + ": expected shape " + symbolic + " = " + format_shape(want) + ", got " + format_shape(t.shape));
  if (t.shape[0] != heads)
    throw range_error("expecting " + std::string(torch_name) + ".size(0) of " + std::to_string(heads) + ", but got " +
                      std::to_string(t.shape[0]) + " (" + what + ": expected shape " + symbolic + " = " +
                      format_shape(want) + ")");
  if (t.shape[2] != head_size)
    throw range_error("expecting " + std::string(torch_name) + ".size(2) of " + std::to_string(head_size) +
                      ", but got " + std::to_string(t.shape[2]) + " (" + what + ": expected shape " + symbolic + " = " +
                      format_shape(want) + ")");
  expect_shape(name, t.shape, want, symbolic + " (S: the keys' length)");
  check_data(name, t.data, t.shape);
}

}  // namespace

ForwardPlan plan_forward(const ResolvedConfig& c, const TensorRef& query, const TensorRef& key,
                         const TensorRef& value, const ForwardOptions& options) {
  const std::string E = std::to_string(c.embed_dim);
  ForwardPlan p{};
  const Shape& qs = query.shape;
  // Batched tensors: [B, L, features], or sequence-first [L, B, features] (config batch_first false).
  const bool seq_first = !c.batch_first;
  const std::string batched_q = seq_first ? "[L, B, " : "[B, L, ";
  if (qs.size() == 3) {
    p.batched = true;
    p.batch = seq_first ? qs[1] : qs[0];
    p.query_len = seq_first ? qs[0] : qs[1];
  } else if (qs.size() == 2) {
    p.batched = false;
    p.batch = 1;
    p.query_len = qs[0];
  } else {
    throw range_error("query: expected shape " + batched_q + E + "] or [L, " + E + "], got " + format_shape(qs));
  }
  p.sequence_first = p.batched && seq_first;
  if (qs.back() != c.embed_dim)
    throw range_error("query: last dimension must be embedDim = " + E + ", expected shape " +
                      (p.batched ? batched_q : "[L, ") + E + "], got " + format_shape(qs));
  if (p.batch < 1 || p.query_len < 1)
    throw range_error("query: batch size and sequence length must be at least 1, got shape " + format_shape(qs));
  check_data("query", query.data, qs);

  if (options.grad && c.qk_norm)
    throw type_error("grad: not with qkNorm (the q/k norms have no backward pass yet; a qkNorm layer runs forward "
                     "only)");

  p.appended = 0;
  p.first_position = 0;
  p.cross_cache = false;
  const KvCache* cache = options.cache;
  if (cache) {
    if (options.grad)
      throw type_error("grad: a forward pass with a cache cannot be differentiated (training runs whole sequences: "
                       "pass the whole sequence without a cache)");
    if (key.present() || value.present())
      throw type_error("key: with a cache the keys and values come from it: pass null for key and value "
                       "(for cross-attention, cache.setKeyValue(key, value) first)");
    if (p.batch != cache->batch())
      throw type_error("cache: made for batch " + std::to_string(cache->batch()) + ", but the query has batch " +
                       std::to_string(p.batch));
    if (cache->kind() == CacheKind::kCross) {
      p.key_len = cache->length();
      p.cross_cache = true;
    } else {
      if (options.causal_given && !options.causal)
        throw type_error("causal: a self-attention cache implies causal attention (each new token sees the cached "
                         "tokens and itself, never later ones); omit causal or pass true");
      if (c.kdim != c.embed_dim || c.vdim != c.embed_dim)
        throw type_error("cache: a self-attention cache needs kdim = vdim = embedDim (the new tokens are the keys)");
      if (cache->length() + p.query_len > cache->capacity())
        throw range_error("cache: appending " + std::to_string(p.query_len) + " tokens to the " +
                          std::to_string(cache->length()) + " it holds would exceed its capacity of " +
                          std::to_string(cache->capacity()) + " tokens");
      p.appended = p.query_len;
      p.first_position = cache->length();
      p.key_len = cache->length() + p.query_len;
    }
  } else if (key.present() != value.present()) {
    throw type_error(std::string(key.present() ? "value" : "key") +
                     ": key and value must be given together (or both omitted for self-attention)");
  }
  if (key.present()) {
    const Shape& ks = key.shape;
    const std::string B_ = std::to_string(p.batch);
    if (ks.size() != qs.size())
      throw range_error(std::string("key: expected ") + (p.batched ? "3" : "2") + " dimensions like the query, shape " +
                        (!p.batched ? dims({"S", std::to_string(c.kdim)})
                         : seq_first ? dims({"S", B_, std::to_string(c.kdim)})
                                     : dims({B_, "S", std::to_string(c.kdim)})) +
                        ", got " + format_shape(ks));
    p.key_len = p.sequence_first ? ks[0] : ks[ks.size() - 2];
    if (p.key_len < 1) throw range_error("key: sequence length S must be at least 1, got shape " + format_shape(ks));
    const auto batched_shape = [&](int64_t features) {
      return p.sequence_first ? Shape{p.key_len, p.batch, features} : Shape{p.batch, p.key_len, features};
    };
    Shape want_k = p.batched ? batched_shape(c.kdim) : Shape{p.key_len, c.kdim};
    Shape want_v = p.batched ? batched_shape(c.vdim) : Shape{p.key_len, c.vdim};
    expect_shape("key", ks, want_k, !p.batched ? "[S, kdim]" : seq_first ? "[S, B, kdim]" : "[B, S, kdim]");
    expect_shape("value", value.shape, want_v, !p.batched ? "[S, vdim]" : seq_first ? "[S, B, vdim]" : "[B, S, vdim]");
    check_data("key", key.data, ks);
    check_data("value", value.data, value.shape);
  } else if (!cache) {
    if (c.kdim != c.embed_dim || c.vdim != c.embed_dim)
      throw type_error("key: key and value are required when kdim or vdim differ from embedDim");
    p.key_len = p.query_len;
  }

  // add_bias_kv / add_zero_attn append keys after the given ones; the masks cover the given ones.
  p.given_keys = p.key_len;
  if (c.extra_keys() > 0) {
    const std::string option = c.add_bias_kv ? "addBiasKv" : "addZeroAttn";
    if (cache)
      throw type_error("cache: not with " + option + " (the appended keys follow each call's keys; a cache's keys "
                       "grow from call to call)");
    if (options.causal)
      throw type_error("causal: not with " + option + " (the appended keys have no position; as in PyTorch, pass "
                       "the causal mask as attnMask, and the appended keys stay visible)");
  }
  const int64_t B = p.batch, L = p.query_len, S = p.given_keys, H = c.num_heads;
  check_static("static_k", "staticK", options.static_k, c, p, c.head_dim, cache != nullptr);
  check_static("static_v", "staticV", options.static_v, c, p, c.value_head_dim, cache != nullptr);
  if (options.key_padding_mask.present()) {
    Shape want = p.batched ? Shape{B, S} : Shape{S};
    expect_shape("keyPaddingMask", options.key_padding_mask.shape, want, p.batched ? "[B, S]" : "[S]");
    check_data("keyPaddingMask", options.key_padding_mask.data, want);
  }
  p.attn_mask_per_head = false;
  if (options.attn_mask.present()) {
    const Shape& ms = options.attn_mask.shape;
    Shape per_head = p.batched ? Shape{B * H, L, S} : Shape{H, L, S};
    if (ms.size() == 3) {
      expect_shape("attnMask", ms, per_head, p.batched ? "[B*numHeads, L, S]" : "[numHeads, L, S]");
      p.attn_mask_per_head = true;
    } else if (ms != Shape{L, S}) {
      throw range_error("attnMask: expected shape [L, S] = " + format_shape({L, S}) + " or " +
                        (p.batched ? "[B*numHeads, L, S] = " : "[numHeads, L, S] = ") + format_shape(per_head) +
                        ", got " + format_shape(ms));
    }
    check_data("attnMask", options.attn_mask.data, ms);
  }

  if (options.positions != nullptr || !options.positions_shape.empty()) {
    if (c.rotary.dim == 0)
      throw type_error("positions: only a layer with rotary positions takes positions (config.rotary)");
    if (key.present() || (cache && cache->kind() == CacheKind::kCross))
      throw type_error("positions: rotary positions of the keys are their indices in cross-attention; "
                       "positions applies to self-attention only");
    Shape want = p.batched ? Shape{B, L} : Shape{L};
    expect_shape("positions", options.positions_shape, want, p.batched ? "[B, L]" : "[L]");
    check_data("positions", options.positions, want);
  }

  p.projected_keys = p.cross_cache ? 0 : cache ? p.appended : p.given_keys;
  p.key_len = p.given_keys + c.extra_keys();
  const int64_t keys = p.key_len;
  p.output_shape = !p.batched ? Shape{L, c.output_dim}
                   : p.sequence_first ? Shape{L, B, c.output_dim} : Shape{B, L, c.output_dim};
  if (options.need_weights) {
    if (options.average_weights)
      p.weights_shape = p.batched ? Shape{B, L, keys} : Shape{L, keys};
    else
      p.weights_shape = p.batched ? Shape{B, H, L, keys} : Shape{H, L, keys};
  }
  return p;
}

}  // namespace mha
