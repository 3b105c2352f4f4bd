// The layer's hyper-parameters, as nn.MultiheadAttention takes them, plus grouped-query heads.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "errors.hpp"

namespace mha {

struct AttentionConfig {
  int64_t embed_dim = 0;     // E
  int64_t num_heads = 0;     // H, divides E
  int64_t kdim = 0;          // key feature size; 0 means E
  int64_t vdim = 0;          // value feature size; 0 means E
  bool bias = true;          // in_proj_bias and out_proj.bias
  int64_t num_kv_heads = 0;  // Hkv for grouped-query attention, divides H; 0 means H
  std::optional<float> scale;  // softmax scale; default 1/sqrt(E/H)
};

// A config with every default filled in and every rule checked.
struct ResolvedConfig {
  int64_t embed_dim, num_heads, kdim, vdim, num_kv_heads, head_dim;
  bool bias;
  float scale;

  int64_t kv_dim() const { return num_kv_heads * head_dim; }  // rows of k/v projections
  int64_t heads_per_kv() const { return num_heads / num_kv_heads; }
};

inline ResolvedConfig resolve(const AttentionConfig& c) {
  auto positive = [](const char* name, int64_t v) {
    if (v <= 0)
      throw range_error(std::string(name) + " must be a positive integer, got " + std::to_string(v));
  };
  positive("embedDim", c.embed_dim);
  positive("numHeads", c.num_heads);
  if (c.embed_dim % c.num_heads != 0)
    throw range_error("numHeads (" + std::to_string(c.num_heads) + ") must divide embedDim (" +
                      std::to_string(c.embed_dim) + ")");
  ResolvedConfig r{};
  r.embed_dim = c.embed_dim;
  r.num_heads = c.num_heads;
  r.kdim = c.kdim == 0 ? c.embed_dim : c.kdim;
  r.vdim = c.vdim == 0 ? c.embed_dim : c.vdim;
  r.num_kv_heads = c.num_kv_heads == 0 ? c.num_heads : c.num_kv_heads;
  positive("kdim", r.kdim);
  positive("vdim", r.vdim);
  positive("numKvHeads", r.num_kv_heads);
  if (c.num_heads % r.num_kv_heads != 0)
    throw range_error("numKvHeads (" + std::to_string(r.num_kv_heads) + ") must divide numHeads (" +
                      std::to_string(c.num_heads) + ")");
  r.head_dim = c.embed_dim / c.num_heads;
  r.bias = c.bias;
  r.scale = c.scale ? *c.scale : 1.0f / std::sqrt(static_cast<float>(r.head_dim));
  if (!std::isfinite(r.scale))
    throw range_error("scale must be a finite number, got " + std::to_string(r.scale));
  return r;
}

}  // namespace mha
