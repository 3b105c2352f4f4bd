// The step path's scores and logits (steps.js), one invocation per (key j, query row, b * H + h):
// scores = scale * q.k for every key; logits = what softmax sees, from the shared epilogue
// (score_epilogue.wgsl), -inf where a mask, causal or the window blocks the key. The dot product
// runs over d in order, as the CPU's step path (attention_steps.cpp). Template: DH, and CAPPED
// (true: also capped = the softcapped scores, before ALiBi and the masks: the attention function's
// step; false: binding 9 is bound to a placeholder and never written).
// Dispatch: (ceil(S / 64), L, B * H).

#include "score_epilogue.wgsl"

const DH: u32 = {{DH}}u;
const CAPPED: bool = {{CAPPED}};

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(7) var<storage, read_write> scores: array<f32>;  // [B, H, L, S]
@group(0) @binding(8) var<storage, read_write> logits: array<f32>;  // [B, H, L, S]
@group(0) @binding(9) var<storage, read_write> capped: array<f32>;  // [B, H, L, S] when CAPPED

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let j = id.x;
  let row = id.y;
  if (j >= params.S) { return; }
  let b = id.z / params.H;
  let h = id.z % params.H;
  let i = params.first_query + row;
  let bias = score_bias(b, h, row, j, visible_begin(i), visible_end(i));
  let q_at = (b * params.L + row) * params.q_stride + h * DH;
  let k_at = (b * params.kv_rows + j) * params.k_stride + (h / params.heads_per_kv) * DH;
  var dot = 0.0;
  for (var d = 0u; d < DH; d++) { dot += q[q_at + d] * k[k_at + d]; }
  let at = (id.z * params.L + row) * params.S + j;
  scores[at] = dot * params.scale;
  if (CAPPED) { capped[at] = softcapped(scores[at]); }
  if (is_blocked(bias)) {
    logits[at] = bias;
  } else {
    logits[at] = final_score(dot, h, i, j, bias);
  }
}
