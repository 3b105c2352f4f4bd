// The layer's hyper-parameters: nn.MultiheadAttention's, plus grouped-query heads, free head
// sizes and the score-step variants of today's models (q/k norms, rotary, sliding window, ALiBi,
// softcap, sinks, the output gate). resolve() is the one place that checks them and fills in every default.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "mha/plan/errors.hpp"

namespace mha {

// Rotary position embedding on q and k after projection (Hugging Face apply_rotary_pos_emb,
// ONNX RotaryEmbedding-23): the first `dim` features of each head rotate; `interleaved` rotates
// adjacent pairs (GPT-J) instead of halves (GPT-NeoX / Llama rotate_half). dim 0 = off.
struct RotaryConfig {
  int64_t dim = 0;
  double base = 10000.0;
  bool interleaved = false;
};

// RMSNorm of the projected q and k, before rotary (Qwen3 and Gemma 3 per head, OLMo-2 over the
// whole projection): x <- x / sqrt(mean(x^2) + eps) * w, the mean over each head's head_dim
// features ('head') or over the row's q_dim / kv_dim ('projection'), with the state-dict entries
// 'q_norm.weight' and 'k_norm.weight' ([Dh], or [H*Dh] and [Hkv*Dh]). kernels/qk_norm.hpp applies it.
// (Gemma's (1 + w) form is this one with w + 1 loaded.)
enum class QkNormScope { kNone, kHead, kProjection };

struct QkNormConfig {
  std::string over;  // '' = off, 'head' or 'projection'
  double eps = 1e-6;
};

struct QkNorm {
  QkNormScope over = QkNormScope::kNone;
  double eps = 0.0;  // as given (the kernel adds it in float32)
  explicit operator bool() const { return over != QkNormScope::kNone; }
};

// How the four projection matrices are stored (biases, sinks and the rest stay float32).
// The formats' arithmetic is stated once, in kernels/weight_formats.hpp.
enum class WeightDtype { kF32, kF16, kInt8, kQ4 };

inline const char* weight_dtype_name(WeightDtype d) {
  switch (d) {
    case WeightDtype::kF16: return "f16";
    case WeightDtype::kInt8: return "int8";
    case WeightDtype::kQ4: return "q4";
    default: return "f32";
  }
}

// 'f32' | 'f16' | 'int8' | 'q4' -> the enum; anything else throws, naming the allowed ones.
inline WeightDtype parse_weight_dtype(const std::string& name, const char* argument = "weightDtype") {
  for (WeightDtype d : {WeightDtype::kF32, WeightDtype::kF16, WeightDtype::kInt8, WeightDtype::kQ4})
    if (name == weight_dtype_name(d)) return d;
  throw type_error(std::string(argument) + " must be one of 'f32', 'f16', 'int8', 'q4', got '" + name + "'");
}

struct AttentionConfig {
  int64_t embed_dim = 0;     // E: the query's feature size
  int64_t num_heads = 0;     // H
  int64_t kdim = 0;          // key feature size; 0 means E
  int64_t vdim = 0;          // value feature size; 0 means E
  bool bias = true;          // in_proj_bias and out_proj.bias
  int64_t num_kv_heads = 0;  // Hkv for grouped-query attention, divides H; 0 means H
  std::optional<double> scale;  // softmax scale; default 1/sqrt(head_dim)
  int64_t head_dim = 0;        // q/k head size; 0 means E / H (then H must divide E)
  int64_t value_head_dim = 0;  // v head size; 0 means head_dim
  int64_t output_dim = 0;      // out_proj rows (the output's feature size); 0 means E
  QkNormConfig qk_norm;
  RotaryConfig rotary;
  int64_t sliding_window = 0;  // W keys (causal: p-W+1..p; otherwise |i - j| < W); 0 = off
  bool alibi = false;          // ALiBi with BLOOM's slopes, unless alibi_slopes is given
  std::vector<float> alibi_slopes;  // [H]: ALiBi with these slopes
  std::optional<float> softcap;     // scores -> c * tanh(scores / c)
  bool sinks = false;               // a learned sink logit per head (state-dict entry 'sinks' [H])
  // Gated attention (Qwen3-Next, Keras use_gate): each head's output times sigmoid(x W_gate^T +
  // b_gate), a projection of the query input (state-dict 'gate_proj.weight' [H*Dv, E], with bias
  // 'gate_proj.bias' [H*Dv]), before out_proj (kernels/output_gate.hpp).
  bool gate = false;
  float dropout = 0.0f;             // attention dropout probability in [0, 1), training calls only
  std::string weight_dtype = "f32";  // 'f32' | 'f16' | 'int8' | 'q4': how the projections are stored
  // Batched tensors are [B, L, features]; false: PyTorch's default batch_first=False, [L, B, features].
  bool batch_first = true;
  // PyTorch's add_bias_kv: learned bias_k / bias_v rows appended to every sequence's projected
  // keys and values; add_zero_attn: a zero key and value row appended after them. The masks cover
  // the given keys and are padded with "attend" for these (as PyTorch pads them).
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  // 'float32' | 'float64': what the layer computes in and takes and returns (PyTorch's dtype). A
  // float64 layer is a Float64Attention (float64_attention.hpp), with nn.MultiheadAttention's options.
  std::string dtype = "float32";
};

// A config with every default filled in and every rule checked.
struct ResolvedConfig {
  int64_t embed_dim, num_heads, kdim, vdim, num_kv_heads, head_dim, value_head_dim, output_dim;
  bool bias;
  float scale;
  QkNorm qk_norm;                  // off unless config qk_norm.over
  RotaryConfig rotary;
  int64_t sliding_window;          // 0 = none
  std::vector<float> alibi_slopes;  // [H], or empty = no ALiBi
  float softcap;                   // 0 = none
  bool sinks;
  bool gate;                       // the output gate (kernels/output_gate.hpp)
  float dropout;                   // 0 = none
  WeightDtype weight_dtype;        // the projections' storage
  bool batch_first;                // false: batched inputs and outputs are sequence-first [L, B, features]
  bool add_bias_kv, add_zero_attn;  // keys (and values) appended after the given ones
  bool float64;                    // dtype 'float64': a Float64Attention's config
  double scale64;                  // the scale as given, or 1/sqrt(head_dim), in float64 (a float64 layer's)

