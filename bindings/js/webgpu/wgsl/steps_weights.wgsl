// The step path's attention weights, when the call asks for them (steps.js): from the pattern
// (patched where a patch says), per head or averaged over heads in head order, after dropout
// unless weights_before_dropout, as the CPU's step path (weights_main.wgsl).
// Dispatch: (ceil(S / 64), L, B * (H or 1 when averaged)).

#include "score_epilogue.wgsl"
#include "dropout.wgsl"
#include "weights_main.wgsl"

@group(0) @binding(8) var<storage, read> pattern: array<f32>;        // [B, H, L, S]

fn probability(b: u32, h: u32, row: u32, j: u32) -> f32 {
  return pattern[((b * params.H + h) * params.L + row) * params.S + j];
}
