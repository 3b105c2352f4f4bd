// The GEMM kernels' store of a 4-wide row piece of y (gemm, gemm_tiled, gemm_quantized_body):
// values[c] (+ bias[col] when dims.has_bias) to y[row, col0 + c], skipping rows and columns past
// the end. Needs the including kernel's dims (M, N, has_bias), bias and y.

fn store(row: u32, col0: u32, values: vec4f) {
  if (row >= dims.M) { return; }
  for (var c = 0u; c < 4u; c++) {
    let col = col0 + c;
    if (col < dims.N) {
      var v = values[c];
      if (dims.has_bias != 0u) { v += bias[col]; }
      y[row * dims.N + col] = v;
    }
  }
}
