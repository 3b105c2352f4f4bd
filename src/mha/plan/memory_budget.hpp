// How much memory a layer and a forward call need, counted up front from the shapes, so a
// request that cannot fit fails with a RangeError naming the sizes before anything is allocated
// (instead of an allocation failure half way, or a size that wrapped around).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/attention_kernel_choice.hpp"
#include "mha/plan/errors.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "mha/cache/kv_cache.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/plan/shape.hpp"

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#endif

namespace mha {

struct MemoryItem {
  std::string name;
  uint64_t bytes;
  int block = 0;  // items with the same nonzero block share one buffer (largest_block_bytes)
};

// The forward call's workspace: its projections, attended values and kernel scratch in one buffer.
constexpr int kWorkspaceBlock = 1;

// Sizes saturate at UINT64_MAX rather than wrap: they are only compared and printed.
inline uint64_t saturating_bytes(const Shape& shape, uint64_t bytes_per_element) {
  uint64_t n = bytes_per_element;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::numeric_limits<uint64_t>::max();
  return n;
}

inline uint64_t total_bytes(const std::vector<MemoryItem>& items) {
  uint64_t total = 0;
  for (const MemoryItem& item : items)
    if (__builtin_add_overflow(total, item.bytes, &total)) return std::numeric_limits<uint64_t>::max();
  return total;
}

// "512 bytes", "3.5 KiB", "12.9 GiB"
inline std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, kUnits[unit]);
  return text;
}

// The most memory this build can ever hold: the wasm module's maximum heap, or natively the
// 47-bit user address space of common 64-bit systems (there it only catches absurd sizes).
inline uint64_t addressable_bytes() {
#ifdef __EMSCRIPTEN__
  return emscripten_get_heap_max();
#else
  return uint64_t{1} << 47;
#endif
}

// The largest single buffer the allocator hands out. Emscripten's dlmalloc asks sbrk for less
// than half the 32-bit address space at a time (HALF_MAX_SIZE_T), so in wasm one buffer stays
// under 2 GiB even in a 4 GiB memory (2 GiB less its 64 KiB granularity and chunk headers).
inline uint64_t largest_block_bytes() {
#ifdef __EMSCRIPTEN__
  return (uint64_t{1} << 31) - (uint64_t{1} << 17);
#else
  return addressable_bytes();
#endif
}

inline const char* memory_kind() {
#ifdef __EMSCRIPTEN__
  return "WebAssembly memory";
#else
  return "memory";
#endif
}

// The learned weights a layer keeps (its state-dict tensors). With a quantized weight_dtype the
// projections count their stored bytes (kernels/weight_formats.hpp: codes and float32 scales).
inline std::vector<MemoryItem> weight_memory(const ResolvedConfig& c) {
  std::vector<MemoryItem> items;
  for (const auto& [key, shape] : state_dict_layout(c)) {
    const bool projection = shape.size() == 2;
    if (!projection || c.weight_dtype == WeightDtype::kF32) {
      items.push_back({key, saturating_bytes(shape, 4)});
      continue;
    }
    const int64_t out = shape[0], in = shape[1], blocks = kernels::q4_blocks(in);
    uint64_t bytes = 0;
    if (c.weight_dtype == WeightDtype::kInt8) bytes = total_bytes({{"", saturating_bytes({out, in}, 1)}, {"", saturating_bytes({out}, 4)}});
    if (c.weight_dtype == WeightDtype::kQ4)
      bytes = total_bytes({{"", saturating_bytes({out, blocks, kernels::kQ4Block / 2}, 1)}, {"", saturating_bytes({out, blocks}, 4)}});
    if (c.weight_dtype == WeightDtype::kF16) bytes = saturating_bytes({out, in}, 2);
    items.push_back({key + " (" + weight_dtype_name(c.weight_dtype) + ")", bytes});
  }
  return items;
}

// What loadStateDict holds at its peak: the caller's tensors copied into wasm memory, the
// checked copies (parameters.cpp checks every entry before keeping any) and the parameters.
inline std::vector<MemoryItem> load_memory(const ResolvedConfig& c, uint64_t staged_floats) {
  const uint64_t weights = total_bytes(weight_memory(c));
  return {{"state dict copied in", saturating_bytes({static_cast<int64_t>(staged_floats)}, 4)},
          {"checked copy", weights},
          {"parameters", weights}};
}

