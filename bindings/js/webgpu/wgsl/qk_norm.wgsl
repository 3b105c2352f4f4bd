// The q/k norms in place on projected rows (src/mha/kernels/qk_norm.hpp states the math): each
// row's `groups` groups of `size` features (its heads, or the whole row as one group) become
// x / sqrt(mean(x^2) + eps) * w, with w [size] (weight) shared by the groups.
// Dispatch: flat (flat_main.wgsl) over rows * groups, one invocation a group.

struct Params { rows: u32, row_stride: u32, groups: u32, size: u32, eps: f32, pad0: u32, pad1: u32, pad2: u32 }

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

#include "flat_main.wgsl"

// Group g of row r, n = r * groups + g.
fn element(n: u32, _z: u32) {
  let g = n % params.groups;
  let r = n / params.groups;
  if (r >= params.rows) { return; }
  let base = r * params.row_stride + g * params.size;
  var squares = 0.0;
  for (var i = 0u; i < params.size; i++) {
    let v = x[base + i];
    squares += v * v;
  }
  let inverse_rms = 1.0 / sqrt(squares / f32(params.size) + params.eps);
  for (var i = 0u; i < params.size; i++) {
    x[base + i] = x[base + i] * inverse_rms * weight[i];
  }
}
