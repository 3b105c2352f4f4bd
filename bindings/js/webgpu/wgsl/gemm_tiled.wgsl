// y[M, N] = x[M, K] · w[N, K]ᵀ + bias[N] (as gemm.wgsl) for GPUs: a workgroup of 8 x 8
// invocations computes a 32 x 32 tile of y, each invocation a 4 x 4 block held in registers; the
// tile's 32 rows of x and 32 of w go through workgroup memory KT elements of K at a time (one
// load of each from global memory per workgroup, each read 8 times from workgroup memory), as
// tfjs-backend-webgpu's packed matmul does. T is vec4<f32> (V = 4, K a multiple of 4) or f32.
// Each output sums dot(x[k..k+V], w[k..k+V]) over k in order, as gemm.wgsl does: the same
// float32 arithmetic. Past the edges (M, N, K) the tiles hold zeros. Workgroup memory:
// 2 x 32 x KT x 16 bytes = 8 KiB with vec4s. Template: T, V, DOT, ZERO.
// Dispatch: (ceil(N / 32), ceil(M / 32)).

#include "gemm_operands.wgsl"

const TILE: u32 = {{TILE}}u;  // rows of x and of w per workgroup
const KT: u32 = 8u;     // elements of T per row per step: 32 floats with vec4s

var<workgroup> x_tile: array<array<{{T}}, KT>, TILE>;
var<workgroup> w_tile: array<array<{{T}}, KT>, TILE>;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let steps = dims.K / V;
  let tile_row0 = group.y * TILE;
  let tile_col0 = group.x * TILE;
  var acc: array<vec4f, 4>;  // acc[r][c]: y[row0 + r, col0 + c]
  for (var k0 = 0u; k0 < steps; k0 += KT) {
    // 64 invocations load the 32 x KT elements of each tile, 4 each (zeros past an edge).
    for (var i = 0u; i < 4u; i++) {
      let at = lane + i * {{LANES}}u;
      let r = at / KT;
      let kk = at % KT;
      let k = k0 + kk;
      var xv = {{ZERO}};
      var wv = {{ZERO}};
      if (k < steps) {
        if (tile_row0 + r < dims.M) { xv = x[(tile_row0 + r) * steps + k]; }
        if (tile_col0 + r < dims.N) { wv = w[(tile_col0 + r) * steps + k]; }
      }
      x_tile[r][kk] = xv;
      w_tile[r][kk] = wv;
    }
    workgroupBarrier();
    let n = min(KT, steps - k0);  // (the last step's zeros are left out: the sums stay gemm.wgsl's)
    for (var kk = 0u; kk < n; kk++) {
      let b0 = w_tile[local.x * 4u][kk];
      let b1 = w_tile[local.x * 4u + 1u][kk];
      let b2 = w_tile[local.x * 4u + 2u][kk];
      let b3 = w_tile[local.x * 4u + 3u][kk];
      for (var r = 0u; r < 4u; r++) {
        let a = x_tile[local.y * 4u + r][kk];
        acc[r] += row4(a, b0, b1, b2, b3);
      }
    }
    workgroupBarrier();
  }
  let row0 = tile_row0 + local.y * 4u;
  let col0 = tile_col0 + local.x * 4u;
  for (var r = 0u; r < 4u; r++) { store(row0 + r, col0, acc[r]); }
}
