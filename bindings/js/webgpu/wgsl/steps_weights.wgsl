// The step path's attention weights, when the call asks for them (steps.js): from the pattern
// (patched where a patch says), per head or averaged over heads in head order, after dropout
// unless weights_before_dropout, as the CPU's step path.
// Dispatch: (ceil(S / 64), L, B * (H or 1 when averaged)).

#include "score_epilogue.wgsl"
#include "dropout.wgsl"

@group(0) @binding(7) var<storage, read_write> weights: array<f32>;  // [B, H, L, S] or [B, L, S]
@group(0) @binding(8) var<storage, read> pattern: array<f32>;        // [B, H, L, S]

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let j = id.x;
  let row = id.y;
  if (j >= params.S) { return; }
  var b = id.z;
  var h_first = 0u;
  var h_end = params.H;
  if (params.average_heads == 0u) {
    b = id.z / params.H;
    h_first = id.z % params.H;
    h_end = h_first + 1u;
  }
  let i = params.first_query + row;
  var total = 0.0;
  for (var h = h_first; h < h_end; h++) {
    var p = pattern[((b * params.H + h) * params.L + row) * params.S + j];
    if (params.weights_before_dropout == 0u) { p *= dropout_factor(i, j, b * params.H + h); }
    total += params.weights_factor * p;
  }
  weights[id.z * params.L * params.S + row * params.S + j] = total;
}
