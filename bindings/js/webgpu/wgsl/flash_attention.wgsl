// Prefill attention as FlashAttention-2: one query row per invocation, 64 rows per workgroup,
// keys and values in tiles of BC rows in workgroup memory (as vec4s), an online softmax (running max and
// sum, the accumulator rescaled once per tile), so no L x S buffer exists. With write_lse the
// row's log-sum-exp is kept for attention_weights.wgsl; training applies dropout.wgsl to the
// probabilities (after the denominator, as the CPU). Template: DH / DV (the head sizes of
// q.k and of v), BC (keys per tile; key_value_tiles.wgsl), and how k and v are read
// (ENABLE_F16, K_T, V_T, K_AT, V_AT: float32, or an f16 cache's halves; half-reads.js).
// Dispatch: (ceil(L / 64), H, B). Head h reads key/value head h / heads_per_kv (GQA / MQA).
{{ENABLE_F16}}

#include "score_epilogue.wgsl"
#include "dropout.wgsl"
#include "key_value_tiles.wgsl"

@group(0) @binding(0) var<storage, read> q: array<f32>;   // [B*L, q_stride], head h at h*DH
@group(0) @binding(1) var<storage, read> k: array<{{K_T}}>;   // [B*S, k_stride], kv head at kvh*DH
@group(0) @binding(2) var<storage, read> v: array<{{V_T}}>;   // [B*S, v_stride], kv head at kvh*DV
@group(0) @binding(7) var<storage, read_write> o: array<f32>;    // [B*L, o_stride], head h at h*DV
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;  // [B, H, L] when params.write_lse

// k and v hold float32, or an f16 cache's halves: read through key_at / value_at (half-reads.js).
fn key_at(e: u32) -> f32 { return {{K_AT}}; }
fn value_at(e: u32) -> f32 { return {{V_AT}}; }

// Four features of q's row from `at`, zero past the head's size (as key_value_tiles.wgsl's load_k).
fn load_q(at: u32, d: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var t = 0u; t < 4u; t++) { if (d + t < DH) { x[t] = q[at + d + t]; } }
  return x;
}

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_index) lane: u32) {
  let b = group.z;
  let h = group.y;
  let kvh = h / params.heads_per_kv;
  let row = group.x * BR + lane;
  let valid = row < params.L;
  let i = params.first_query + row;

  let tiles = workgroup_key_tiles(group.x);
  let begin = visible_begin(i);
  let end = visible_end(i);

  var q_row: array<vec4f, DH4>;
  var acc: array<vec4f, DV4>;
  if (valid) {
    let at = (b * params.L + row) * params.q_stride + h * DH;
    for (var d = 0u; d < DH4; d++) { q_row[d] = load_q(at, 4u * d); }
  }
  // Online softmax state: the running max and sum (a sink logit starts them), any key seen.
  var m = -3.0e38;
  var l = 0.0;
  if (params.has_sinks != 0u) {
    m = head_params[h];
    l = 1.0;
  }
  var any_key = false;

  for (var t0 = tiles.x; t0 < tiles.y; t0 += BC) {
    load_key_value_tiles(b * params.kv_rows, kvh, t0, lane);
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
        var dot4 = vec4f(0.0);
        for (var d = 0u; d < DH4; d++) { dot4 = fma(q_row[d], k_tile[c * DH4 + d], dot4); }
        let s = final_score(dot4.x + dot4.y + dot4.z + dot4.w, h, i, j, bias);
        scores[c] = s;
        seen |= 1u << c;
        tile_max = max(tile_max, s);
      }
      if (seen != 0u) {
        any_key = true;
        let correction = exp(m - tile_max);
        l *= correction;
        for (var d = 0u; d < DV4; d++) { acc[d] *= correction; }
        for (var c = 0u; c < BC; c++) {
          if ((seen & (1u << c)) == 0u) { continue; }
          let p = exp(scores[c] - tile_max);
          l += p;  // (the denominator before dropout; the values after it, as the CPU)
          let kept = p * dropout_factor(i, t0 + c, b * params.H + h);
          for (var d = 0u; d < DV4; d++) { acc[d] = fma(vec4f(kept), v_tile[c * DV4 + d], acc[d]); }
        }
        m = tile_max;
      }
    }
    workgroupBarrier();
  }

  if (!valid) { return; }
  let out = (b * params.L + row) * params.o_stride + h * DV;
  var inv = 0.0;  // every key blocked: a zero result (and zero weights)
  if (any_key) { inv = 1.0 / l; }
  for (var d = 0u; d < DV; d++) { o[out + d] = acc[d / 4u][d % 4u] * inv; }
  if (params.write_lse != 0u) { lse[(b * params.H + h) * params.L + row] = m + log(l); }
}
