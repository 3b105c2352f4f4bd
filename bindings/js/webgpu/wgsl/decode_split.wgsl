// Decoding over a long KV cache, part 1 of flash-decoding: the keys are split into chunks of
// CHUNK, and a workgroup of 64 invocations takes one (chunk, head, query row), so a long cache
// uses the whole GPU even for one token. The chunk's scores (score_epilogue.wgsl) go to workgroup
// memory, their max and sum are reduced across the workgroup, then invocation d sums
// p_j v_j[d] over the chunk. It writes the chunk's max, sum and unnormalized values to
// `partials`; decode_reduce.wgsl combines the chunks. Template: DH, DV, CHUNK, and how k and v are read
// (ENABLE_F16, K_T, V_T, K_AT, V_AT: float32, or an f16 cache's halves read directly; half-reads.js).
// Dispatch: (chunks, H, B * L); partials [B, H, L, chunks, DV + 2].

{{ENABLE_F16}}
#include "score_epilogue.wgsl"

const DH: u32 = {{DH}}u;
const DV: u32 = {{DV}}u;
const CHUNK: u32 = {{CHUNK}}u;  // kernel-manifest.js' CHUNK: the plan counts the chunks with it
const LANES: u32 = {{LANES}}u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<{{K_T}}>;
@group(0) @binding(2) var<storage, read> v: array<{{V_T}}>;
@group(0) @binding(7) var<storage, read_write> partials: array<f32>;

// k and v hold float32, or an f16 cache's halves: read through key_at / value_at (half-reads.js).
fn key_at(e: u32) -> f32 { return {{K_AT}}; }
fn value_at(e: u32) -> f32 { return {{V_AT}}; }

var<workgroup> probabilities: array<f32, CHUNK>;  // exp(score - chunk max), 0 where blocked
var<workgroup> reduce: array<f32, LANES>;

// The workgroup's max (max: true) or sum of one value per invocation. Uniform control flow.
fn reduce_all(lane: u32, x: f32, max_not_sum: bool) -> f32 {
  reduce[lane] = x;
  workgroupBarrier();
  for (var half = LANES / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      let other = reduce[lane + half];
      if (max_not_sum) { reduce[lane] = max(reduce[lane], other); } else { reduce[lane] += other; }
    }
    workgroupBarrier();
  }
  let result = reduce[0];
  workgroupBarrier();
  return result;
}

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let chunk = group.x;
  let chunks = groups.x;
  let h = group.y;
  let b = group.z / params.L;
  let row = group.z % params.L;
  let kvh = h / params.heads_per_kv;
  let i = params.first_query + row;
  let begin = visible_begin(i);
  let end = visible_end(i);
  let q_at = (b * params.L + row) * params.q_stride + h * DH;

  // Scores of this invocation's keys in the chunk, and their max.
  var local_max = -3.0e38;
  var seen = 0u;  // bit c: key chunk * CHUNK + lane + c * LANES is visible
  for (var c = 0u; c < CHUNK / LANES; c++) {
    let at = lane + c * LANES;
    let j = chunk * CHUNK + at;
    var s = 0.0;
    if (j < params.S) {
      let bias = score_bias(b, h, row, j, begin, end);
      if (!is_blocked(bias)) {
        let k_at = (b * params.kv_rows + j) * params.k_stride + kvh * DH;
        var dot = 0.0;
        for (var d = 0u; d < DH; d++) { dot += q[q_at + d] * key_at(k_at + d); }
        s = final_score(dot, h, i, j, bias);
        seen |= 1u << c;
        local_max = max(local_max, s);
      }
    }
    probabilities[at] = s;
  }
  let chunk_max = reduce_all(lane, local_max, true);
  var local_sum = 0.0;
  for (var c = 0u; c < CHUNK / LANES; c++) {
    let at = lane + c * LANES;
    var p = 0.0;
    if ((seen & (1u << c)) != 0u) { p = exp(probabilities[at] - chunk_max); }
    probabilities[at] = p;
    local_sum += p;
  }
  let chunk_sum = reduce_all(lane, local_sum, false);  // (its barriers also publish `probabilities`)

  let out = (((b * params.H + h) * params.L + row) * chunks + chunk) * (DV + 2u);
  for (var d = lane; d < DV; d += LANES) {
    var acc = 0.0;
    for (var at = 0u; at < CHUNK; at++) {
      let j = chunk * CHUNK + at;
      let p = probabilities[at];
      if (p != 0.0) { acc = fma(p, value_at((b * params.kv_rows + j) * params.v_stride + kvh * DV + d), acc); }
    }
    partials[out + 2u + d] = acc;
  }
  if (lane == 0u) {
    partials[out] = chunk_max;
    partials[out + 1u] = chunk_sum;  // 0: no visible key in the chunk
  }
}
