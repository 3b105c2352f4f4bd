// append_keys.wgsl's backward (src/mha/layer/appended_keys.hpp's collect_appended_gradients): from the
// attention's gradient d [B, S, F] of the keys (or values) it read, the given keys' rows d_given
// [B, given, F] for the projection's backward (zeros when they were static_k / static_v: constants,
// constant = 1), and with add_bias_kv (bias_row = 1) d_bias [F], the bias row's gradient summed
// over the batch. One float of d_given per invocation; the first F also sum d_bias.
// Dispatch: flat (flat_main.wgsl) over B * given * F.

struct Params { batch: u32, given: u32, keys: u32, features: u32, constant: u32, bias_row: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<storage, read> d: array<f32>;
@group(0) @binding(1) var<storage, read_write> d_given: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_bias: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

#include "flat_main.wgsl"

// Float n = (b * given + s) * F + f of d_given.
fn element(n: u32, _z: u32) {
  let F = params.features;
  let f = n % F;
  let s = (n / F) % params.given;
  let b = n / (F * params.given);
  if (b >= params.batch) { return; }
  d_given[n] = select(d[(b * params.keys + s) * F + f], 0.0, params.constant != 0u);
  if (params.bias_row != 0u && n < F) {
    var sum = 0.0;
    for (var row = 0u; row < params.batch; row++) {
      sum += d[(row * params.keys + params.given) * F + f];
    }
    d_bias[f] = sum;
  }
}
