// The step path's z (steps.js): each head's weighted sum of v, one invocation per (d, query row,
// b * H + h): z[b, row, h, d] = sum over keys j of pattern * v (the pattern after dropout when
// training), in key order, zeros skipped, as the CPU's step path. z's layout [B, L, H, Dv] is the
// rows the output projection reads. Template: DV. Dispatch: (ceil(Dv / 64), L, B * H).

#include "score_epilogue.wgsl"
#include "dropout.wgsl"

const DV: u32 = {{DV}}u;

@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(7) var<storage, read_write> z: array<f32>;   // [B * L, H * Dv]
@group(0) @binding(8) var<storage, read> pattern: array<f32>;   // [B, H, L, S]

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let d = id.x;
  let row = id.y;
  if (d >= DV) { return; }
  let b = id.z / params.H;
  let h = id.z % params.H;
  let i = params.first_query + row;
  let p_at = (id.z * params.L + row) * params.S;
  let v_at = (h / params.heads_per_kv) * DV + d;
  var acc = 0.0;
  for (var j = 0u; j < params.S; j++) {
    let p = pattern[p_at + j] * dropout_factor(i, j, id.z);
    if (p == 0.0) { continue; }
    acc += p * v[(b * params.kv_rows + j) * params.v_stride + v_at];
  }
  z[(b * params.L + row) * params.o_stride + h * DV + d] = acc;
}
