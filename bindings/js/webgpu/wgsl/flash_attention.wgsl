// Prefill attention as FlashAttention-2: one query row per invocation, 64 rows per workgroup,
// keys and values in tiles of BC rows in workgroup memory, an online softmax (running max and
// sum, the accumulator rescaled once per tile), so no L x S buffer exists. With write_lse the
// row's log-sum-exp is kept for attention_weights.wgsl; training applies dropout.wgsl to the
// probabilities (after the denominator, as the CPU). Template: DH / DV (the head sizes of
// q.k and of v), BC (keys per tile, sized to fit the workgroup memory).
// Dispatch: (ceil(L / 64), H, B). Head h reads key/value head h / heads_per_kv (GQA / MQA).

#include "score_epilogue.wgsl"
#include "dropout.wgsl"

const BR: u32 = 64u;
const DH: u32 = {{DH}}u;
const DV: u32 = {{DV}}u;
const BC: u32 = {{BC}}u;

@group(0) @binding(0) var<storage, read> q: array<f32>;   // [B*L, q_stride], head h at h*DH
@group(0) @binding(1) var<storage, read> k: array<f32>;   // [B*S, k_stride], kv head at kvh*DH
@group(0) @binding(2) var<storage, read> v: array<f32>;   // [B*S, v_stride], kv head at kvh*DV
@group(0) @binding(7) var<storage, read_write> o: array<f32>;    // [B*L, o_stride], head h at h*DV
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;  // [B, H, L] when params.write_lse

var<workgroup> k_tile: array<f32, BC * DH>;
var<workgroup> v_tile: array<f32, BC * DV>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_index) lane: u32) {
  let b = group.z;
  let h = group.y;
  let kvh = h / params.heads_per_kv;
  let row = group.x * BR + lane;
  let valid = row < params.L;
  let i = params.first_query + row;

  // The key range any row of this workgroup may see (uniform: from the first and last rows).
  let first_row = params.first_query + group.x * BR;
  let last_row = params.first_query + min(params.L, group.x * BR + BR) - 1u;
  let tiles_begin = visible_begin(first_row) / BC * BC;
  let tiles_end = visible_end(last_row);
  let begin = visible_begin(i);
  let end = visible_end(i);

  var q_row: array<f32, DH>;
  var acc: array<f32, DV>;
  if (valid) {
    for (var d = 0u; d < DH; d++) { q_row[d] = q[(b * params.L + row) * params.q_stride + h * DH + d]; }
  }
  // Online softmax state: the running max and sum (a sink logit starts them), any key seen.
  var m = -3.0e38;
  var l = 0.0;
  if (params.has_sinks != 0u) {
    m = head_params[h];
    l = 1.0;
  }
  var any_key = false;

  for (var t0 = tiles_begin; t0 < tiles_end; t0 += BC) {
    for (var e = lane; e < BC * DH; e += BR) {
      let j = t0 + e / DH;
      var x = 0.0;
      if (j < params.S) { x = k[(b * params.S + j) * params.k_stride + kvh * DH + e % DH]; }
      k_tile[e] = x;
    }
    for (var e = lane; e < BC * DV; e += BR) {
      let j = t0 + e / DV;
      var x = 0.0;
      if (j < params.S) { x = v[(b * params.S + j) * params.v_stride + kvh * DV + e % DV]; }
      v_tile[e] = x;
    }
    workgroupBarrier();
    if (valid) {
      var scores: array<f32, BC>;
      var seen = 0u;  // bit c: key t0 + c is visible
      var tile_max = m;
      for (var c = 0u; c < BC; c++) {
        let j = t0 + c;
        if (j >= params.S) { break; }
        let bias = score_bias(b, h, row, j, begin, end);
        if (is_blocked(bias)) { continue; }
        var dot = 0.0;
        for (var d = 0u; d < DH; d++) { dot += q_row[d] * k_tile[c * DH + d]; }
        let s = final_score(dot, h, i, j, bias);
        scores[c] = s;
        seen |= 1u << c;
        tile_max = max(tile_max, s);
      }
      if (seen != 0u) {
        any_key = true;
        let correction = exp(m - tile_max);
        l *= correction;
        for (var d = 0u; d < DV; d++) { acc[d] *= correction; }
        for (var c = 0u; c < BC; c++) {
          if ((seen & (1u << c)) == 0u) { continue; }
          let p = exp(scores[c] - tile_max);
          l += p;  // (the denominator before dropout; the values after it, as the CPU)
          let kept = p * dropout_factor(i, t0 + c, b * params.H + h);
          for (var d = 0u; d < DV; d++) { acc[d] = fma(kept, v_tile[c * DV + d], acc[d]); }
        }
        m = tile_max;
      }
    }
    workgroupBarrier();
  }

  if (!valid) { return; }
  let out = (b * params.L + row) * params.o_stride + h * DV;
  if (!any_key) {  // every key blocked: a zero result (and zero weights)
    for (var d = 0u; d < DV; d++) { o[out + d] = 0.0; }
  } else {
    let inv = 1.0 / l;
    for (var d = 0u; d < DV; d++) { o[out + d] = acc[d] * inv; }
  }
  if (params.write_lse != 0u) { lse[(b * params.H + h) * params.L + row] = m + log(l); }
}
