// One AdamW update of a parameter tensor in place, as web/training/adamw.js (PyTorch's
// torch.optim.AdamW) writes it, per element, with g = grad * gradScale (a global-norm clip):
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param = param * decay - stepSize * m / (sqrt(v) / correction2Root + eps)
// decay = 1 - lr * weightDecay, stepSize = lr / (1 - beta1^t), correction2Root = sqrt(1 - beta2^t):
// computed once per step on the CPU (adamw.js), in float64, as the reference does.
// Dispatch: (min(groups, 65535), ceil(groups / 65535), 1) workgroups of 256, groups = ceil(n / 256).

struct Step {
  n: u32, beta1: f32, oneMinusBeta1: f32, beta2: f32,
  oneMinusBeta2: f32, stepSize: f32, decay: f32, correction2Root: f32,
  eps: f32, gradScale: f32, pad0: u32, pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<uniform> s: Step;

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u, @builtin(local_invocation_index) lane: u32) {
  let i = (group.y * groups.x + group.x) * {{LANES}}u + lane;
  if (i >= s.n) { return; }
  let g = grad[i] * s.gradScale;
  let mi = s.beta1 * m[i] + s.oneMinusBeta1 * g;
  let vi = s.beta2 * v[i] + s.oneMinusBeta2 * g * g;
  m[i] = mi;
  v[i] = vi;
  param[i] = param[i] * s.decay - s.stepSize * mi / (sqrt(vi) / s.correction2Root + s.eps);
}