// One attention kernel's scratch floats against S keys (the forward call keeps one per thread):
// the decode kernel's is a row of scores per head of a GQA group, the flash kernel's the packed
// keys and values (at 4096 keys and head size 64: 112 KiB for a 7-head group against 2 MiB).
inline int64_t attention_scratch_floats_per_thread(const ResolvedConfig& c, AttentionKernel kernel, int64_t S) {
  kernels::AttentionHeadArgs head{};
  head.key_len = S;
  head.head_dim = c.head_dim;
  head.value_head_dim = c.value_head_dim;
  return kernel == AttentionKernel::kDecode ? kernels::attention_decode_scratch_floats(head, c.heads_per_kv())
                                            : kernels::attention_scratch_floats(head);
}

// The buffers one forward call allocates, with `threads` attention kernels at work. With
// `inputs`, also the copies of query/key/value and masks that the JavaScript wrapper makes in
// wasm memory before the call.
// With `training` (forward_for_training) the projections and attended values are the saved
// state training_memory counts. The scratch is that of the kernel the call runs on
// (attention_kernel_choice.hpp): training, or dropout, takes the flash kernel even for a few rows.
inline std::vector<MemoryItem> forward_memory(const ResolvedConfig& c, const ForwardPlan& p, const ForwardOptions& o,
                                              bool self_attention, bool inputs, int threads = 1,
                                              bool training = false) {
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, E = c.embed_dim;
  auto mask_bytes = [](const MaskRef& m) { return saturating_bytes(m.shape, m.type == MaskType::kBool ? 1 : 4); };
  std::vector<MemoryItem> items;
  if (inputs) {
    items.push_back({"query", saturating_bytes({B, L, E}, 4)});
    if (!self_attention) {
      items.push_back({"key", saturating_bytes({B, S, c.kdim}, 4)});
      items.push_back({"value", saturating_bytes({B, S, c.vdim}, 4)});
    }
    if (o.key_padding_mask.present()) items.push_back({"keyPaddingMask", mask_bytes(o.key_padding_mask)});
    if (o.attn_mask.present()) items.push_back({"attnMask", mask_bytes(o.attn_mask)});
    if (!o.positions_shape.empty()) items.push_back({"positions", saturating_bytes(o.positions_shape, 4)});
    if (o.static_k.present()) items.push_back({"staticK", saturating_bytes(o.static_k.shape, 4)});
    if (o.static_v.present()) items.push_back({"staticV", saturating_bytes(o.static_v.shape, 4)});
  }
  // A sequence-first call runs on batch-first copies of its tensors (sequence_first.hpp).
  if (p.sequence_first) {
    const uint64_t keys = self_attention ? 0 : saturating_bytes({B, p.given_keys, c.kdim + c.vdim}, 4);
    items.push_back({"batch-first copies", saturating_bytes({B, L, E}, 4) + keys + saturating_bytes(p.output_shape, 4)});
  }
  // Bool masks are converted to float biases once per call, and masks of a layer that appends keys
  // padded for them (additive_mask.hpp): rows of S keys (the given ones, and the appended).
  const auto converted = [&](const MaskRef& m) {
    return saturating_bytes({element_count(m.shape) / std::max<int64_t>(1, p.given_keys), S}, 4);
  };
  const bool padded = S != p.given_keys;
  if (o.key_padding_mask.type == MaskType::kBool || (padded && o.key_padding_mask.present()))
    items.push_back({"keyPaddingMask as floats", converted(o.key_padding_mask)});
  if (o.attn_mask.type == MaskType::kBool || (padded && o.attn_mask.present()))
    items.push_back({"attnMask as floats", converted(o.attn_mask)});
  // With a cache only the call's new tokens are projected (none for a cross cache), and an f16
  // cache widens one head's keys and values per thread.
  const int64_t projected_keys = o.cache ? p.appended : S;
  if (!training) {
    items.push_back({"projected queries", saturating_bytes({B, L, c.q_dim()}, 4), kWorkspaceBlock});
    items.push_back({"projected keys and values", saturating_bytes({B, projected_keys, c.kv_dim() + c.value_kv_dim()}, 4), kWorkspaceBlock});
  }
  if (o.cache && o.cache->dtype() == CacheDtype::kF16)
    items.push_back({"float16 cache widened", saturating_bytes({threads, S, c.head_dim + c.value_head_dim}, 4), kWorkspaceBlock});
  if (!training) items.push_back({"attended values", saturating_bytes({B, L, c.attended_dim()}, 4), kWorkspaceBlock});
  if (c.gate) items.push_back({"output gate", saturating_bytes({B, L, c.attended_dim()}, 4), kWorkspaceBlock});
  const AttentionKernel kernel = choose_attention_kernel(L, call_dropout(c, o), training);
  items.push_back({"attention scratch", saturating_bytes({threads, attention_scratch_floats_per_thread(c, kernel, S)}, 4), kWorkspaceBlock});
  items.push_back({"output", saturating_bytes(p.output_shape, 4)});
  if (o.need_weights) items.push_back({"attention weights", saturating_bytes(p.weights_shape, 4)});
  return items;
}

