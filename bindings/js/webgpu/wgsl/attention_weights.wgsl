// The attention weights, when a call asks for them: each probability recomputed from q, k and
// the row's log-sum-exp (flash_attention.wgsl wrote it), p = exp(score - lse), with the score
// from the same epilogue. Per head, or averaged over heads (one invocation sums them all, so no
// two invocations write the same weight). Under dropout: after it (PyTorch) unless weights_before_dropout. Template: DH.
// K_T, K_AT, ENABLE_F16: how k is read (float32, or an f16 cache's halves; half-reads.js).
// Dispatch: (ceil(S / 64), L, B * (H or 1 when averaged)).
{{ENABLE_F16}}

#include "score_epilogue.wgsl"
#include "dropout.wgsl"

const DH: u32 = {{DH}}u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<{{K_T}}>;
@group(0) @binding(7) var<storage, read_write> weights: array<f32>;  // [B, H, L, S] or [B, L, S]
@group(0) @binding(8) var<storage, read> lse: array<f32>;            // [B, H, L]

fn key_at(e: u32) -> f32 { return {{K_AT}}; }

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
  let begin = visible_begin(i);
  let end = visible_end(i);
  var total = 0.0;
  for (var h = h_first; h < h_end; h++) {
    let bias = score_bias(b, h, row, j, begin, end);
    if (is_blocked(bias)) { continue; }
    let kvh = h / params.heads_per_kv;
    let q_at = (b * params.L + row) * params.q_stride + h * DH;
    let k_at = (b * params.kv_rows + j) * params.k_stride + kvh * DH;
    var dot = 0.0;
    for (var d = 0u; d < DH; d++) { dot += q[q_at + d] * key_at(k_at + d); }
    let s = final_score(dot, h, i, j, bias);
    var p = exp(s - lse[(b * params.H + h) * params.L + row]);
    if (params.weights_before_dropout == 0u) { p *= dropout_factor(i, j, b * params.H + h); }
    total += params.weights_factor * p;
  }
  weights[id.z * params.L * params.S + row * params.S + j] = total;
}
