// Gemma 2 (model_type gemma2): Gemma's block with four (1 + w) norms a layer, before and after both
// the attention and the MLP (x += post_attn(attn(input(x))); x += post_ff(mlp(pre_ff(x)))), the
// attention's scores scaled by query_pre_attn_scalar^-1/2 and capped (attn_logit_softcapping: c ·
// tanh(s / c), before the mask), layers alternating between a sliding window (even layers, or
// layer_types' 'sliding_attention') and global attention, and the logits capped after the
// unembedding (final_logit_softcapping). TransformerLens' ln1_post / ln2_post are the two
// post-norms, and its hook_attn_out and hook_mlp_out come after them.
import { plusOne, positiveInteger, positiveNumber, slidingLayers } from './common.js';
import { gemmaArchitecture, gemmaModel } from './gemma.js';
import { llamaLayerParts } from './llama.js';

/** A softcap key: the class default when absent, off when null. */
function cap(config, key, fallback) {
  if (config[key] === null) return null;
  return positiveNumber(config, key, fallback);
}

export const gemma2 = {
  name: 'gemma2',
  modelTypes: ['gemma2'],
  traits: { norm: 'rmsnorm' },

  architecture(config) {
    const a = gemmaArchitecture(config, 'gemma2');
    const window = config.sliding_window === null ? null : positiveInteger(config, 'sliding_window', 4096);
    const sliding = slidingLayers(config, a.numLayers, (l) => l % 2 === 0);
    return {
      ...a,
      attnScale: positiveNumber(config, 'query_pre_attn_scalar', 256) ** -0.5,
      attnSoftcap: cap(config, 'attn_logit_softcapping', 50),
      finalSoftcap: cap(config, 'final_logit_softcapping', 30),
      layerWindows: sliding.map((s) => (s ? window : null)),
      postNorms: true,
    };
  },

  model: gemmaModel,

  layer({ get, f32 }, a, l) {
    const p = `model.layers.${l}.`, E = a.embedDim;
    const norm = (name) => ({ weight: plusOne(f32(p + name + '.weight', [E])) });
    return {
      ...llamaLayerParts({ get, f32 }, a, p),
      norm1: norm('input_layernorm'),
      postAttnNorm: norm('post_attention_layernorm'),
      norm2: norm('pre_feedforward_layernorm'),
      postMlpNorm: norm('post_feedforward_layernorm'),
    };
  },

  /** No biases: nothing to fold. */
  valueBias: () => null,
};
