// The entry point of the element-wise kernels (output_gate.wgsl, output_gate_backward.wgsl,
// cache_f16_unpack.wgsl, swap_leading_axes.wgsl, append_keys.wgsl, appended_keys_grad.wgsl): one invocation per element i < params.count, 64 per workgroup, the
// workgroups dispatched flat (x up to the device's limit, the rest over y). z: the dispatch's
// z (cache_f16_unpack's batch row; 0 for the others). The including kernel defines params (with
// count) and element(i, z).

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = id.x + id.y * groups.x * 64u;
  if (i < params.count) { element(i, id.z); }
}
