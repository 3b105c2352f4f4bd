// The entry point of the kernels that write attention weights (attention_weights.wgsl,
// steps_weights.wgsl): invocation (j, row, z) writes weight [z, row, j] of weights [B, H, L, S]
// (z = b * H + h) or, averaged over heads, [B, L, S] (z = b): the sum over its heads, in head
// order, of weights_factor * p (weights_factor: 1 / H when averaged), p after dropout unless
// weights_before_dropout. The including kernel defines probability(b, h, row, j) -> f32 (p before
// dropout; 0 for a blocked key) and includes score_epilogue.wgsl and dropout.wgsl.
// Dispatch: (ceil(S / 64), L, B * (H or 1 when averaged)).

@group(0) @binding(7) var<storage, read_write> weights: array<f32>;  // [B, H, L, S] or [B, L, S]

@compute @workgroup_size({{WORKGROUP_SIZE}})
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
    var p = probability(b, h, row, j);
    if (params.weights_before_dropout == 0u) { p *= dropout_factor(i, j, b * params.H + h); }
    total += params.weights_factor * p;
  }
  weights[id.z * params.L * params.S + row * params.S + j] = total;
}
