// The output gate on the GPU (config gate: each head's attended values times sigmoid of the
// query's gate projection, before out_proj; src/mha/kernels/output_gate.hpp on the CPU): the
// gate's projection on the GEMM kernels, then output_gate.wgsl; its backward on
// output_gate_backward.wgsl and the GEMM gradient kernels (backward.js).
import { encodeGemm } from './gemm.js';
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * Encodes gate = sigmoid(x W_gate^T + b_gate) and gated = z * gate over `rows` rows of the layer's
 * H * Dv attended features (`kernel`: the float32 GEMM of the call's plan); returns { gate, gated }
 * (new buffers: what backward.js reads).
 */
export function encodeOutputGate(device, pass, buffers, c, w, { x, z, rows, kernel }) {
  const AD = c.numHeads * c.valueHeadDim;
  const gate = buffers.storage(rows * AD, 'output gate'), gated = buffers.storage(rows * AD, 'gated attended values');
  encodeGemm(device, pass, buffers, { x, w: w.gate, bias: w.gateBias, y: gate, M: rows, N: AD, K: c.embedDim, kernel });
  encodeGateProduct(device, pass, buffers, { z, gate, gated, count: rows * AD, sigmoid: true });
  return { gate, gated };
}

/** output_gate.wgsl: gated = z * gate, with `sigmoid` after taking the gate's logits through it (in place). */
export function encodeGateProduct(device, pass, buffers, { z, gate, gated, count, sigmoid }) {
  dispatch(device, pass, pipeline(device, 'output_gate'), {
    0: z, 1: gate, 2: gated, 3: buffers.uniform(uniformData('output_gate', { count, sigmoid }), 'output gate params'),
  }, flatWorkgroups('output_gate', count));
}

/**
 * output_gate_backward.wgsl: `d` (dLoss/d gated) becomes dLoss/dz in place; returns the gate's
 * logits' gradient (a new buffer), for the gate projection's weight, bias and input gradients.
 */
export function encodeOutputGateBackward(device, pass, buffers, { d, z, gate, count }) {
  const dLogits = buffers.storage(count, 'd output gate logits');
  dispatch(device, pass, pipeline(device, 'output_gate_backward'), {
    0: d, 1: z, 2: gate, 3: dLogits, 4: buffers.uniform(uniformData('output_gate_backward', { count }), 'output gate backward params'),
  }, flatWorkgroups('output_gate_backward', count));
  return dLogits;
}
