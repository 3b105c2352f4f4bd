// Widens the first `count` values of each batch row of an f16 KV cache (row b at element b *
// batch_stride) into float32 out [B, count], for the step path's plain kernels (steps.js; the
// fused attention kernels read the halves directly, half-reads.js). Dispatch: (x, y) with
// x * y * 64 >= count, z = B.

struct Params { count: u32, batch_stride: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read> cache: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

#include "half_bits.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let j = id.x + id.y * groups.x * 64u;
  if (j >= params.count) { return; }
  let e = id.z * params.batch_stride + j;
  out[id.z * params.count + j] = half_to_float((cache[e / 2u] >> ((e % 2u) * 16u)) & 0xffffu);
}
