// OLMo-2 (model_type olmo2): Llama's weights and names, but no norm before the attention or the
// MLP; instead x += post_attention_layernorm(attn(x)); x += post_feedforward_layernorm(mlp(x))
// (TransformerLens' ln1_post / ln2_post, with no ln1 or ln2), and q and k RMS-normed over the
// whole projection (self_attn.q_norm [heads · head_dim], k_norm [kv heads · head_dim]) between the
// projection and rotary: the attention layer's qkNorm 'projection'. SwiGLU, untied, no biases.
import { headsOf, positiveInteger, positiveNumber, refuseKey, refuseMixtureOfExperts, refuseUnless, ropeOf } from './common.js';
import { llama, llamaLayerParts, llamaModelWeights } from './llama.js';

export const olmo2 = {
  name: 'olmo2',
  modelTypes: ['olmo2'],
  traits: { norm: 'rmsnorm', mlp: { gated: true, act: 'silu' }, postNorms: true, preNorms: false },

  architecture(config) {
    const E = positiveInteger(config, 'hidden_size');
    const { numHeads, numKvHeads } = headsOf(config);
    const activation = config.hidden_act ?? 'silu';
    refuseUnless(activation === 'silu', `hidden_act '${activation}' is not supported (only 'silu')`);
    refuseKey(config, 'attention_bias', (v) => v === false || v === null, 'OLMo-2 checkpoints have no attention biases');
    refuseKey(config, 'clip_qkv', (v) => v === null, 'clipping q, k and v is not supported');
    refuseMixtureOfExperts(config);
    const rope = ropeOf(config);
    refuseUnless(rope.partial === 1, `${rope.partialKey} ${rope.partial} is not supported (OLMo-2 rotates the whole head)`);
    const numLayers = positiveInteger(config, 'num_hidden_layers');
    const headDim = E / numHeads;
    refuseUnless(Number.isInteger(headDim), `num_attention_heads (${numHeads}) must divide hidden_size (${E})`);
    const normEps = positiveNumber(config, 'rms_norm_eps', 1e-5);
    return {
      family: 'olmo2',
      modelType: 'olmo2',
      numLayers,
      embedDim: E,
      numHeads,
      numKvHeads,
      headDim,
      vocabSize: positiveInteger(config, 'vocab_size'),
      maxPositions: positiveInteger(config, 'max_position_embeddings', 2048),
      hiddenDim: positiveInteger(config, 'intermediate_size'),
      normEps,
      attentionBias: false,
      tiedUnembedding: config.tie_word_embeddings === true,
      rotary: { dim: headDim, base: rope.theta },
      layerWindows: Array(numLayers).fill(null),
      qkNorm: { over: 'projection', eps: normEps },
    };
  },

  model: llamaModelWeights,

  layer({ get, f32 }, a, l) {
    const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D } = a;
    const p = `model.layers.${l}.`;
    const parts = llamaLayerParts({ get, f32 }, a, p);
    return {
      ...parts,
      attention: {
        ...parts.attention,
        qNorm: f32(p + 'self_attn.q_norm.weight', [H * D]),
        kNorm: f32(p + 'self_attn.k_norm.weight', [Hkv * D]),
      },
      norm1: null,
      norm2: null,
      postAttnNorm: { weight: f32(p + 'post_attention_layernorm.weight', [E]) },
      postMlpNorm: { weight: f32(p + 'post_feedforward_layernorm.weight', [E]) },
    };
  },

  qkProjections: (a, l) => llama.qkProjections(a, l),

  /** No biases: nothing to fold. */
  valueBias: () => null,
};
