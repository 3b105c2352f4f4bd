// Gemma 3's text model (model_type gemma3_text; Gemma3ForCausalLM, the 1B checkpoint): Gemma 2's
// block (four (1 + w) norms a layer, scores scaled by query_pre_attn_scalar^-1/2, GeGLU, √hidden
// embeddings, tied), plus q and k RMS-normed (1 + w) per head between the projection and rotary
// (self_attn.q_norm / k_norm [head_dim]: the attention layer's qkNorm), five sliding layers to each
// global one (sliding_window_pattern 6, or layer_types), and a rotary base of its own for the
// sliding layers (rope_local_base_freq 10000; the global ones rope_theta, 1e6). The softcaps are off
// unless the config sets them. The multimodal model_type gemma3 (vision tower, text_config) is not
// this family.
import { plusOne, positiveInteger, positiveNumber, refuseUnless, slidingLayers } from './common.js';
import { gemmaArchitecture, gemmaModel } from './gemma.js';
import { llama, llamaLayerParts } from './llama.js';

/** A softcap key: off when absent or null (Gemma 3's defaults), else a positive number. */
const cap = (config, key) => (config[key] === undefined || config[key] === null ? null : positiveNumber(config, key));

/**
 * The global and local rotary bases: flat (rope_theta, rope_local_base_freq) or transformers v5's
 * rope_parameters per layer type; only plain rotary ('default') on both.
 */
function rotaryBases(config) {
  const params = config.rope_parameters;
  if (params && typeof params === 'object' && ('full_attention' in params || 'sliding_attention' in params)) {
    const base = (type, fallback) => {
      const p = params[type] ?? {};
      const kind = p.rope_type ?? 'default';
      refuseUnless(kind === 'default', `rope_parameters.${type} ${JSON.stringify(p)}: rope type '${kind}' is not supported (only plain rotary)`);
      return positiveNumber(p, 'rope_theta', fallback);
    };
    return { global: base('full_attention', 1e6), local: base('sliding_attention', 10000) };
  }
  return { global: positiveNumber(config, 'rope_theta', 1e6), local: positiveNumber(config, 'rope_local_base_freq', 10000) };
}

export const gemma3 = {
  name: 'gemma3_text',
  modelTypes: ['gemma3_text'],
  traits: { norm: 'rmsnorm' },

  architecture(config) {
    const bases = rotaryBases(config);
    // (gemmaArchitecture reads the flat rope keys; the nested form is read above)
    const a = gemmaArchitecture({ ...config, rope_parameters: undefined }, 'gemma3_text');
    const window = positiveInteger(config, 'sliding_window', 4096);
    const pattern = positiveInteger(config, 'sliding_window_pattern', 6);
    const sliding = slidingLayers(config, a.numLayers, (l) => (l + 1) % pattern !== 0);
    return {
      ...a,
      rotary: { dim: a.rotary.dim, base: bases.global },
      layerRotaryBases: sliding.map((s) => (s ? bases.local : bases.global)),
      attnScale: positiveNumber(config, 'query_pre_attn_scalar', 256) ** -0.5,
      attnSoftcap: cap(config, 'attn_logit_softcapping'),
      finalSoftcap: cap(config, 'final_logit_softcapping'),
      layerWindows: sliding.map((s) => (s ? window : null)),
      postNorms: true,
      qkNorm: { over: 'head', eps: a.normEps },
    };
  },

  model: gemmaModel,

  layer({ get, f32 }, a, l) {
    const p = `model.layers.${l}.`, E = a.embedDim, D = a.headDim;
    const norm = (name) => ({ weight: plusOne(f32(p + name + '.weight', [E])) });
    const parts = llamaLayerParts({ get, f32 }, a, p);
    return {
      ...parts,
      attention: {
        ...parts.attention,
        qNorm: plusOne(f32(p + 'self_attn.q_norm.weight', [D])),
        kNorm: plusOne(f32(p + 'self_attn.k_norm.weight', [D])),
      },
      norm1: norm('input_layernorm'),
      postAttnNorm: norm('post_attention_layernorm'),
      norm2: norm('pre_feedforward_layernorm'),
      postMlpNorm: norm('post_feedforward_layernorm'),
    };
  },

  qkProjections: (a, l) => llama.qkProjections(a, l),

  /** No biases: nothing to fold. */
  valueBias: () => null,
};
