// GPT-2 (model_type gpt2): pre-LayerNorm blocks, Conv1D weights stored [in, out], c_attn = [q|k|v]
// along out, learned positions (wpe), gelu_new (tanh), tied unembedding. Files on the Hub may lack
// the 'transformer.' prefix.
import { transposed, widen } from '../tensors.js';
import { positiveInteger, positiveNumber, refuseMixtureOfExperts, refuseUnless } from './common.js';

export const gpt2 = {
  name: 'gpt2',
  modelTypes: ['gpt2'],
  traits: { norm: 'layernorm', learnedPositions: true, mlp: { gated: false, act: 'gelu_tanh' } },

  architecture(config) {
    const E = positiveInteger(config, 'n_embd');
    const numHeads = positiveInteger(config, 'n_head');
    refuseUnless(E % numHeads === 0, `n_embd (${E}) must be a multiple of n_head (${numHeads})`);
    const activation = config.activation_function ?? 'gelu_new';
    refuseUnless(['gelu_new', 'gelu_pytorch_tanh'].includes(activation),
      `activation_function '${activation}' is not supported (only GPT-2's 'gelu_new' / 'gelu_pytorch_tanh')`);
    refuseUnless(config.scale_attn_weights !== false, 'scale_attn_weights: false is not supported');
    refuseUnless(!config.scale_attn_by_inverse_layer_idx, 'scale_attn_by_inverse_layer_idx is not supported');
    refuseMixtureOfExperts(config);
    return {
      family: 'gpt2',
      numLayers: positiveInteger(config, 'n_layer'),
      embedDim: E,
      numHeads,
      numKvHeads: numHeads,
      headDim: E / numHeads,
      vocabSize: positiveInteger(config, 'vocab_size'),
      maxPositions: positiveInteger(config, 'n_positions', config.n_ctx),
      hiddenDim: positiveInteger(config, 'n_inner', 4 * E),
      normEps: positiveNumber(config, 'layer_norm_epsilon', 1e-5),
      tiedUnembedding: true,
    };
  },

  /** The Hub's gpt2 stores its keys without 'transformer.'. */
  alias: (key) => key.replace(/^transformer\./, ''),

  model({ get, f32 }, a) {
    const E = a.embedDim, V = a.vocabSize;
    const embedding = get('transformer.wte.weight', [V, E]);
    return {
      embedding,
      positions: get('transformer.wpe.weight'),
      finalNorm: { weight: f32('transformer.ln_f.weight', [E]), bias: f32('transformer.ln_f.bias', [E]) },
      unembedding: embedding,
    };
  },

  layer({ get, f32 }, a, l) {
    const { embedDim: E, hiddenDim: I } = a;
    const p = `transformer.h.${l}.`;
    // Conv1D stores [in, out]; nn.Linear's (and the layer's) layout is [out, in].
    const qkv = widen(transposed(get(p + 'attn.c_attn.weight', [E, 3 * E])));
    const qkvBias = f32(p + 'attn.c_attn.bias', [3 * E]);
    return {
      attention: {
        qkv, qkvBias,
        o: widen(transposed(get(p + 'attn.c_proj.weight', [E, E]))),
        oBias: f32(p + 'attn.c_proj.bias', [E]),
      },
      norm1: { weight: f32(p + 'ln_1.weight', [E]), bias: f32(p + 'ln_1.bias', [E]) },
      norm2: { weight: f32(p + 'ln_2.weight', [E]), bias: f32(p + 'ln_2.bias', [E]) },
      up: { tensor: transposed(get(p + 'mlp.c_fc.weight', [E, I])), bias: f32(p + 'mlp.c_fc.bias', [I]) },
      down: { tensor: transposed(get(p + 'mlp.c_proj.weight', [I, E])), bias: f32(p + 'mlp.c_proj.bias', [E]) },
    };
  },

  /**
   * fold_ln then fold_value_biases (TransformerLens): b_V' = b_V + ln_1.bias · W_V, read through
   * c_proj [in (H·D), out (E)]. c_attn (Conv1D [in E, out 3E]) and its bias are [q, k, v].
   */
  valueBias(weight, a, l) {
    const { embedDim: E, headDim: D } = a;
    const p = `transformer.h.${l}.`;
    const cAttn = weight(p + 'attn.c_attn.weight'), lnBias = weight(p + 'ln_1.bias');
    const bias = weight(p + 'attn.c_attn.bias').slice(2 * E);
    for (let j = 0; j < E; j++) {
      for (let i = 0; i < E; i++) bias[j] += lnBias[i] * cAttn[i * 3 * E + 2 * E + j];
    }
    const out = weight(p + 'attn.c_proj.weight');
    return { bias, at: (h, d, e) => out[(h * D + d) * E + e] };
  },
};
