// Decoding over a long KV cache, part 2 of flash-decoding: one invocation per (batch row, head,
// query row, value feature) combines the chunks' partial results (decode_split.wgsl): the
// overall max M (a sink logit joins it), the sum of each chunk's sum times exp(its max - M), and
// the values likewise; a row that saw no key gets zeros, as the other kernels give.
// Template: DV, CHUNKS (the chunks decode_split.wgsl wrote). Dispatch: (ceil(DV / 64), H, B * L).

#include "score_epilogue.wgsl"

const DV: u32 = {{DV}}u;
const CHUNKS: u32 = {{CHUNKS}}u;

@group(0) @binding(7) var<storage, read_write> o: array<f32>;          // [B*L, o_stride], head h at h*DV
@group(0) @binding(8) var<storage, read> partials: array<f32>;         // [B, H, L, CHUNKS, DV + 2]

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let d = id.x;
  if (d >= DV) { return; }
  let h = id.y;
  let b = id.z / params.L;
  let row = id.z % params.L;
  let first = ((b * params.H + h) * params.L + row) * CHUNKS * (DV + 2u);
  var m = -3.0e38;
  var any_key = false;
  if (params.has_sinks != 0u) { m = head_params[h]; }
  for (var c = 0u; c < CHUNKS; c++) {
    let at = first + c * (DV + 2u);
    if (partials[at + 1u] > 0.0) {
      any_key = true;
      m = max(m, partials[at]);
    }
  }
  var l = 0.0;
  if (params.has_sinks != 0u) { l = exp(head_params[h] - m); }
  var acc = 0.0;
  for (var c = 0u; c < CHUNKS; c++) {
    let at = first + c * (DV + 2u);
    if (partials[at + 1u] > 0.0) {
      let scale = exp(partials[at] - m);
      l += partials[at + 1u] * scale;
      acc += partials[at + 2u + d] * scale;
    }
  }
  var result = 0.0;
  if (any_key) { result = acc / l; }
  o[(b * params.L + row) * params.o_stride + h * DV + d] = result;
}
