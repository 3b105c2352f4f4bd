// PyTorch's sequence-first layout (config batchFirst: false): y [d1, d0, F] from x [d0, d1, F],
// one float per invocation. Run once on each input ([L, B, F] -> [B, L, F], the layout every other
// kernel reads) and once on the output (back), as src/mha/layer/sequence_first.hpp's swap_leading_axes.
// Dispatch: flat (flat_main.wgsl) over d0 * d1 * F.

struct Dims { d0: u32, d1: u32, features: u32, pad: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;

#include "flat_main.wgsl"

// Float n of y.
fn element(n: u32, _z: u32) {
  let f = n % dims.features;
  let row = n / dims.features;  // y's row: i1 * d0 + i0
  if (row >= dims.d0 * dims.d1) { return; }
  let i0 = row % dims.d0;
  let i1 = row / dims.d0;
  y[n] = x[(i0 * dims.d1 + i1) * dims.features + f];
}
