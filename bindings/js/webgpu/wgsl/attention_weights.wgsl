// The attention weights, when a call asks for them: each probability recomputed from q, k and
// the row's log-sum-exp (flash_attention.wgsl wrote it), p = exp(score - lse), with the score
// from the same epilogue. Per head, or averaged over heads (one invocation sums them all, so no
// two invocations write the same weight; weights_main.wgsl). Under dropout: after it (PyTorch)
// unless weights_before_dropout. Template: DH.
// K_T, K_AT, ENABLE_F16: how k is read (float32, or an f16 cache's halves; half-reads.js).
// Dispatch: (ceil(S / 64), L, B * (H or 1 when averaged)).
{{ENABLE_F16}}

#include "score_epilogue.wgsl"
#include "dropout.wgsl"
#include "weights_main.wgsl"

const DH: u32 = {{DH}}u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<{{K_T}}>;
@group(0) @binding(8) var<storage, read> lse: array<f32>;            // [B, H, L]

fn key_at(e: u32) -> f32 { return {{K_AT}}; }

// exp(score - lse) of key j for query row `row` of head h of batch row b; 0 when it is blocked.
fn probability(b: u32, h: u32, row: u32, j: u32) -> f32 {
  let i = params.first_query + row;
  let bias = score_bias(b, h, row, j, visible_begin(i), visible_end(i));
  if (is_blocked(bias)) { return 0.0; }
  let kvh = h / params.heads_per_kv;
  let q_at = (b * params.L + row) * params.q_stride + h * DH;
  let k_at = (b * params.kv_rows + j) * params.k_stride + kvh * DH;
  var dot = 0.0;
  for (var d = 0u; d < DH; d++) { dot += q[q_at + d] * key_at(k_at + d); }
  return exp(final_score(dot, h, i, j, bias) - lse[(b * params.H + h) * params.L + row]);
}
