// The projections' input gradient: dx[M, K] = dy[M, N] · w[N, K] (y = x wᵀ + b backward), or
// dx += that when `accumulate` (self-attention's one input used three times). An invocation
// computes a 4 x 4 block of dx, a workgroup of 8 x 8 covers 32 x 32, no workgroup memory (as
// gemm.wgsl). Dispatch: (ceil(K / 32), ceil(M / 32)).

struct Dims { M: u32, N: u32, K: u32, accumulate: u32 }

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let row0 = id.y * 4u;
  let col0 = id.x * 4u;
  if (row0 >= dims.M || col0 >= dims.K) { return; }
  // Rows and columns past the end read the last one (their results are not stored).
  var rows: vec4u;
  var cols: vec4u;
  for (var t = 0u; t < 4u; t++) {
    rows[t] = min(row0 + t, dims.M - 1u) * dims.N;
    cols[t] = min(col0 + t, dims.K - 1u);
  }
  var acc: array<vec4f, 4>;
  for (var n = 0u; n < dims.N; n++) {
    let wn = n * dims.K;
    let b = vec4f(w[wn + cols.x], w[wn + cols.y], w[wn + cols.z], w[wn + cols.w]);
    for (var r = 0u; r < 4u; r++) { acc[r] = fma(vec4f(dy[rows[r] + n]), b, acc[r]); }
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
