// A fresh model's parameters, drawn from the seeded Random with PyTorch's default initialisations
// of the same modules, keyed like the PyTorch state dict (tools/train_demo_model.py):
//   tok_embed.weight [V, E]           nn.Embedding: N(0, 1)
//   layers.l.in_proj_weight [3E, E]   nn.MultiheadAttention: xavier_uniform
//   layers.l.in_proj_bias [3E]        0
//   layers.l.out_proj.weight [E, E]   nn.Linear: U(-1/sqrt(E), 1/sqrt(E))
//   layers.l.out_proj.bias [E]        0
//   unembed.weight [V, E], unembed.bias [V]   nn.Linear: U(-1/sqrt(E), 1/sqrt(E))

/** The parameter shapes of a model with V tokens, E features and `numLayers` attention layers. */
export function parameterShapes(V, E, numLayers) {
  const shapes = { 'tok_embed.weight': [V, E] };
  for (let l = 0; l < numLayers; l++) {
    Object.assign(shapes, {
      [`layers.${l}.in_proj_weight`]: [3 * E, E],
      [`layers.${l}.in_proj_bias`]: [3 * E],
      [`layers.${l}.out_proj.weight`]: [E, E],
      [`layers.${l}.out_proj.bias`]: [E],
    });
  }
  shapes['unembed.weight'] = [V, E];
  shapes['unembed.bias'] = [V];
  return shapes;
}

/** Freshly initialised parameters { name: Float32Array }, drawn from `rng` in the order above. */
export function initialParameters(rng, V, E, numLayers) {
  const params = {};
  const uniform = (length, bound) => Float32Array.from({ length }, () => rng.uniform(-bound, bound));
  for (const [name, shape] of Object.entries(parameterShapes(V, E, numLayers))) {
    const length = shape.reduce((n, d) => n * d, 1);
    if (name === 'tok_embed.weight') params[name] = Float32Array.from({ length }, () => rng.normal());
    else if (name.endsWith('in_proj_weight')) params[name] = uniform(length, Math.sqrt(6 / (E + 3 * E)));
    else if (name.endsWith('in_proj_bias') || name.endsWith('out_proj.bias')) params[name] = new Float32Array(length);
    else params[name] = uniform(length, 1 / Math.sqrt(E));
  }
  return params;
}
