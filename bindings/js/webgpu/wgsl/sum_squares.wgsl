// The sum of squares of one tensor (for a global gradient norm): one workgroup strides over x,
// then a tree reduction in workgroup memory; the sum lands in out[slot].
// Dispatch: (1, 1, 1).

struct Dims { n: u32, slot: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;

var<workgroup> partial: array<f32, {{LANES}}>;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(local_invocation_index) lane: u32) {
  var total = 0.0;
  for (var i = lane; i < dims.n; i += {{LANES}}u) { total += x[i] * x[i]; }
  partial[lane] = total;
  workgroupBarrier();
  for (var width = {{LANES}}u / 2u; width > 0u; width >>= 1u) {
    if (lane < width) { partial[lane] += partial[lane + width]; }
    workgroupBarrier();
  }
  if (lane == 0u) { out[dims.slot] = partial[0]; }
}
