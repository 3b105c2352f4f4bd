// The step path (steps.js): one step's values between the layout the API gives them in and the
// buffer the computation reads. Capture copies buffer -> step; a patch copies step -> buffer for
// the flagged heads only. Split layouts (q, k, v): the step is [B, heads, rows, D] (split_heads) and
// the buffer [B * buffer_rows, heads * D] (the projections' rows; a cache has more rows than it
// shows). Same layouts (pattern, z): index for index, the head every `head_inner` elements.

struct Params {
  count: u32, heads: u32, rows: u32, d: u32,
  buffer_rows: u32, split: u32, head_inner: u32, to_buffer: u32,
}

@group(0) @binding(0) var<storage, read_write> buffer: array<f32>;
@group(0) @binding(1) var<storage, read_write> step: array<f32>;
@group(0) @binding(2) var<storage, read> flags: array<u32>;  // [heads]: 1 where a patch replaces the head
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let e = id.x + id.y * groups.x * {{LANES}}u;
  if (e >= params.count) { return; }
  var at = e;
  var h = (e / params.head_inner) % params.heads;
  if (params.split != 0u) {
    let d = e % params.d;
    let r = (e / params.d) % params.rows;
    h = (e / (params.d * params.rows)) % params.heads;
    let b = e / (params.d * params.rows * params.heads);
    at = (b * params.buffer_rows + r) * params.heads * params.d + h * params.d + d;
  }
  if (params.to_buffer == 0u) {
    step[e] = buffer[at];
  } else if (flags[h] != 0u) {
    buffer[at] = step[e];
  }
}
