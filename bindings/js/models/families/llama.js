// Llama (model_type llama; mistral and qwen2 share it, and qwen3.js reads through it): pre-RMSNorm blocks, SwiGLU MLP,
// rotary (rotate_half), grouped-query heads, optional sliding window, tied or untied unembedding.
// Qwen2 has q/k/v biases always; Llama, Mistral and Qwen3 when attention_bias is set. Qwen3 adds
// RMSNorms of q and k per head (self_attn.q_norm / k_norm [head_dim]) between the projection and
// rotary: the attention layer's qkNorm.
import { positiveInteger, positiveNumber, refuseMixtureOfExperts, refuseUnless } from './common.js';
import { stacked } from './stack.js';

/** The model-level weights under Llama's keys (Phi-3 shares them): embeddings, final RMSNorm, unembedding. */
export function llamaModelWeights({ get, f32 }, a) {
  const E = a.embedDim, V = a.vocabSize;
  const embedding = get('model.embed_tokens.weight', [V, E]);
  return {
    embedding,
    finalNorm: { weight: f32('model.norm.weight', [E]) },
    unembedding: a.tiedUnembedding ? embedding : get('lm_head.weight', [V, E]),
  };
}

/** A layer's attention and MLP under Llama's names, without biases; the norms are the caller's (Gemma, OLMo-2). */
export function llamaLayerParts({ get, f32 }, a, p) {
  const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D, hiddenDim: I } = a;
  return {
    attention: {
      q: f32(p + 'self_attn.q_proj.weight', [H * D, E]),
      k: f32(p + 'self_attn.k_proj.weight', [Hkv * D, E]),
      v: f32(p + 'self_attn.v_proj.weight', [Hkv * D, E]),
      o: f32(p + 'self_attn.o_proj.weight', [E, H * D]),
    },
    up: { tensor: stacked([get(p + 'mlp.gate_proj.weight', [I, E]), get(p + 'mlp.up_proj.weight', [I, E])]) },
    down: { tensor: get(p + 'mlp.down_proj.weight', [E, I]) },
  };
}

