// The output gate's backward (backward.js; src/mha/kernels/output_gate.hpp on the CPU), element by
// element over [B * L, H * Dv], given d = dLoss/d(z * s) and s = sigmoid(logit) from the forward:
//   d_logits = d * z * s * (1 - s),   d_z = d * s (written over d)
// Dispatch: flat (flat_main.wgsl).

struct Params { count: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<storage, read_write> d: array<f32>;
@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> gate: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_logits: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

#include "flat_main.wgsl"

fn element(i: u32, _z: u32) {
  if (i >= params.count) { return; }
  let s = gate[i];
  let g = d[i];
  d_logits[i] = g * z[i] * s * (1.0 - s);
  d[i] = g * s;
}
