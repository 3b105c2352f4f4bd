// The attention backward's first step: per query row of each head, what both gradient kernels
// read, packed as one row of vec4s (so each of them binds one buffer for it, within the default
// 8 storage buffers per stage): the row's q and dO (zero-padded to vec4s), then (lse, D, 0, 0)
// with D = dO . O (FlashAttention-2's rowsum(dO * O); O the forward's attended values, dropout
// included). Template: DH / DV (the head sizes of q.k and of v).
// Dispatch: (ceil(L / 64), H, B); row r = (b * H + h) * L + i of `rows`.

struct Dims { L: u32, H: u32, q_stride: u32, o_stride: u32 }

#include "packed_rows.wgsl"

@group(0) @binding(0) var<storage, read> q: array<f32>;      // [B*L, q_stride], head h at h*DH (after rotary)
@group(0) @binding(1) var<storage, read> o: array<f32>;      // [B*L, o_stride], head h at h*DV
@group(0) @binding(2) var<storage, read> d_o: array<f32>;    // dLoss/dO, as o
@group(0) @binding(3) var<storage, read> lse: array<f32>;    // [B, H, L]
@group(0) @binding(4) var<storage, read_write> rows: array<vec4f>;  // [B*H*L, RS]
@group(0) @binding(5) var<uniform> dims: Dims;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  let h = id.y;
  let b = id.z;
  if (i >= dims.L) { return; }
  let r = (b * dims.H + h) * dims.L + i;
  let q_at = (b * dims.L + i) * dims.q_stride + h * DH;
  let o_at = (b * dims.L + i) * dims.o_stride + h * DV;
  for (var d = 0u; d < DH4; d++) {
    var x = vec4f(0.0);
    for (var t = 0u; t < 4u; t++) { if (4u * d + t < DH) { x[t] = q[q_at + 4u * d + t]; } }
    rows[r * RS + d] = x;
  }
  var delta = 0.0;
  for (var d = 0u; d < DV4; d++) {
    var x = vec4f(0.0);
    for (var t = 0u; t < 4u; t++) {
      if (4u * d + t < DV) {
        x[t] = d_o[o_at + 4u * d + t];
        delta += x[t] * o[o_at + 4u * d + t];
      }
    }
    rows[r * RS + DH4 + d] = x;
  }
  rows[r * RS + DH4 + DV4] = vec4f(lse[r], delta, 0.0, 0.0);
}
