// The operands of the projections' GEMM kernels (gemm.wgsl, gemm_tiled.wgsl):
// y[M, N] = x[M, K] · w[N, K]ᵀ + bias[N] (when has_bias), x and w read as T (vec4<f32> when K is a
// multiple of 4, V = 4; else f32, V = 1), dot_t the dot product of two Ts, row4, and store
// (gemm_store.wgsl).
// Template: T, V, DOT.

struct Dims { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<storage, read> x: array<{{T}}>;
@group(0) @binding(1) var<storage, read> w: array<{{T}}>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;

const V: u32 = {{V}}u;

fn dot_t(a: {{T}}, b: {{T}}) -> f32 {
  return {{DOT}};
}

// One T of a row of x against the same T of 4 rows of w: 4 outputs' next terms.
fn row4(a: {{T}}, b0: {{T}}, b1: {{T}}, b2: {{T}}, b3: {{T}}) -> vec4f {
  return vec4f(dot_t(a, b0), dot_t(a, b1), dot_t(a, b2), dot_t(a, b3));
}

#include "gemm_store.wgsl"
