// The output gate (config gate; src/mha/kernels/output_gate.hpp on the CPU): with `sigmoid`, the
// gate's logits become sigmoid(logit) in place, then gated = z * gate, element by element over
// [B * L, H * Dv]. Without `sigmoid` the gate is taken as it is (a patched gate, steps.js).
// sigmoid(x) from e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e) below (no overflow).
// Dispatch: flat (flat_main.wgsl).

struct Params { count: u32, sigmoid: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<storage, read> z: array<f32>;
@group(0) @binding(1) var<storage, read_write> gate: array<f32>;
@group(0) @binding(2) var<storage, read_write> gated: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

#include "flat_main.wgsl"

fn element(i: u32, _z: u32) {
  if (i >= params.count) { return; }
  var s = gate[i];
  if (params.sigmoid != 0u) {
    let e = exp(-abs(s));
    s = select(e, 1.0, s >= 0.0) / (1.0 + e);
    gate[i] = s;
  }
  gated[i] = z[i] * s;
}
