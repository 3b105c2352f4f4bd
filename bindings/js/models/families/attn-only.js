// An attention-only model (TransformerLens' attn_only; the demo page's default one, web/demo-hooked.js):
// positions given as a table, no norms, no MLP, an unembedding with a bias, each layer the state
// dict of a torch nn.MultiheadAttention under `layers.{l}.`. Not a Hugging Face model_type: the
// architecture is built by hand.

export const attnOnly = {
  name: 'attn-only',
  modelTypes: [],
  traits: { norm: 'none', learnedPositions: true, mlp: null },

  model({ get, f32 }, a) {
    const E = a.embedDim, V = a.vocabSize;
    return {
      embedding: get('tok_embed.weight', [V, E]),
      positions: get('pos_embed.weight', [a.maxPositions, E]),
      finalNorm: null,
      unembedding: get('unembed.weight', [V, E]),
      unembeddingBias: f32('unembed.bias', [V]),
    };
  },

  /** The layer's own state dict, whatever keys the attention layer asks for. */
  layer({ f32 }, a, l) {
    return {
      attention: { stateDict: (shapes) => Object.fromEntries(Object.entries(shapes).map(([key, shape]) => [key, f32(`layers.${l}.${key}`, shape)])) },
      outBias: f32(`layers.${l}.out_proj.bias`, [a.embedDim]),
      norm1: null, norm2: null, up: null, down: null,
    };
  },

  /** nn.MultiheadAttention's in_proj_bias [q, k, v] and out_proj.weight [E, E] as [out, in]. */
  valueBias(weight, a, l) {
    const { embedDim: E, headDim: D } = a;
    const out = weight(`layers.${l}.out_proj.weight`);
    return { bias: weight(`layers.${l}.in_proj_bias`).slice(2 * E), at: (h, d, e) => out[e * E + h * D + d] };
  },
};
