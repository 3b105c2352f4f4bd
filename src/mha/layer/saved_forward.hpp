// What a forward pass with grad keeps for its backward pass, FlashAttention-2's way: the inputs,
// the projected (and rotated) q, k, v, the attended values before the output projection and each
// row's log-sum-exp. The backward pass recomputes the probabilities from these tile by tile, so
// nothing here is L x S: O((L + S) x features) (the caller's own masks aside).
#pragma once

#include <cstdint>
#include <vector>

#include "mha/runtime/float_buffer.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

class MultiheadAttention;

// A mask as forward got it, copied (the caller may reuse its buffer before backward).
struct SavedMask {
  MaskType type = MaskType::kNone;
  std::vector<uint8_t> bytes;
  Shape shape;

  SavedMask() = default;
  explicit SavedMask(const MaskRef& m) : type(m.type), shape(m.shape) {
    if (!m.present()) return;
    const size_t n = static_cast<size_t>(element_count(m.shape)) * (m.type == MaskType::kBool ? 1 : sizeof(float));
    const auto* data = static_cast<const uint8_t*>(m.data);
    bytes.assign(data, data + n);
  }
  MaskRef ref() const { return {type, bytes.data(), shape}; }
};

struct SavedForward {
  const MultiheadAttention* layer = nullptr;
  uint64_t weights_version = 0;  // the layer's load_state_dict count at forward time
  ForwardPlan plan{};  // batch-first (a sequence-first call's inputs are kept as batch-first copies)
  bool sequence_first = false;  // the caller's tensors were [L, B, features]: backward swaps to and from them
  bool self_attention = false;

  // The call's inputs and options (key and value empty in self-attention).
  std::vector<float> query, key, value;
  Shape query_shape, key_shape, value_shape;
  SavedMask key_padding_mask, attn_mask;
  std::vector<int32_t> positions;
  Shape positions_shape;
  bool causal = false;
  bool static_k = false, static_v = false;  // the keys / values were static_k / static_v: no gradient to their projection
  bool training = false;
  uint64_t seed = 0;

  // What the forward computed: q [B*L, H*Dh] and k [B*S, Hkv*Dh] after rotary, v [B*S, Hkv*Dv],
  // attended [B*L, H*Dv] (the attention's output, before the gate and out_proj), lse [B, H, L],
  // and with the output gate its sigmoid values gate [B*L, H*Dv] (empty without).
  // Written whole by the forward pass, so left uninitialized until then.
  FloatBuffer q, k, v, attended, lse, gate;

  // A patched forward pass (attention_steps.hpp): per head, whether its q, k, v or z were replaced
  // by constants (the patch); the gradient stops there. Empty when nothing was patched.
  std::vector<bool> constant_q, constant_k, constant_v, constant_z, constant_gate;

  // The options forward ran with, pointing into this object's copies.
  ForwardOptions options() const {
    ForwardOptions o;
    o.causal = causal;
    o.key_padding_mask = key_padding_mask.ref();
    o.attn_mask = attn_mask.ref();
    if (!positions_shape.empty()) {
      o.positions = positions.data();
      o.positions_shape = positions_shape;
    }
    o.training = training;
    o.seed = seed;
    return o;
  }
};

}  // namespace mha