  int64_t q_dim() const { return num_heads * head_dim; }               // rows of the q projection
  int64_t kv_dim() const { return num_kv_heads * head_dim; }           // rows of the k projection
  int64_t value_kv_dim() const { return num_kv_heads * value_head_dim; }  // rows of the v projection
  int64_t attended_dim() const { return num_heads * value_head_dim; }     // columns of out_proj
  int64_t heads_per_kv() const { return num_heads / num_kv_heads; }
  int64_t extra_keys() const { return (add_bias_kv ? 1 : 0) + (add_zero_attn ? 1 : 0); }  // appended per sequence
};

// BLOOM's ALiBi slopes (Hugging Face modeling_bloom.build_alibi_tensor): n = 2^floor(log2 H),
// slope_h = 2^(-8(h+1)/n) for h < n, then 2^(-4k/n) for k = 1, 3, 5, ... for the other heads.
inline std::vector<float> bloom_alibi_slopes(int64_t heads) {
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  std::vector<float> slopes;
  for (int64_t h = 0; h < n; ++h) slopes.push_back(static_cast<float>(std::exp2(-8.0 * (h + 1) / n)));
  for (int64_t k = 1; static_cast<int64_t>(slopes.size()) < heads; k += 2)
    slopes.push_back(static_cast<float>(std::exp2(-4.0 * k / n)));
  return slopes;
}

// 0.5, 3, 1e+30, Infinity, NaN: a number as a message shows it (non-finite ones as JavaScript names them).
inline std::string number_text(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// How a caller's messages name the heads that the ALiBi slopes must match, one slope each:
// "alibiSlopes: expected " + before + heads + after + ", got " + slopes.
struct SlopesWanted {
  const char* before;
  const char* after;
};

// The score-step variants' rules, checked once for the layer's config (resolve) and the attention
// function's options (plan_attention): a sliding window of W >= 1 keys (0 = off), one finite ALiBi
// slope per head (none = off), a finite softcap > 0 (absent = off), a dropout probability in [0, 1).
inline void check_variants(int64_t sliding_window, const std::vector<float>& alibi_slopes, int64_t heads,
                           SlopesWanted slopes_wanted, const std::optional<float>& softcap, float dropout) {
  if (sliding_window < 0)
    throw range_error("slidingWindow must be an integer >= 1, got " + std::to_string(sliding_window));
  if (!alibi_slopes.empty()) {
    if (static_cast<int64_t>(alibi_slopes.size()) != heads)
      throw range_error(std::string("alibiSlopes: expected ") + slopes_wanted.before + std::to_string(heads) +
                        slopes_wanted.after + ", got " + std::to_string(alibi_slopes.size()));
    for (float s : alibi_slopes)
      if (!std::isfinite(s)) throw range_error("alibiSlopes: every slope must be a finite number");
  }
  if (softcap && (!(*softcap > 0) || !std::isfinite(*softcap)))
    throw range_error("softcap must be a finite number > 0, got " + number_text(*softcap));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw range_error("dropout must be a number in [0, 1), got " + number_text(dropout));
}

inline ResolvedConfig resolve(const AttentionConfig& c) {
  auto positive = [](const char* name, int64_t v) {
    if (v <= 0)
      throw range_error(std::string(name) + " must be a positive integer, got " + std::to_string(v));
  };
  positive("embedDim", c.embed_dim);
  positive("numHeads", c.num_heads);
  if (c.head_dim == 0 && c.embed_dim % c.num_heads != 0)
    throw range_error("numHeads (" + std::to_string(c.num_heads) + ") must divide embedDim (" +
                      std::to_string(c.embed_dim) + "), or give headDim");
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
  r.head_dim = c.head_dim == 0 ? c.embed_dim / c.num_heads : c.head_dim;
  r.value_head_dim = c.value_head_dim == 0 ? r.head_dim : c.value_head_dim;
  r.output_dim = c.output_dim == 0 ? c.embed_dim : c.output_dim;
  positive("headDim", r.head_dim);
  positive("valueHeadDim", r.value_head_dim);
  positive("outputDim", r.output_dim);
  r.bias = c.bias;
  r.scale = c.scale ? static_cast<float>(*c.scale) : 1.0f / std::sqrt(static_cast<float>(r.head_dim));
  r.scale64 = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(r.head_dim));
  if (!std::isfinite(r.scale))
    throw range_error("scale must be a finite number, got " + number_text(r.scale));

  if (!c.qk_norm.over.empty()) {
    if (c.qk_norm.over != "head" && c.qk_norm.over != "projection")
      throw type_error("qkNorm.over must be 'head' or 'projection', got '" + c.qk_norm.over + "'");
    if (!(c.qk_norm.eps >= 0) || !std::isfinite(c.qk_norm.eps))
      throw range_error("qkNorm.eps must be a finite number >= 0, got " + number_text(c.qk_norm.eps));
    r.qk_norm.over = c.qk_norm.over == "head" ? QkNormScope::kHead : QkNormScope::kProjection;
    r.qk_norm.eps = c.qk_norm.eps;
  }
  r.rotary = c.rotary;
  if (c.rotary.dim != 0) {
    if (c.rotary.dim < 0 || c.rotary.dim % 2 != 0 || c.rotary.dim > r.head_dim)
      throw range_error("rotary.dim must be an even integer from 2 to headDim (" + std::to_string(r.head_dim) +
                        "), got " + std::to_string(c.rotary.dim));
    if (!(c.rotary.base > 0) || !std::isfinite(c.rotary.base))
      throw range_error("rotary.base must be a finite number > 0, got " + number_text(c.rotary.base));
  }
  check_variants(c.sliding_window, c.alibi_slopes, c.num_heads, {"numHeads = ", " slopes"}, c.softcap, c.dropout);
  r.sliding_window = c.sliding_window;
  if (!c.alibi_slopes.empty())
    r.alibi_slopes = c.alibi_slopes;
  else if (c.alibi)
    r.alibi_slopes = bloom_alibi_slopes(c.num_heads);
  r.softcap = c.softcap ? *c.softcap : 0.0f;
  r.sinks = c.sinks;
  r.gate = c.gate;
  r.dropout = c.dropout;
  r.weight_dtype = parse_weight_dtype(c.weight_dtype);
  r.batch_first = c.batch_first;
  r.add_bias_kv = c.add_bias_kv;
  r.add_zero_attn = c.add_zero_attn;
  if (r.extra_keys() > 0 && (r.rotary.dim > 0 || r.sliding_window > 0 || !r.alibi_slopes.empty())) {
    // Those place keys by position; PyTorch's appended keys have none.
    throw type_error(std::string(c.add_bias_kv ? "addBiasKv" : "addZeroAttn") +
                     ": not with rotary, slidingWindow or alibi (they place keys by position, and the appended "
                     "keys have none)");
  }
  if (r.extra_keys() > 0 && r.qk_norm)
    throw type_error(std::string(c.add_bias_kv ? "addBiasKv" : "addZeroAttn") +
                     ": not with qkNorm (the appended keys are learned or zero rows, not projections to normalize)");
  if (c.dtype != "float32" && c.dtype != "float64")
    throw type_error("dtype must be 'float32' or 'float64', got '" + c.dtype + "'");
  r.float64 = c.dtype == "float64";
  if (r.float64) {
    // The float64 path computes nn.MultiheadAttention's own options (float64_attention.cpp); the
    // variants of today's models, quantized weights and dropout are the float32 layer's only.
    const char* refused = r.qk_norm                      ? "qkNorm"
                          : r.rotary.dim > 0             ? "rotary"
                          : r.sliding_window > 0         ? "slidingWindow"
                          : !r.alibi_slopes.empty()      ? (c.alibi_slopes.empty() ? "alibi" : "alibiSlopes")
                          : r.softcap > 0                ? "softcap"
                          : r.sinks                      ? "sinks"
                          : r.gate                       ? "gate"
                          : r.dropout > 0                ? "dropout"
                          : r.weight_dtype != WeightDtype::kF32 ? "weightDtype"
                                                         : nullptr;
    if (refused)
      throw type_error(std::string(refused) + ": not with dtype 'float64' (a float64 layer computes "
                       "nn.MultiheadAttention's own options: masks, causal, kdim/vdim, bias, batchFirst, addBiasKv, "
                       "addZeroAttn, static keys and values, grouped-query heads and head sizes)");
  }
  return r;
}

}  // namespace mha
