// The score step of every attention kernel, in one place (as src/mha/kernels/score_epilogue.hpp
// for the CPU kernels), in the order the CPU applies it:
//
//   s = scale * q.k  ->  softcap: c * tanh(s / c)  ->  + ALiBi: -slope * |i - j|
//     ->  + masks (key padding, attn_mask)  ->  keys outside the visible range blocked
//     ->  softmax, with an optional sink logit in the denominator (the kernels' business)
//
// i is the query's absolute position (first_query + row), j the key's. Masks arrive additive
// (a bool mask as 0 / -inf, converted on the host); a key is blocked when its bias is -inf.
// (Dropout, which acts on the probabilities, is in dropout.wgsl.)
// Included by the kernels that need it (flash_attention.wgsl, attention_weights.wgsl): they bind
// q at 0, k at 1 and the bindings below.

struct Params {
  L: u32, S: u32, H: u32, heads_per_kv: u32,
  q_stride: u32, k_stride: u32, v_stride: u32, o_stride: u32,
  scale: f32, softcap: f32, window: u32, causal: u32,
  first_query: u32, has_key_padding: u32, has_attn_mask: u32, attn_mask_per_head: u32,
  has_sinks: u32, has_alibi: u32, weights_factor: f32, average_heads: u32,
  write_lse: u32, seed_low: u32, seed_high: u32, dropout_threshold: u32,
  dropout_scale: f32, dropout_active: u32, weights_before_dropout: u32,
  kv_rows: u32,  // rows per batch row in the k and v buffers: S, or a KV cache's capacity
}

@group(0) @binding(3) var<storage, read> key_padding: array<f32>;   // [B, S], additive
@group(0) @binding(4) var<storage, read> attn_mask: array<f32>;     // [L, S] or [B*H, L, S], additive
@group(0) @binding(5) var<storage, read> head_params: array<f32>;   // [H] sinks, then [H] ALiBi slopes
@group(0) @binding(6) var<uniform> params: Params;

// -inf by its bits: WGSL lets a compiler assume no infinities in arithmetic, never in bits.
fn is_blocked(bias: f32) -> bool { return bitcast<u32>(bias) == 0xff800000u; }

// The keys [begin, end) that query position i may see: causal and sliding-window limits.
fn visible_begin(i: u32) -> u32 {
  if (params.window > 0u && i + 1u > params.window) { return min(params.S, i + 1u - params.window); }
  return 0u;
}
fn visible_end(i: u32) -> u32 {
  if (params.causal != 0u) { return min(params.S, i + 1u); }
  if (params.window > 0u) { return min(params.S, i + params.window); }
  return params.S;
}

// The masks' sum for query row `row` (position first_query + row) of head h of batch row b and
// key j; -inf (is_blocked) when the key may not be seen.
fn score_bias(b: u32, h: u32, row: u32, j: u32, begin: u32, end: u32) -> f32 {
  var bias = 0.0;
  if (j < begin || j >= end) { return bitcast<f32>(0xff800000u | (params.S & 0u)); }
  if (params.has_key_padding != 0u) { bias += key_padding[b * params.S + j]; }
  if (params.has_attn_mask != 0u) {
    var m = 0u;
    if (params.attn_mask_per_head != 0u) { m = (b * params.H + h) * params.L * params.S; }
    bias += attn_mask[m + row * params.S + j];
  }
  return bias;
}

// softcap (c * tanh(s / c)) of a scaled score, or the score when there is none.
fn softcapped(s: f32) -> f32 {
  if (params.softcap <= 0.0) { return s; }
  // tanh of a clamped argument: tanh(+-15) is +-1 in f32, and no overflow reaches exp inside tanh.
  return params.softcap * tanh(clamp(s / params.softcap, -15.0, 15.0));
}

// The final score of a visible key from its dot product: scale, softcap, ALiBi, then the masks.
fn final_score(dot: f32, h: u32, i: u32, j: u32, bias: f32) -> f32 {
  var s = softcapped(dot * params.scale);
  if (params.has_alibi != 0u) {
    let distance = f32(max(i, j) - min(i, j));
    s -= head_params[params.H + h] * distance;
  }
  return s + bias;
}

// The backward's factor d(final score)/d(scale * q.k) for a visible key, from its dot product:
// softcap's derivative 1 - tanh^2 (as the CPU's transform_score_derivative), else 1. ALiBi and the masks
// add constants, so they pass the gradient through unchanged.
fn softcap_slope(dot: f32) -> f32 {
  if (params.softcap <= 0.0) { return 1.0; }
  let t = tanh(clamp(dot * params.scale / params.softcap, -15.0, 15.0));
  return 1.0 - t * t;
}
