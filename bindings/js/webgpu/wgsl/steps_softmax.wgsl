// The step path's pattern (steps.js): the softmax of each logits row, one invocation per row of
// [B, H, L, S], as the CPU's step path: the max over the visible keys (a sink logit starts it),
// exp(logit - max) summed (the sink's term joins the sum), then each times 1 / sum. Blocked keys
// (-inf, by their bits) are 0; a row with no visible key is all 0.
// Dispatch: (ceil(L / 64), H, B).

#include "score_epilogue.wgsl"

@group(0) @binding(7) var<storage, read> logits: array<f32>;         // [B, H, L, S]
@group(0) @binding(8) var<storage, read_write> pattern: array<f32>;  // [B, H, L, S]

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.L) { return; }
  let h = id.y;
  let base = ((id.z * params.H + h) * params.L + id.x) * params.S;
  let sink = params.has_sinks != 0u;
  var row_max = 0.0;
  var have_max = sink;
  if (sink) { row_max = head_params[h]; }
  var any_key = false;
  for (var j = 0u; j < params.S; j++) {
    let x = logits[base + j];
    if (is_blocked(x)) { continue; }
    any_key = true;
    if (!have_max || x > row_max) {
      row_max = x;
      have_max = true;
    }
  }
  if (!any_key) {
    for (var j = 0u; j < params.S; j++) { pattern[base + j] = 0.0; }
    return;
  }
  var sum = 0.0;
  if (sink) { sum = exp(head_params[h] - row_max); }
  for (var j = 0u; j < params.S; j++) {
    let x = logits[base + j];
    var p = 0.0;
    if (!is_blocked(x)) { p = exp(x - row_max); }
    pattern[base + j] = p;
    sum += p;
  }
  let inv_sum = 1.0 / sum;
  for (var j = 0u; j < params.S; j++) { pattern[base + j] *= inv_sum; }
}
