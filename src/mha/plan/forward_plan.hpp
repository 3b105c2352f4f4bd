// One source of truth for the shapes of a forward call: every input is checked here,
// and the sizes the kernels loop over come from here.
#pragma once

#include <cstdint>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

class KvCache;

enum class MaskType { kNone, kBool, kFloat };

// A caller-owned mask. Bool masks are bytes (nonzero = true = blocked); float masks are added
// to the attention scores before the softmax.
struct MaskRef {
  MaskType type = MaskType::kNone;
  const void* data = nullptr;
  Shape shape;
  bool present() const { return type != MaskType::kNone; }
};

struct ForwardOptions {
  bool causal = false;        // query i may not see keys j > i (top-left aligned)
  // Whether the caller set causal at all: a self cache implies causal, so it refuses an explicit false.
  bool causal_given = false;
  // The call keeps what its backward pass needs (forward_for_training): whole sequences, no cache.
  bool grad = false;
  MaskRef key_padding_mask;   // [B, S] (or [S] unbatched); bool true = ignore this key
  MaskRef attn_mask;          // [L, S] or [B*H, L, S] ([H, L, S] unbatched); bool true = blocked
  bool need_weights = false;  // also return the softmax probabilities
  bool average_weights = true;  // average them over heads: [B, L, S] instead of [B, H, L, S]
  // Rotary positions of the queries (and, in self-attention, of the keys): [B, L] ([L]
  // unbatched), e.g. for left-padded batches; null: row i is at position i.
  const int32_t* positions = nullptr;
  Shape positions_shape;
  // A KV cache (kv_cache.hpp): the keys and values come from it (key and value absent). A self
  // cache first appends the call's L tokens, which sit after the cached ones (causal implied);
  // a cross cache is read as is. Masks then cover the cache's keys.
  KvCache* cache = nullptr;
  // Training: dropout (config.dropout > 0) applies only when training is true, its mask keyed
  // by `seed` (and batch row, head, query, key).
  bool training = false;
  uint64_t seed = 0;
  // need_weights under dropout: the probabilities before dropout (Keras) instead of after (PyTorch).
  bool weights_before_dropout = false;
  // PyTorch's static_k / static_v: per-head keys / values [B*Hkv, S, Dh] / [B*Hkv, S, Dv] ([Hkv, S, ·]
  // unbatched) that replace the projected ones (the key / value inputs are then not projected).
  // Constants for backward: no gradient flows to them, nor through the projection they replace.
  TensorRef static_k, static_v;
};

// The dropout probability a call applies: the config's in a training call, else 0.
inline float call_dropout(const ResolvedConfig& c, const ForwardOptions& o) { return o.training ? c.dropout : 0.0f; }

struct ForwardPlan {
  bool batched;          // false when the query came as [L, E]
  // The call's tensors are sequence-first [L, B, features] (config batch_first false, batched):
  // the layer reads them as batch-first copies (sequence_first.hpp); the sizes below are the same.
  bool sequence_first;
  int64_t batch;         // B (1 when unbatched)
  int64_t query_len;     // L
  int64_t key_len;       // S (with a cache: the keys it holds after this call's append), with the appended keys
  int64_t given_keys;    // S less the keys config add_bias_kv / add_zero_attn append: what the masks cover
  int64_t appended;      // tokens a self cache gains in this call (0 otherwise)
  int64_t first_position;  // position of query row 0: the cache's length before the append, else 0
  int64_t projected_keys;  // keys (and values) projected in this call: S, a self cache's appended tokens, 0 from a cross cache
  bool cross_cache;        // the keys and values are a cross-attention cache's, as setKeyValue put them
  bool attn_mask_per_head;  // attn_mask is [B*H, L, S]
  Shape output_shape;    // [B, L, outputDim] ([L, B, outputDim] sequence-first) or [L, outputDim]
  Shape weights_shape;   // empty unless need_weights
};

// Checks q/k/v/masks against the config and returns the sizes to run with.
// key and value may both be absent (self-attention: they are the query).
ForwardPlan plan_forward(const ResolvedConfig& config, const TensorRef& query, const TensorRef& key,
                         const TensorRef& value, const ForwardOptions& options);

}  // namespace mha
