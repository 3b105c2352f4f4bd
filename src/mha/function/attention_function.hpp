// Scaled dot-product attention as a function, on queries, keys and values that are already
// projected: PyTorch's F.scaled_dot_product_attention, ONNX's Attention (opset 23/24), Keras'
// ops.dot_product_attention. It runs on the layer's attention kernels (kernels/attention_kernel.hpp:
// the same flash and decode kernels, score step, dropout stream); plan_attention is the one
// source of truth for its shapes. docs/attention-function.md maps each framework's call onto it.
//
//   query  [B, Hq, L, E]    or [Hq, L, E] (unbatched), or [B, L, Hq*E] with num_heads (ONNX's 3-D form)
//   key    [B, Hkv, S, E]   (3-D: [B, S, Hkv*E], Hkv = kv_num_heads, default num_heads)
//   value  [B, Hkv, S, Ev]  (3-D: [B, S, Hkv*Ev])
//   past_key / past_value [B, Hkv, P, E | Ev]: concatenated before key / value (T = P + S keys)
//   output [B, Hq, L, Ev]   (3-D: [B, L, Hq*Ev]); present_key / present_value [B, Hkv, T, E | Ev]
// Query head h reads key/value head h / (Hq / Hkv).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mha/plan/forward_plan.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

class ThreadPool;

// Which keys query row i (of L) may see among T: none = all; top-left j <= i (PyTorch's
// is_causal); bottom-right j <= i + T - L; offset j <= i + causal_offsets[b] (ONNX's rule).
// JS passes the mode as its number: bindings/js/core/attention-function.js' CAUSAL_MODES names
// these for every JS backend.
enum class CausalMode { kNone = 0, kTopLeft = 1, kBottomRight = 2, kOffset = 3 };

struct AttentionFunctionOptions {
  int64_t num_heads = 0;     // Hq of a 3-D query [B, L, Hq*E]; 0 for the 4-D (and unbatched) form
  int64_t kv_num_heads = 0;  // Hkv of 3-D key / value; 0 means num_heads
  TensorRef past_key, past_value;
  // bool: nonzero = ATTEND (PyTorch's SDPA, ONNX, Keras; the layer's masks are the opposite);
  // float: added to the scores. NumPy broadcasting to [B, Hq, L, T]; a last dimension shorter
  // than T is padded with blocked entries (ONNX).
  MaskRef attn_mask;
  CausalMode causal = CausalMode::kNone;
  const int32_t* causal_offsets = nullptr;  // kOffset: [1] or [B]
  Shape causal_offsets_shape;
  const int32_t* kv_seq_lens = nullptr;  // [B]: keys kv_seq_lens[b] .. T-1 are padding (ONNX nonpad_kv_seqlen)
  Shape kv_seq_lens_shape;
  std::optional<float> scale;  // default 1 / sqrt(E)
  float softcap = 0.0f;        // c > 0: c * tanh(s / c) of the scaled scores, before the masks
  float dropout = 0.0f;        // p in [0, 1): the layer's Philox stream, keyed by seed, b * Hq + h, row, key
  uint64_t seed = 0;
  int64_t sliding_window = 0;      // as the layer's slidingWindow
  std::vector<float> alibi_slopes;  // [Hq], or empty
  const float* sinks = nullptr;    // [Hq] sink logits, or null
  Shape sinks_shape;
  bool need_weights = false;  // the probabilities [B, Hq, L, T] (after dropout, as PyTorch's)
  bool capture = false;       // the steps: scores, capped (with softcap), logits, pattern
};

struct AttentionPlan {
  bool batched;       // false for [Hq, L, E]
  bool packed_heads;  // the 3-D form [B, L, H*E]
  int64_t batch, q_heads, kv_heads, query_len, key_len, past_len, total_len, head_dim, value_head_dim;
  float scale;
  Shape output_shape;
  Shape present_key_shape, present_value_shape;  // empty without a past
  Shape weights_shape;                            // empty unless need_weights
  Shape step_shape;                               // [B, Hq, L, T]; empty unless capture
  Shape mask_shape;                               // the mask's shape left-padded to 4 dims (empty: none)
  int64_t heads_per_kv() const { return q_heads / kv_heads; }
};

// Checks every input and option and returns the sizes to run with; throws ArgumentError naming
// the argument and the expected shape. Values (kv_seq_lens, causal_offsets) are checked when
// their data is given.
AttentionPlan plan_attention(const TensorRef& query, const TensorRef& key, const TensorRef& value,
                             const AttentionFunctionOptions& options);

// Where run_attention writes: output always; the presents with a past; weights with
// need_weights; the steps with capture (capped only with a softcap). Sized by the plan.
struct AttentionOutputs {
  float* output = nullptr;
  float* present_key = nullptr;
  float* present_value = nullptr;
  float* weights = nullptr;
  float* scores = nullptr;
  float* capped = nullptr;
  float* logits = nullptr;
  float* pattern = nullptr;
  // [B, Hq, L]: each row's log-sum-exp, which the backward pass reads (then the flash kernel runs
  // every row, as the layer's training calls do).
  float* lse = nullptr;
};

// Runs the call planned as `plan` (from these same inputs) on `pool` (null: the calling thread).
void run_attention(const AttentionPlan& plan, const TensorRef& query, const TensorRef& key, const TensorRef& value,
                   const AttentionFunctionOptions& options, const AttentionOutputs& outputs, ThreadPool* pool);

// dLoss/d the inputs: query's, key's and value's shapes, and the pasts' with a past (null without).
struct AttentionGradients {
  float* d_query = nullptr;
  float* d_key = nullptr;
  float* d_value = nullptr;
  float *d_past_key = nullptr, *d_past_value = nullptr;  // the pasts' (null without a past)
};

// The backward pass of a run_attention call with `lse` (the same inputs and options: dropout
// regenerates its mask from the seed), given its output and d_output = dLoss/dOutput (the
// output's shape): the layer's backward kernel (FlashAttention-2's), per head.
void run_attention_backward(const AttentionPlan& plan, const TensorRef& query, const TensorRef& key,
                            const TensorRef& value, const AttentionFunctionOptions& options, const float* output,
                            const float* lse, const float* d_output, const AttentionGradients& grads, ThreadPool* pool);

}  // namespace mha
