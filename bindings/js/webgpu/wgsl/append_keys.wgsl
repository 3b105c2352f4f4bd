// The keys (or values) attention reads when they do not all come from the projection, as
// src/mha/layer/appended_keys.hpp builds them: out [B, S, F] (F = heads * head_size) holds each
// sequence's `given` keys, then (add_bias_kv) the learned row bias [F], then (add_zero_attn) a zero
// row. The given keys are the projection's rows [B, given, F], or PyTorch's static_k / static_v
// per-head rows [B * heads, given, head_size] (per_head = 1). One float per invocation.
// Dispatch: flat (flat_main.wgsl) over B * S * F.

struct Params { batch: u32, given: u32, keys: u32, heads: u32, head_size: u32, per_head: u32, bias_row: u32, pad: u32 }

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

#include "flat_main.wgsl"

// Float n = (b * S + s) * F + f of out.
fn element(n: u32, _z: u32) {
  let features = params.heads * params.head_size;
  let f = n % features;
  let s = (n / features) % params.keys;
  let b = n / (features * params.keys);
  if (b >= params.batch) { return; }
  var value = 0.0;
  if (s < params.given) {
    if (params.per_head != 0u) {
      let h = f / params.head_size;
      value = src[((b * params.heads + h) * params.given + s) * params.head_size + f % params.head_size];
    } else {
      value = src[(b * params.given + s) * features + f];
    }
  } else if (s == params.given && params.bias_row != 0u) {
    value = bias[f];
  }
  out[n] = value;
}
