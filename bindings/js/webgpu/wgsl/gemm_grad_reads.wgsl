// The reads of the projections' gradient kernels (gemm_input_grad.wgsl, gemm_weight_grad.wgsl):
// their operands are T (vec4<f32> when N and K are multiples of 4, V = 4; else f32, V = 1), and
// each invocation takes 4 consecutive floats of a row at a time, as a vec4f. Template: T, V, PICK
// (component u of a T).

const V: u32 = {{V}}u;

fn pick(value: {{T}}, u: u32) -> f32 {
  return {{PICK}};
}

// Puts the V floats of `value` at (*out)[t ..]: 4 / V of them make a vec4f.
fn put_t(out: ptr<function, vec4f>, t: u32, value: {{T}}) {
  for (var u = 0u; u < V; u++) { (*out)[t + u] = pick(value, u); }
}
