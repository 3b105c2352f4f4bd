// The projections' bias gradient: db[n] = the sum of column n of dy[M, N], over rows in order.
// Dispatch: (ceil(N / 64), 1, 1).

struct Dims { M: u32, N: u32, K: u32, pad0: u32 }

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> db: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let n = id.x;
  if (n >= dims.N) { return; }
  var total = 0.0;
  for (var m = 0u; m < dims.M; m++) { total += dy[m * dims.N + n]; }
  db[n] = total;
}
