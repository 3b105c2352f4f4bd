// y[M, N] = x[M, K] · w[N, K]ᵀ + bias[N]: the projections (nn.Linear's layout, weights row-major
// [out, in]). A workgroup of 8 x 8 invocations computes a 32 x 32 tile of y, each invocation a
// 4 x 4 block, stepping over K in slices of 16 held in workgroup memory (4 KiB).

struct Dims { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;

const TILE: u32 = 32u;
const SLICE: u32 = 16u;
var<workgroup> x_tile: array<f32, 512>;  // TILE rows of x, SLICE columns
var<workgroup> w_tile: array<f32, 512>;  // TILE rows of w, SLICE columns

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u,
        @builtin(local_invocation_index) index: u32) {
  let row0 = group.y * TILE;
  let col0 = group.x * TILE;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < dims.K; k0 += SLICE) {
    for (var e = index; e < TILE * SLICE; e += 64u) {
      let r = e / SLICE;
      let k = k0 + e % SLICE;
      var xv = 0.0;
      if (row0 + r < dims.M && k < dims.K) { xv = x[(row0 + r) * dims.K + k]; }
      x_tile[e] = xv;
      var wv = 0.0;
      if (col0 + r < dims.N && k < dims.K) { wv = w[(col0 + r) * dims.K + k]; }
      w_tile[e] = wv;
    }
    workgroupBarrier();
    for (var k = 0u; k < SLICE; k++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = x_tile[(local.y * 4u + i) * SLICE + k];
        b[i] = w_tile[(local.x * 4u + i) * SLICE + k];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i * 4u + j] = fma(a[i], b[j], acc[i * 4u + j]); }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + local.y * 4u + i;
    for (var j = 0u; j < 4u; j++) {
      let col = col0 + local.x * 4u + j;
      if (row < dims.M && col < dims.N) {
        var v = acc[i * 4u + j];
        if (dims.has_bias != 0u) { v += bias[col]; }
        y[row * dims.N + col] = v;
      }
    }
  }
}
