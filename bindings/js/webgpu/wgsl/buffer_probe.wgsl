// Does nothing useful: dispatched once on a caller's GPUBuffer so that the device validates it
// (a buffer of another device, or a destroyed one, fails). Needs only the STORAGE usage every
// input already must have (a copy would also need COPY_SRC). See tensors.js checkUsableOn().
@group(0) @binding(0) var<storage, read> probed: array<u32>;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main() {
  _ = probed[0];
}
