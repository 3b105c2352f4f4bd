// The shared body of the quantized projections (gemm_int8, gemm_q4, gemm_f16): y[M, N] =
// x[M, K] · W[N, K]ᵀ + bias, W read through the kernel's weight(o, i) from its packed bytes (the
// canonical layouts of docs/quantized.md, uploaded as they are) and dequantized in the kernel:
// each weight is the float the CPU dequantizes to (one float32 product of the code and its
// scale, or a half's exact value), so the result is float32 math on the dequantized weights.
// An invocation computes a 4 x 4 block of y (4 weights dequantized per depth, 16 products); a
// workgroup of 8 x 8 covers 32 x 32. Dispatch: (ceil(N / 32), ceil(M / 32)).

struct Dims { M: u32, N: u32, K: u32, has_bias: u32, blocks: u32, has_zero_points: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> data: array<{{DATA_T}}>;  // u32 words (f16: or halves)
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;

#include "gemm_store.wgsl"

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let row0 = id.y * 4u;
  let col0 = id.x * 4u;
  if (row0 >= dims.M || col0 >= dims.N) { return; }
  let K = dims.K;
  // Rows and columns past the end read the last one (their results are not stored).
  let x0 = min(row0, dims.M - 1u) * K;
  let x1 = min(row0 + 1u, dims.M - 1u) * K;
  let x2 = min(row0 + 2u, dims.M - 1u) * K;
  let x3 = min(row0 + 3u, dims.M - 1u) * K;
  let o = vec4u(min(col0, dims.N - 1u), min(col0 + 1u, dims.N - 1u), min(col0 + 2u, dims.N - 1u), min(col0 + 3u, dims.N - 1u));
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var k = 0u; k < K; k++) {
    let w = vec4f(weight(o.x, k), weight(o.y, k), weight(o.z, k), weight(o.w, k));
    acc0 += x[x0 + k] * w;
    acc1 += x[x1 + k] * w;
    acc2 += x[x2 + k] * w;
    acc3 += x[x3 + k] * w;
  }
  store(row0, col0, acc0);
  store(row0 + 1u, col0, acc1);
  store(row0 + 2u, col0, acc2);
  store(row0 + 3u, col0, acc3);
}
