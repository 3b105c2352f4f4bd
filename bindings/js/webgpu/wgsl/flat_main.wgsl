// The entry point of the element-wise kernels: 64 invocations per workgroup, the workgroups
// dispatched flat (x up to the device's limit, the rest over y: pipelines.js flatGroups), each
// invocation's flat index i handed to the including kernel's element(i, z), which leaves alone
// the indices past its end (the last workgroup's, and the fold's). z: the dispatch's z (a batch
// row for the cache kernels; 0 for the others).

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  element(id.x + id.y * groups.x * {{LANES}}u, id.z);
}