// Key chunks per (batch row, kv head) in the attention's backward pass: enough tasks for every
// thread, each chunk at least 64 keys. One thread: one chunk.
inline int64_t backward_key_chunks(const ResolvedConfig& c, const ForwardPlan& p, int threads) {
  if (threads <= 1) return 1;
  const int64_t pairs = p.batch * c.num_kv_heads;
  const int64_t wanted = (2 * threads + pairs - 1) / pairs;
  return std::max<int64_t>(1, std::min(wanted, p.key_len / 64));
}

// The buffers backward() allocates: gradients of the attention's inputs and of the layer's
// inputs and parameters, per-thread kernel scratch, partial dQ per key chunk, and the largest
// projection's transposed operands (packed per call).
inline std::vector<MemoryItem> backward_memory(const ResolvedConfig& c, const ForwardPlan& p, int threads) {
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, chunks = backward_key_chunks(c, p, threads);
  kernels::AttentionBackwardArgs sizing{};
  sizing.forward.key_len = S;
  sizing.forward.query_len = L;
  sizing.forward.head_dim = c.head_dim;
  sizing.forward.value_head_dim = c.value_head_dim;
  sizing.key_begin = 0;
  sizing.key_end = (S + chunks - 1) / chunks;
  const auto round_up = [](int64_t n, int64_t m) { return (n + m - 1) / m * m; };
  // One linear_backward at a time: W packed transposed, dY^T and X^T packed, rows x features.
  uint64_t projection = 0;
  const auto projection_floats = [&](int64_t out, int64_t in, int64_t rows) {
    const uint64_t floats = saturating_bytes({round_up(in, 64), out + rows}, 4) / 4 +
                            saturating_bytes({out, rows}, 4) / 4;
    projection = std::max(projection, floats);
  };
  projection_floats(c.output_dim, c.attended_dim(), B * L);
  projection_floats(c.q_dim(), c.embed_dim, B * L);
  projection_floats(c.kv_dim(), c.kdim, B * S);
  projection_floats(c.value_kv_dim(), c.vdim, B * S);
  if (c.gate) projection_floats(c.attended_dim(), c.embed_dim, B * L);
  std::vector<MemoryItem> items;
  // The gated values, then the gate logits' gradient, and the gate's query gradient.
  if (c.gate) items.push_back({"output gate gradients", saturating_bytes({B, L, c.attended_dim() + c.embed_dim}, 4)});
  items.push_back({"attention gradients", saturating_bytes({B, L * (c.attended_dim() + c.q_dim()) + S * (c.kv_dim() + c.value_kv_dim())}, 4)});
  if (chunks > 1) items.push_back({"partial query gradients", saturating_bytes({chunks, B, L, c.q_dim()}, 4)});
  items.push_back({"backward scratch", saturating_bytes({threads, kernels::attention_backward_scratch_floats(sizing)}, 4)});
  items.push_back({"projection gradients", saturating_bytes({static_cast<int64_t>(projection)}, 4)});
  items.push_back({"input gradients", saturating_bytes({B, L * c.embed_dim + S * (c.kdim + c.vdim)}, 4)});
  items.push_back({"parameter gradients", total_bytes(weight_memory(c))});
  return items;
}

