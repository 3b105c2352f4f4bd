// AdamW exactly as PyTorch's torch.optim.AdamW (decoupled weight decay, bias-corrected moments),
// and PyTorch's OneCycleLR schedule (cosine, with the momentum cycled inversely) that
// tools/train_demo_model.py trains the demo model with.

export class AdamW {
  /**
   * @param {Record<string, Float32Array>} params updated in place by step()
   * @param {{ weightDecay?: number, beta2?: number, eps?: number }} options
   */
  constructor(params, { weightDecay = 0.01, beta2 = 0.999, eps = 1e-8 } = {}) {
    this.params = params;
    this.weightDecay = weightDecay;
    this.beta2 = beta2;
    this.eps = eps;
    this.steps = 0;
    this.firstMoment = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, new Float32Array(v.length)]));
    this.secondMoment = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, new Float32Array(v.length)]));
  }

  /**
   * One update from `grads` (keyed like the params) with learning rate `lr` and momentum `beta1`,
   * of the parameters `names` (default: all; the WebGPU trainer updates the rest on the GPU, with
   * bindings/js/webgpu/wgsl/adamw.wgsl, this loop's twin).
   */
  step(grads, lr, beta1 = 0.9, names = Object.keys(this.params)) {
    this.steps += 1;
    const { beta2, eps } = this;
    const correction1 = 1 - beta1 ** this.steps;
    const correction2Root = Math.sqrt(1 - beta2 ** this.steps);
    const stepSize = lr / correction1;
    const decay = 1 - lr * this.weightDecay;
    for (const name of names) {
      const param = this.params[name];
      const grad = grads[name];
      if (!grad || grad.length !== param.length) throw new RangeError(`AdamW.step: no gradient of ${param.length} floats for '${name}'`);
      const m = this.firstMoment[name];
      const v = this.secondMoment[name];
      for (let i = 0; i < param.length; i++) {
        const g = grad[i];
        m[i] = beta1 * m[i] + (1 - beta1) * g;
        v[i] = beta2 * v[i] + (1 - beta2) * g * g;
        param[i] = param[i] * decay - stepSize * m[i] / (Math.sqrt(v[i]) / correction2Root + eps);
      }
    }
  }
}

const cosineAnneal = (start, end, fraction) => end + ((start - end) / 2) * (Math.cos(Math.PI * fraction) + 1);

/**
 * PyTorch's OneCycleLR (anneal 'cos', three_phase false, div_factor 25, final_div_factor 1e4,
 * momentum cycled between 0.85 and 0.95): the learning rate and beta1 of 1-based step `step` of
 * `totalSteps`. Past the last step it stays at the last step's values.
 */
export function oneCycle(step, totalSteps, maxLr, pctStart = 0.1) {
  const initial = maxLr / 25;
  const final = initial / 1e4;
  const s = Math.min(step, totalSteps) - 1;  // the scheduler's last_epoch when this step runs
  const warmupEnd = pctStart * totalSteps - 1;
  const lastEnd = totalSteps - 1;
  if (s <= warmupEnd) {
    const fraction = s / warmupEnd;
    return { lr: cosineAnneal(initial, maxLr, fraction), beta1: cosineAnneal(0.95, 0.85, fraction) };
  }
  const fraction = (s - warmupEnd) / (lastEnd - warmupEnd);
  return { lr: cosineAnneal(maxLr, final, fraction), beta1: cosineAnneal(0.85, 0.95, fraction) };
}

/** A constant learning rate after a linear warm-up over `warmup` steps; beta1 0.9. */
export function constantWithWarmup(step, warmup, lr) {
  return { lr: lr * Math.min(1, step / Math.max(1, warmup)), beta1: 0.9 };
}
