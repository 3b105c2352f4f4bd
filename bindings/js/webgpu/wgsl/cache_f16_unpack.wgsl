// Widens the first `count` values of each batch row of an f16 KV cache (row b at element b *
// batch_stride) into float32 out [B, count], for the step path's plain kernels (steps.js; the
// fused attention kernels read the halves directly, half-reads.js). Dispatch: flat
// (flat_main.wgsl) over count, z = B.

struct Params { count: u32, batch_stride: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read> cache: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

#include "half_bits.wgsl"

#include "flat_main.wgsl"

// Value j of batch row b.
fn element(j: u32, b: u32) {
  if (j >= params.count) { return; }
  let e = b * params.batch_stride + j;
  out[b * params.count + j] = half_to_float((cache[e / 2u] >> ((e % 2u) * 16u)) & 0xffffu);
}
