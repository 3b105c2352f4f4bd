// Rotary position embedding in place on projected rows (src/mha/layer/rotary.hpp states the math):
// pair t of each head is rotated by the angle whose cos and sin the host computed in float64 for
// the row's position (table [rows, half, 2]), so positions far from 0 rotate as exactly as the CPU's.
// Dispatch: flat (flat_main.wgsl) over rows * heads * half.

struct Params { rows: u32, row_stride: u32, heads: u32, head_dim: u32, half: u32, interleaved: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

#include "flat_main.wgsl"

// Pair t of head h of row r, n = (r * heads + h) * half + t.
fn element(n: u32, _z: u32) {
  let t = n % params.half;
  let h = (n / params.half) % params.heads;
  let r = n / (params.half * params.heads);
  if (r >= params.rows) { return; }
  var a_index = t;
  var b_index = t + params.half;
  if (params.interleaved != 0u) {
    a_index = 2u * t;
    b_index = 2u * t + 1u;
  }
  let base = r * params.row_stride + h * params.head_dim;
  let c = table[(r * params.half + t) * 2u];
  let s = table[(r * params.half + t) * 2u + 1u];
  let xa = x[base + a_index];
  let xb = x[base + b_index];
  x[base + a_index] = xa * c - xb * s;
  x[base + b_index] = xb * c + xa * s;
}
