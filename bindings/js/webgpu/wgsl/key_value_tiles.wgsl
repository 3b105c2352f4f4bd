// The key / value tiles of the attention kernels that give each invocation one query row
// (flash_attention.wgsl, attention_backward_dq.wgsl): BR = 64 rows per workgroup, which walk the
// keys BC at a time, each tile of k and v loaded once into workgroup memory as vec4s (zeros past
// S and past a head's size). The including kernel defines key_at(e) and value_at(e) (how its k
// and v are read) and includes score_epilogue.wgsl (params, visible_begin / visible_end).
// Template: DH, DV, BC (keys per tile, sized to fit the workgroup memory).

#include "head_sizes.wgsl"

const BR: u32 = {{LANES}}u;  // one query row per invocation
const BC: u32 = {{BC}}u;

var<workgroup> k_tile: array<vec4f, BC * DH4>;
var<workgroup> v_tile: array<vec4f, BC * DV4>;

// Four features of a row from `at`, zero past the head's size (which need not be a multiple of 4).
fn load_k(at: u32, d: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var t = 0u; t < 4u; t++) { if (d + t < DH) { x[t] = key_at(at + d + t); } }
  return x;
}
fn load_v(at: u32, d: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var t = 0u; t < 4u; t++) { if (d + t < DV) { x[t] = value_at(at + d + t); } }
  return x;
}

// Loads keys and values t0 .. t0 + BC of kv head kvh into k_tile and v_tile, the workgroup's
// invocations (lane: 0 .. BR) sharing the work; kv_row0: the batch row's first row in k and v.
// Uniform control flow: every invocation calls it (the caller puts the barrier after it).
fn load_key_value_tiles(kv_row0: u32, kvh: u32, t0: u32, lane: u32) {
  for (var e = lane; e < BC * DH4; e += BR) {
    let j = t0 + e / DH4;
    var x = vec4f(0.0);
    if (j < params.S) { x = load_k((kv_row0 + j) * params.k_stride + kvh * DH, 4u * (e % DH4)); }
    k_tile[e] = x;
  }
  for (var e = lane; e < BC * DV4; e += BR) {
    let j = t0 + e / DV4;
    var x = vec4f(0.0);
    if (j < params.S) { x = load_v((kv_row0 + j) * params.v_stride + kvh * DV, 4u * (e % DV4)); }
    v_tile[e] = x;
  }
}

// The keys [x, y) that some row of workgroup `group_x` may see, x rounded down to a tile: the
// range of tiles the workgroup walks (uniform: from its first and last rows).
fn workgroup_key_tiles(group_x: u32) -> vec2u {
  let first_row = params.first_query + group_x * BR;
  let last_row = params.first_query + min(params.L, group_x * BR + BR) - 1u;
  return vec2u(visible_begin(first_row) / BC * BC, visible_end(last_row));
}
