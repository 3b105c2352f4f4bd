// y[M, N] = x[M, K] · w[N, K]ᵀ + bias[N]: the projections (nn.Linear's layout: both operands are
// row-major along K, so each output is a dot product of two contiguous rows). An invocation
// computes a 4 x 4 block of y from 4 rows of x and 4 of w, read in steps of V floats (V = 4:
// vec4 loads, when K is a multiple of 4; else 1); a workgroup of 8 x 8 covers 32 x 32. No
// workgroup memory and no barriers: software adapters (SwiftShader) pay dearly for barriers,
// and the rows' reuse is served by the caches. Template: T (f32 or vec4<f32>), V (1 or 4).
// Dispatch: (ceil(N / 32), ceil(M / 32)).

#include "gemm_operands.wgsl"

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let row0 = id.y * 4u;
  let col0 = id.x * 4u;
  if (row0 >= dims.M || col0 >= dims.N) { return; }
  let steps = dims.K / V;
  // Rows past the end read the last row (their results are not stored).
  let x0 = min(row0, dims.M - 1u) * steps;
  let x1 = min(row0 + 1u, dims.M - 1u) * steps;
  let x2 = min(row0 + 2u, dims.M - 1u) * steps;
  let x3 = min(row0 + 3u, dims.M - 1u) * steps;
  let w0 = min(col0, dims.N - 1u) * steps;
  let w1 = min(col0 + 1u, dims.N - 1u) * steps;
  let w2 = min(col0 + 2u, dims.N - 1u) * steps;
  let w3 = min(col0 + 3u, dims.N - 1u) * steps;
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var k = 0u; k < steps; k++) {
    let b0 = w[w0 + k];
    let b1 = w[w1 + k];
    let b2 = w[w2 + k];
    let b3 = w[w3 + k];
    acc0 += row4(x[x0 + k], b0, b1, b2, b3);
    acc1 += row4(x[x1 + k], b0, b1, b2, b3);
    acc2 += row4(x[x2 + k], b0, b1, b2, b3);
    acc3 += row4(x[x3 + k], b0, b1, b2, b3);
  }
  store(row0, col0, acc0);
  store(row0 + 1u, col0, acc1);
  store(row0 + 2u, col0, acc2);
  store(row0 + 3u, col0, acc3);
}
