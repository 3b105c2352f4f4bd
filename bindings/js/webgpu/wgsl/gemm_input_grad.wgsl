// The projections' input gradient: dx[M, K] = dy[M, N] · w[N, K] (y = x wᵀ + b backward), or
// dx += that when `accumulate` (self-attention's one input used three times). An invocation
// computes a 4 x 4 block of dx from 4 rows of dy and 4 rows of w per step of 4 along N (8 loads
// of T per 64 multiply-adds, as gemm.wgsl); a workgroup of 8 x 8 covers 32 x 32, no workgroup
// memory. Template: T, V, PICK (gemm_grad_reads.wgsl). Dispatch: (ceil(K / 32), ceil(M / 32)).

struct Dims { M: u32, N: u32, K: u32, accumulate: u32 }

@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> w: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

#include "gemm_grad_reads.wgsl"

// dy[row, col0 .. col0+3], zeros past N.
fn load_dy(row: u32, col0: u32) -> vec4f {
  var out = vec4f(0.0);
  for (var t = 0u; t < 4u; t += V) {
    if (col0 + t < dims.N) { put_t(&out, t, dy[(row * dims.N + col0 + t) / V]); }
  }
  return out;
}

// w[n, col0 .. col0+3], columns past K read the last one (their results are not stored).
fn load_w(n: u32, col0: u32) -> vec4f {
  var out = vec4f(0.0);
  for (var t = 0u; t < 4u; t += V) { put_t(&out, t, w[(n * dims.K + min(col0 + t, dims.K - 1u)) / V]); }
  return out;
}

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let row0 = id.y * 4u;
  let col0 = id.x * 4u;
  if (row0 >= dims.M || col0 >= dims.K) { return; }
  var acc: array<vec4f, 4>;
  for (var n0 = 0u; n0 < dims.N; n0 += 4u) {
    // (Rows of w past N meet zeros of dy.)
    let b0 = load_w(n0, col0);
    let b1 = load_w(min(n0 + 1u, dims.N - 1u), col0);
    let b2 = load_w(min(n0 + 2u, dims.N - 1u), col0);
    let b3 = load_w(min(n0 + 3u, dims.N - 1u), col0);
    for (var r = 0u; r < 4u; r++) {
      let a = load_dy(min(row0 + r, dims.M - 1u), n0);
      acc[r] = fma(vec4f(a.x), b0, fma(vec4f(a.y), b1, fma(vec4f(a.z), b2, fma(vec4f(a.w), b3, acc[r]))));
    }
  }
  for (var r = 0u; r < 4u; r++) {
    let row = row0 + r;
    if (row >= dims.M) { break; }
    for (var c = 0u; c < 4u; c++) {
      let col = col0 + c;
      if (col >= dims.K) { break; }
      var value = acc[r][c];
      if (dims.accumulate != 0u) { value += dx[row * dims.K + col]; }
      dx[row * dims.K + col] = value;
    }
  }
}