export const llama = {
  name: 'llama',
  modelTypes: ['llama', 'mistral', 'qwen2'],
  traits: { norm: 'rmsnorm', mlp: { gated: true, act: 'silu' } },

  architecture(config) {
    const E = positiveInteger(config, 'hidden_size');
    const numHeads = positiveInteger(config, 'num_attention_heads');
    const numKvHeads = positiveInteger(config, 'num_key_value_heads', numHeads);
    refuseUnless(numHeads % numKvHeads === 0,
      `num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`);
    const qwen3 = config.model_type === 'qwen3';
    // (Qwen3Config's head_dim defaults to 128, whatever hidden_size / heads is)
    const headDim = positiveInteger(config, 'head_dim', qwen3 ? 128 : E / numHeads);
    const activation = config.hidden_act ?? 'silu';
    refuseUnless(activation === 'silu', `hidden_act '${activation}' is not supported (only 'silu')`);
    refuseUnless(config.rope_scaling === undefined || config.rope_scaling === null,
      `rope_scaling ${JSON.stringify(config.rope_scaling)} is not supported (only plain rotary, rope_scaling null)`);
    refuseUnless(!config.mlp_bias, 'mlp_bias: true is not supported');
    refuseUnless((config.pretraining_tp ?? 1) === 1, `pretraining_tp ${config.pretraining_tp} is not supported (only 1)`);
    refuseMixtureOfExperts(config);
    // Qwen2 and Qwen3 turn their window on with use_sliding_window; Mistral's sliding_window applies when set.
    const qwen = config.model_type === 'qwen2' || qwen3;
    const windowed = qwen ? config.use_sliding_window === true : true;
    const slidingWindow = windowed && config.sliding_window != null ? positiveInteger(config, 'sliding_window') : null;
    refuseUnless(!(qwen && slidingWindow !== null && (config.max_window_layers ?? 0) > 0
      && config.max_window_layers < config.num_hidden_layers), 'a sliding window on some layers only (max_window_layers) is not supported');
    const numLayers = positiveInteger(config, 'num_hidden_layers');
    const ropeTheta = positiveNumber(config, 'rope_theta', 10000);
    const normEps = positiveNumber(config, 'rms_norm_eps', 1e-6);
    return {
      family: 'llama',
      modelType: config.model_type,
      numLayers,
      embedDim: E,
      numHeads,
      numKvHeads,
      headDim,
      vocabSize: positiveInteger(config, 'vocab_size'),
      maxPositions: positiveInteger(config, 'max_position_embeddings', 2048),
      hiddenDim: positiveInteger(config, 'intermediate_size'),
      normEps,
      ropeTheta,
      slidingWindow,
      // Qwen2 always has q/k/v biases; Llama and Mistral when attention_bias is set.
      attentionBias: config.model_type === 'qwen2' || config.attention_bias === true,
      tiedUnembedding: config.tie_word_embeddings === true,
      rotary: { dim: headDim, base: ropeTheta },
      layerWindows: Array(numLayers).fill(slidingWindow),
      qkNorm: qwen3 ? { over: 'head', eps: normEps } : null,
    };
  },

  model: llamaModelWeights,

  layer({ get, f32 }, a, l) {
    const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D, hiddenDim: I } = a;
    const p = `model.layers.${l}.`;
    return {
      attention: {
        q: f32(p + 'self_attn.q_proj.weight', [H * D, E]),
        k: f32(p + 'self_attn.k_proj.weight', [Hkv * D, E]),
        v: f32(p + 'self_attn.v_proj.weight', [Hkv * D, E]),
        ...(a.attentionBias ? {
          qBias: f32(p + 'self_attn.q_proj.bias', [H * D]),
          kBias: f32(p + 'self_attn.k_proj.bias', [Hkv * D]),
          vBias: f32(p + 'self_attn.v_proj.bias', [Hkv * D]),
        } : {}),
        o: f32(p + 'self_attn.o_proj.weight', [E, H * D]),
        // Llama's and Qwen3's o_proj have a bias with attention_bias (modeling_llama.py, modeling_qwen3.py); Mistral's and Qwen2's never.
        ...((a.modelType === 'llama' || a.modelType === 'qwen3') && a.attentionBias ? { oBias: f32(p + 'self_attn.o_proj.bias', [E]) } : {}),
        ...(a.qkNorm ? { qNorm: f32(p + 'self_attn.q_norm.weight', [D]), kNorm: f32(p + 'self_attn.k_norm.weight', [D]) } : {}),
      },
      norm1: { weight: f32(p + 'input_layernorm.weight', [E]) },
      norm2: { weight: f32(p + 'post_attention_layernorm.weight', [E]) },
      // gate and up in one product: [2I, E].
      up: { tensor: stacked([get(p + 'mlp.gate_proj.weight', [I, E]), get(p + 'mlp.up_proj.weight', [I, E])]) },
      down: { tensor: get(p + 'mlp.down_proj.weight', [E, I]) },
    };
  },

  /** The keys of layer l's q and k projections (and biases), before the q/k norms: what hook_q and hook_k read (hooked-forward.js). */
  qkProjections(a, l) {
    const p = `model.layers.${l}.self_attn.`;
    return { q: p + 'q_proj.weight', k: p + 'k_proj.weight', ...(a.attentionBias ? { qBias: p + 'q_proj.bias', kBias: p + 'k_proj.bias' } : {}) };
  },

  /** Qwen2's (or an attention_bias Llama's) v_proj bias through o_proj [E, H·D]; RMSNorm has no bias to fold. */
  valueBias(weight, a, l) {
    if (!a.attentionBias) return null;
    const { numHeads: H, headDim: D } = a;
    const out = weight(`model.layers.${l}.self_attn.o_proj.weight`);
    return { bias: weight(`model.layers.${l}.self_attn.v_proj.bias`), at: (h, d, e) => out[e * H * D + h * D + d] };
  },
};
