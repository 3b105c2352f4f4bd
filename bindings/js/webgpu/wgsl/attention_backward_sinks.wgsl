// The sink logits' gradient: d_sink_h = -sum over batch rows b and query rows i of
// exp(sink_h - lse) D (the sink's probability times D = dO . O; attention_backward_prepare.wgsl
// packed lse and D). One invocation per head, summing its rows in order. Template: DH / DV.
// Dispatch: (ceil(H / 64), 1, 1).

struct Dims { B: u32, H: u32, L: u32, pad0: u32 }

#include "packed_rows.wgsl"

@group(0) @binding(0) var<storage, read> rows: array<vec4f>;         // [B*H*L, RS]
@group(0) @binding(1) var<storage, read> sinks: array<f32>;          // [H]
@group(0) @binding(2) var<storage, read_write> d_sinks: array<f32>;  // [H]
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let h = id.x;
  if (h >= dims.H) { return; }
  var total = 0.0;
  for (var b = 0u; b < dims.B; b++) {
    for (var i = 0u; i < dims.L; i++) {
      let stats = rows[((b * dims.H + h) * dims.L + i) * RS + RS - 1u];
      total -= exp(sinks[h] - stats.x) * stats.y;
    }
  }
  d_sinks[h] = total;
}
