// Gemma (model_type gemma): a Llama-shaped pre-RMSNorm block whose norms multiply by 1 + weight
// (the stored weights are zero-centred), embeddings times √hidden_size (TransformerLens' hook_embed
// includes it, as its W_E does), GeGLU down(gelu_tanh(gate) · up), head_dim free of hidden_size /
// heads (256), multi-query heads (2B: one key/value head), tied unembedding, no biases.
import {
  headsOf, plusOne, positiveInteger, positiveNumber, refuseKey, refuseMixtureOfExperts, refuseUnless, ropeOf, rotaryDim,
} from './common.js';
import { llamaLayerParts } from './llama.js';

const ACTIVATIONS = { gelu_pytorch_tanh: 'gelu_tanh', gelu_tanh: 'gelu_tanh', gelu_new: 'gelu_tanh', gelu: 'gelu' };

/** What gemma and gemma2 read alike: the sizes, the activation, rotary and the refusals. */
export function gemmaArchitecture(config, family) {
  const E = positiveInteger(config, 'hidden_size');
  const { numHeads, numKvHeads } = headsOf(config);
  const headDim = positiveInteger(config, 'head_dim', 256);
  // transformers 4.x reads hidden_activation and, without it, runs gelu_pytorch_tanh whatever
  // hidden_act says (early config.json files say "gelu" there).
  const activation = config.hidden_activation ?? 'gelu_pytorch_tanh';
  refuseUnless(activation in ACTIVATIONS, `hidden_activation '${activation}' is not supported (only ${Object.keys(ACTIVATIONS).join(', ')})`);
  const rope = ropeOf(config);
  refuseKey(config, 'attention_bias', (v) => v === false, 'Gemma has no attention biases');
  refuseKey(config, 'use_bidirectional_attention', (v) => v === false || v === null, 'only causal attention');
  refuseMixtureOfExperts(config);
  return {
    family,
    modelType: config.model_type,
    numLayers: positiveInteger(config, 'num_hidden_layers'),
    embedDim: E,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: positiveInteger(config, 'vocab_size'),
    maxPositions: positiveInteger(config, 'max_position_embeddings', 8192),
    hiddenDim: positiveInteger(config, 'intermediate_size'),
    normEps: positiveNumber(config, 'rms_norm_eps', 1e-6),
    tiedUnembedding: config.tie_word_embeddings !== false,
    rotary: { dim: rotaryDim(headDim, rope.partial, rope.partialKey), base: rope.theta },
    mlp: { gated: true, act: ACTIVATIONS[activation] },
    // transformers multiplies by √hidden_size as a tensor of the activations' dtype (bf16 runs:
    // √2048 → 45.25); this forward's activations are float32, as TransformerLens' default is.
    embedScale: Math.fround(Math.sqrt(E)),
  };
}

/** The embedding, final norm (1 + w) and unembedding (tied unless tie_word_embeddings is false). */
export function gemmaModel({ get, f32 }, a) {
  const E = a.embedDim, V = a.vocabSize;
  const embedding = get('model.embed_tokens.weight', [V, E]);
  return {
    embedding,
    finalNorm: { weight: plusOne(f32('model.norm.weight', [E])) },
    unembedding: a.tiedUnembedding ? embedding : get('lm_head.weight', [V, E]),
  };
}

export const gemma = {
  name: 'gemma',
  modelTypes: ['gemma'],
  traits: { norm: 'rmsnorm' },
  architecture: (config) => gemmaArchitecture(config, 'gemma'),
  model: gemmaModel,

  layer({ get, f32 }, a, l) {
    const p = `model.layers.${l}.`, E = a.embedDim;
    return {
      ...llamaLayerParts({ get, f32 }, a, p),
      norm1: { weight: plusOne(f32(p + 'input_layernorm.weight', [E])) },
      norm2: { weight: plusOne(f32(p + 'post_attention_layernorm.weight', [E])) },
    };
  },

  /** No biases: nothing to fold. */
  valueBias: () => null,
};
