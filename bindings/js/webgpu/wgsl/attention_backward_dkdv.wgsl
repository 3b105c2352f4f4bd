// The attention backward's dK and dV (attention_backward_dq.wgsl has dQ): one key per
// invocation, 64 keys per workgroup, for one kv head; the query rows of every head that reads
// this kv head (GQA / MQA: heads_per_kv of them) pass in tiles of BR rows in workgroup memory
// (their packed q, dO, lse and D from attention_backward_prepare.wgsl), so the sum over the
// heads sharing a key is one invocation's, with no atomics. Per (row, key) the row may see:
//   p = exp(s - lse),  dV += p z dO,  ds = p (z (dO . v) - D) softcap' scale,  dK += ds q
// (z the dropout factor of the forward's mask). Tiles of rows no row of which may see any key of
// the workgroup (causal, sliding window) are skipped whole.
// Template: DH / DV, BR (rows per tile). Dispatch: (ceil(S / 64), Hkv, B).

#include "score_epilogue.wgsl"
#include "dropout.wgsl"
#include "packed_rows.wgsl"

const KEYS: u32 = {{LANES}}u;  // one key per invocation
const BR: u32 = {{BR}}u;

@group(0) @binding(0) var<storage, read> rows: array<vec4f>;  // [B*H*L, RS] (packed_rows.wgsl)
@group(0) @binding(1) var<storage, read> k: array<f32>;       // [B*S, k_stride], kv head at kvh*DH
@group(0) @binding(2) var<storage, read> v: array<f32>;       // [B*S, v_stride], kv head at kvh*DV
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;  // as k
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;  // as v

var<workgroup> row_tile: array<vec4f, BR * RS>;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_index) lane: u32) {
  let b = group.z;
  let kvh = group.y;
  let j = group.x * KEYS + lane;
  let valid = j < params.S;
  // This workgroup's keys (uniform), to skip the row tiles that see none of them.
  let first_key = group.x * KEYS;
  let last_key = min(params.S, first_key + KEYS) - 1u;

  var k_row: array<vec4f, DH4>;
  var v_row: array<vec4f, DV4>;
  var grad_k: array<vec4f, DH4>;
  var grad_v: array<vec4f, DV4>;
  if (valid) {
    let k_at = (b * params.S + j) * params.k_stride + kvh * DH;
    let v_at = (b * params.S + j) * params.v_stride + kvh * DV;
    for (var d = 0u; d < DH; d++) { k_row[d / 4u][d % 4u] = k[k_at + d]; }
    for (var d = 0u; d < DV; d++) { v_row[d / 4u][d % 4u] = v[v_at + d]; }
  }

  for (var g = 0u; g < params.heads_per_kv; g++) {
    let h = kvh * params.heads_per_kv + g;
    let stream = b * params.H + h;
    for (var r0 = 0u; r0 < params.L; r0 += BR) {
      let r_last = min(params.L, r0 + BR) - 1u;
      // (visible_begin and visible_end grow with the row: the tile's first and last rows bound it.)
      if (visible_end(params.first_query + r_last) <= first_key
          || visible_begin(params.first_query + r0) > last_key) { continue; }
      for (var e = lane; e < BR * RS; e += KEYS) {
        let r = r0 + e / RS;
        var x = vec4f(0.0);
        if (r < params.L) { x = rows[(stream * params.L + r) * RS + e % RS]; }
        row_tile[e] = x;
      }
      workgroupBarrier();
      if (valid) {
        for (var t = 0u; t < BR; t++) {
          let row = r0 + t;
          if (row >= params.L) { break; }
          let i = params.first_query + row;
          let bias = score_bias(b, h, row, j, visible_begin(i), visible_end(i));
          if (is_blocked(bias)) { continue; }
          let at = t * RS;
          var dot4 = vec4f(0.0);
          for (var d = 0u; d < DH4; d++) { dot4 = fma(row_tile[at + d], k_row[d], dot4); }
          let dot = dot4.x + dot4.y + dot4.z + dot4.w;
          let stats = row_tile[at + DH4 + DV4];  // (lse, D)
          let p = exp(final_score(dot, h, i, j, bias) - stats.x);
          if (p == 0.0) { continue; }
          let z = dropout_factor(i, j, stream);
          var dp4 = vec4f(0.0);
          for (var d = 0u; d < DV4; d++) { dp4 = fma(row_tile[at + DH4 + d], v_row[d], dp4); }
          let ds = p * (z * (dp4.x + dp4.y + dp4.z + dp4.w) - stats.y) * softcap_slope(dot) * params.scale;
          for (var d = 0u; d < DV4; d++) { grad_v[d] = fma(vec4f(p * z), row_tile[at + DH4 + d], grad_v[d]); }
          for (var d = 0u; d < DH4; d++) { grad_k[d] = fma(vec4f(ds), row_tile[at + d], grad_k[d]); }
        }
      }
      workgroupBarrier();
    }
  }

  if (!valid) { return; }
  let k_at = (b * params.S + j) * params.k_stride + kvh * DH;
  let v_at = (b * params.S + j) * params.v_stride + kvh * DV;
  for (var d = 0u; d < DH; d++) { dk[k_at + d] = grad_k[d / 4u][d % 4u]; }
  for (var d = 0u; d < DV; d++) { dv[v_at + d] = grad_v[d / 4u][d % 4u]; }
}
