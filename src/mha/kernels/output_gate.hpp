// The output gate of gated attention (Qwen3-Next's attn_output_gate, Keras 3's use_gate, "Gated
// Attention for Large Language Models", arXiv 2505.06708): each head's attended values z are
// multiplied by sigmoid(g), where g = x W_gate^T + b_gate is a projection of the layer's query
// input with one logit per attended feature [H * Dv]. The product then goes to out_proj:
//
//   out = out_proj( z ⊙ sigmoid(x W_gate^T + b_gate) )
//
// The one place the gate is applied (forward, step path) and differentiated (backward).
#pragma once

#include <cstdint>

namespace mha::kernels {

struct OutputGateArgs {
  const float* z;  // [count] the attended values
  float* gate;     // [count] in: the gate's logits; out: sigmoid of them (what backward reads)
  float* out;      // [count] z ⊙ sigmoid(logits); may be z itself
  int64_t count;
};

// Portable scalar twin (std::exp): the definition the fast kernel is tested against.
void output_gate_reference(const OutputGateArgs& args);

// The kernel the layer runs (SIMD sigmoid from fast_exp, output_gate.cpp).
void output_gate(const OutputGateArgs& args);

// Its backward, given d_out = dLoss/d(z ⊙ s) and s = sigmoid(logits) from the forward:
//   d_z = d_out ⊙ s,   d_logits = d_out ⊙ z ⊙ s (1 - s)
// d_z may be d_out itself (written in place).
struct OutputGateBackwardArgs {
  const float* d_out;  // [count]
  const float* z;      // [count] the attended values before the gate
  const float* gate;   // [count] sigmoid of the logits
  float* d_z;          // [count]
  float* d_logits;     // [count]
  int64_t count;
};

void output_gate_backward(const OutputGateBackwardArgs& args);

}  // namespace mha::kernels
