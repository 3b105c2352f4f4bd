// Fresh weights the way PyTorch initializes nn.MultiheadAttention (its _reset_parameters):
//   in_proj_weight [3E, E]           xavier_uniform_: U(-b, b), b = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 4E)
//   q/k/v_proj_weight (separate)     xavier_uniform_ each: b = sqrt(6 / (in + out))
//   out_proj.weight [out, in]        nn.Linear's kaiming_uniform_(a = sqrt(5)): b = 1 / sqrt(in)
//   in_proj_bias, out_proj.bias      zeros
//   sinks (this layer's extension)   zeros (a sink logit of 0, as gpt-oss starts training)
//   gate_proj.weight (the gate)      xavier_uniform_, as a separate q/k/v weight (gate_proj.bias: zeros)
//   q_norm.weight, k_norm.weight     ones (nn.RMSNorm's weight; config qkNorm)
//   bias_k, bias_v [1, 1, F]         xavier_normal_: N(0, std), std = sqrt(2 / (F + F)) (add_bias_kv)
// from a seeded generator, so a seed gives the same weights in every build and run (not the
// same numbers as torch.manual_seed: PyTorch's generator is its own).

/** mulberry32: a small, fast 32-bit generator; uniform floats in [0, 1). */
export function uniformSource(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A state dict of fresh weights for the layer's stateDictShapes(), from `seed`: Float32Arrays, or
 * with `Type` Float64Array a float64 layer's (the same draws, not rounded to float32).
 */
export function initialStateDict(shapes, seed, Type = Float32Array) {
  const next = uniformSource(seed);
  const uniform = (count, bound) => {
    const data = new Type(count);
    for (let i = 0; i < count; i++) data[i] = (2 * next() - 1) * bound;
    return data;
  };
  const normal = (count, std) => {  // Box-Muller
    const data = new Type(count);
    for (let i = 0; i < count; i++) data[i] = std * Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    return data;
  };
  const stateDict = {};
  for (const [key, shape] of Object.entries(shapes)) {
    const count = shape.reduce((n, d) => n * d, 1);
    if (key === 'in_proj_weight' || key.endsWith('_proj_weight') || key === 'gate_proj.weight') {
      const [fanOut, fanIn] = shape;
      stateDict[key] = uniform(count, Math.sqrt(6 / (fanIn + fanOut)));
    } else if (key === 'bias_k' || key === 'bias_v') {
      stateDict[key] = normal(count, Math.sqrt(1 / shape[2]));
    } else if (key === 'q_norm.weight' || key === 'k_norm.weight') {
      stateDict[key] = new Type(count).fill(1);
    } else if (key === 'out_proj.weight') {
      stateDict[key] = uniform(count, 1 / Math.sqrt(shape[1]));
    } else {  // biases and sinks
      stateDict[key] = new Type(count);
    }
  }
  return stateDict;
}