// A forward pass with grad: what it keeps for backward (saved_forward.hpp), its own buffers and
// backward's, all counted before anything runs. `inputs` as for forward_memory.
inline std::vector<MemoryItem> training_memory(const ResolvedConfig& c, const ForwardPlan& p, const ForwardOptions& o,
                                               bool self_attention, bool inputs, int threads) {
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, E = c.embed_dim;
  std::vector<MemoryItem> items = forward_memory(c, p, o, self_attention, inputs, threads, true);
  auto mask_bytes = [](const MaskRef& m) { return saturating_bytes(m.shape, m.type == MaskType::kBool ? 1 : 4); };
  uint64_t saved_inputs = saturating_bytes({B, L, E}, 4);
  if (!self_attention) saved_inputs += saturating_bytes({B, S, c.kdim + c.vdim}, 4);
  if (o.key_padding_mask.present()) saved_inputs += mask_bytes(o.key_padding_mask);
  if (o.attn_mask.present()) saved_inputs += mask_bytes(o.attn_mask);
  if (!o.positions_shape.empty()) saved_inputs += saturating_bytes(o.positions_shape, 4);
  items.push_back({"saved inputs", saved_inputs});
  items.push_back({"saved projections and attended values",
                   saturating_bytes({B, L * (c.q_dim() + c.attended_dim() + c.num_heads) + S * (c.kv_dim() + c.value_kv_dim())}, 4)});
  if (c.gate) items.push_back({"saved output gate", saturating_bytes({B, L, c.attended_dim()}, 4)});
  for (const MemoryItem& item : backward_memory(c, p, threads)) items.push_back(item);
  return items;
}

// Throws a RangeError-kind ArgumentError when one buffer (an item, or the items of one block; an
// item that sums several buffers is counted as one: only small ones do) exceeds `largest_block`.
inline void check_blocks(const std::string& subject, const std::vector<MemoryItem>& items, uint64_t largest_block) {
  for (size_t i = 0; i < items.size(); ++i) {
    const int block = items[i].block;
    bool counted = false;  // (a block is counted at its first item)
    for (size_t j = 0; j < i && block != 0; ++j) counted = counted || items[j].block == block;
    if (counted) continue;
    std::vector<MemoryItem> parts;
    for (size_t j = i; j < items.size(); ++j)
      if (j == i || (block != 0 && items[j].block == block)) parts.push_back(items[j]);
    const uint64_t bytes = total_bytes(parts);
    if (bytes <= largest_block) continue;
    std::string names;
    for (const MemoryItem& part : parts) names += (names.empty() ? "" : " + ") + part.name;
    throw range_error(subject + " need " + format_bytes(bytes) + " of " + memory_kind() + " in one block (" + names + ": " +
                      std::to_string(bytes) + " bytes), more than the largest block this build can allocate (" +
                      std::to_string(largest_block) + " bytes)");
  }
}

// Throws a RangeError-kind ArgumentError when `items` do not fit beside the `in_use` bytes:
// "<subject> need 12.9 GiB of WebAssembly memory (query 1.0 GiB, ...), more than the 2.0 GiB ...".
inline void check_fits(const std::string& subject, const std::vector<MemoryItem>& items, uint64_t in_use,
                       uint64_t limit) {
  const uint64_t need = total_bytes(items);
  const uint64_t free = in_use < limit ? limit - in_use : 0;
  if (need <= free) {
    check_blocks(subject, items, largest_block_bytes());
    return;
  }
  std::string parts;
  for (const MemoryItem& item : items)
    if (item.bytes > 0) parts += (parts.empty() ? "" : ", ") + item.name + " " + format_bytes(item.bytes);
  std::string message = subject + " need " + format_bytes(need) + " of " + memory_kind() + " (" + parts + "), ";
  if (need > limit)
    message += "more than the " + format_bytes(limit) + " this build can address";
  else
    message += "but only " + format_bytes(free) + " of the " + format_bytes(limit) + " this build can address is free";
  throw range_error(message);
}

}  // namespace mha
