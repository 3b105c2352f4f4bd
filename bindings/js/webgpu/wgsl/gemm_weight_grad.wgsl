// The projections' weight gradient: dw[N, K] = dy[M, N]ᵀ · x[M, K] (y = x wᵀ + b backward),
// summed over the M rows. A term whose dy is 0 is left out, as the CPU leaves out rows of zero
// gradient: a masked key's input may hold NaN, which must not reach dw as 0 * NaN. An
// invocation computes a 4 x 4 block of dw from 4 columns of dy and 4 of x per row (2 loads of T
// per 16 multiply-adds); a workgroup of 8 x 8 covers 32 x 32. Template: T, V, PICK
// (gemm_grad_reads.wgsl).
// Dispatch: (ceil(K / 32), ceil(N / 32)).

struct Dims { M: u32, N: u32, K: u32, pad0: u32 }

@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dw: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

#include "gemm_grad_reads.wgsl"

// dy[m, col0 .. col0+3], columns past N read the last one (their results are not stored).
fn load_dy(m: u32, col0: u32) -> vec4f {
  var out = vec4f(0.0);
  for (var t = 0u; t < 4u; t += V) { put_t(&out, t, dy[(m * dims.N + min(col0 + t, dims.N - 1u)) / V]); }
  return out;
}

// x[m, col0 .. col0+3], as load_dy.
fn load_x(m: u32, col0: u32) -> vec4f {
  var out = vec4f(0.0);
  for (var t = 0u; t < 4u; t += V) { put_t(&out, t, x[(m * dims.K + min(col0 + t, dims.K - 1u)) / V]); }
  return out;
}

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let n0 = id.y * 4u;
  let k0 = id.x * 4u;
  if (n0 >= dims.N || k0 >= dims.K) { return; }
  var acc: array<vec4f, 4>;
  for (var m = 0u; m < dims.M; m++) {
    let g = load_dy(m, n0);
    if (all(g == vec4f(0.0))) { continue; }
    let a = load_x(m, k0);
    for (var r = 0u; r < 4u; r++) { acc[r] += select(g[r] * a, vec4f(0.0), g[r] == 0.0); }
  }
  for (var r = 0u; r < 4u; r++) {
    let n = n0 + r;
    if (n >= dims.N) { break; }
    for (var c = 0u; c < 4u; c++) {
      let k = k0 + c;
      if (k >= dims.K) { break; }
      dw[n * dims.K + k] = acc[r][c];
    }
  }
}
