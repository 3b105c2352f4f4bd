// The step path's result (steps.js): each head's share of the output projection, without its
// bias: result[row, h, o] = sum over d of out_proj.weight[o, h * Dv + d] * z[row, h * Dv + d],
// in order of d, as the CPU's step path. One invocation per element of [B * L, H, outputDim].

struct Params { rows: u32, heads: u32, dv: u32, out_dim: u32 }

@group(0) @binding(0) var<storage, read> z: array<f32>;       // [B * L, H * Dv]
@group(0) @binding(1) var<storage, read> w: array<f32>;       // [outputDim, H * Dv], float32
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read_write> result: array<f32>;  // [B * L, H, outputDim]

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let e = id.x + id.y * groups.x * {{LANES}}u;
  if (e >= params.rows * params.heads * params.out_dim) { return; }
  let o = e % params.out_dim;
  let h = (e / params.out_dim) % params.heads;
  let row = e / (params.out_dim * params.heads);
  let attended = params.heads * params.dv;
  var acc = 0.0;
  for (var d = 0u; d < params.dv; d++) {
    acc += w[o * attended + h * params.dv + d] * z[row * attended + h * params.dv + d];
  }
  result[e] = acc;
}
