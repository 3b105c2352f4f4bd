// The attention backward's dQ (FlashAttention-2's backward, split in two kernels because WGSL
// has no float atomics: this one owns the query rows, attention_backward_dkdv.wgsl the keys).
// One query row per invocation, 64 rows per workgroup, keys and values in tiles of BC rows in
// workgroup memory, as flash_attention.wgsl (key_value_tiles.wgsl). Per visible key, with the
// probability recomputed from the forward's log-sum-exp and the score step of score_epilogue.wgsl:
//   p = exp(s - lse),  dp = z (dO . v_j),  ds = p (dp - D) softcap' scale,  dQ += ds k_j
// (z the dropout factor of the forward's mask; D = dO . O from attention_backward_prepare.wgsl).
// A key with p = 0 adds nothing (so a NaN in a value it may not see reaches nothing).
// Template: DH / DV, BC. Dispatch: (ceil(L / 64), H, B); head h reads kv head h / heads_per_kv.

#include "score_epilogue.wgsl"
#include "dropout.wgsl"
#include "key_value_tiles.wgsl"
#include "packed_rows.wgsl"

@group(0) @binding(0) var<storage, read> rows: array<vec4f>;  // [B*H*L, RS] (packed_rows.wgsl)
@group(0) @binding(1) var<storage, read> k: array<f32>;       // [B*S, k_stride], kv head at kvh*DH
@group(0) @binding(2) var<storage, read> v: array<f32>;       // [B*S, v_stride], kv head at kvh*DV
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;  // [B*L, q_stride], head h at h*DH

fn key_at(e: u32) -> f32 { return k[e]; }
fn value_at(e: u32) -> f32 { return v[e]; }

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_index) lane: u32) {
  let b = group.z;
  let h = group.y;
  let kvh = h / params.heads_per_kv;
  let row = group.x * BR + lane;
  let valid = row < params.L;
  let i = params.first_query + row;
  let stream = b * params.H + h;

  let tiles = workgroup_key_tiles(group.x);
  let begin = visible_begin(i);
  let end = visible_end(i);

  var q_row: array<vec4f, DH4>;
  var do_row: array<vec4f, DV4>;
  var grad: array<vec4f, DH4>;
  var stats = vec4f(0.0);  // (lse, D)
  if (valid) {
    let at = (stream * params.L + row) * RS;
    for (var d = 0u; d < DH4; d++) { q_row[d] = rows[at + d]; }
    for (var d = 0u; d < DV4; d++) { do_row[d] = rows[at + DH4 + d]; }
    stats = rows[at + DH4 + DV4];
  }

  for (var t0 = tiles.x; t0 < tiles.y; t0 += BC) {
    load_key_value_tiles(b * params.S, kvh, t0, lane);
    workgroupBarrier();
    if (valid) {
      for (var c = 0u; c < BC; c++) {
        let j = t0 + c;
        if (j >= params.S) { break; }
        let bias = score_bias(b, h, row, j, begin, end);
        if (is_blocked(bias)) { continue; }
        var dot4 = vec4f(0.0);
        for (var d = 0u; d < DH4; d++) { dot4 = fma(q_row[d], k_tile[c * DH4 + d], dot4); }
        let dot = dot4.x + dot4.y + dot4.z + dot4.w;
        let p = exp(final_score(dot, h, i, j, bias) - stats.x);
        if (p == 0.0) { continue; }
        var dp4 = vec4f(0.0);
        for (var d = 0u; d < DV4; d++) { dp4 = fma(do_row[d], v_tile[c * DV4 + d], dp4); }
        let dp = (dp4.x + dp4.y + dp4.z + dp4.w) * dropout_factor(i, j, stream);
        let ds = p * (dp - stats.y) * softcap_slope(dot) * params.scale;
        for (var d = 0u; d < DH4; d++) { grad[d] = fma(vec4f(ds), k_tile[c * DH4 + d], grad[d]); }
      }
    }
    workgroupBarrier();
  }

  if (!valid) { return; }
  let out = (b * params.L + row) * params.q_stride + h * DH;
  for (var d = 0u; d < DH; d++) { dq[out + d] = grad[d / 4u][d % 4u]; }
}
