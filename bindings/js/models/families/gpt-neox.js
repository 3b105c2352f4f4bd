// GPT-NeoX (model_type gpt_neox: Pythia): pre-LayerNorm blocks whose attention and MLP both read
// the block's input when use_parallel_residual (x + attn(ln1(x)) + mlp(ln2(x))), partial rotary
// (the first int(headDim · rotary_pct) features of each head, base rotary_emb_base), the fused
// query_key_value interleaved per head ([heads, 3 · headDim] rows: q, k, v of head 0, then head 1…),
// exact-erf GELU, an untied unembedding embed_out. Old files carry buffers the forward recomputes
// (attention.bias, attention.masked_bias, attention.rotary_emb.inv_freq): ignored.
import {
  positiveInteger, positiveNumber, refuseKey, refuseMixtureOfExperts, refuseUnless, ropeOf, rotaryDim,
} from './common.js';

const ACTIVATIONS = { gelu: 'gelu', gelu_new: 'gelu_tanh', gelu_pytorch_tanh: 'gelu_tanh' };

export const gptNeox = {
  name: 'gpt_neox',
  modelTypes: ['gpt_neox'],
  traits: { norm: 'layernorm' },

  architecture(config) {
    const E = positiveInteger(config, 'hidden_size');
    const numHeads = positiveInteger(config, 'num_attention_heads');
    refuseUnless(E % numHeads === 0, `hidden_size (${E}) must be a multiple of num_attention_heads (${numHeads})`);
    const headDim = E / numHeads;
    const activation = config.hidden_act ?? 'gelu';
    refuseUnless(activation in ACTIVATIONS, `hidden_act '${activation}' is not supported (only ${Object.keys(ACTIVATIONS).join(', ')})`);
    // (transformers 4.48+ also saves rotary_pct as partial_rotary_factor and rotary_emb_base as rope_theta)
    const rope = ropeOf({
      ...config,
      rotary_pct: agreed(config, 'rotary_pct', 'partial_rotary_factor'),
      rotary_emb_base: agreed(config, 'rotary_emb_base', 'rope_theta'),
    }, { thetaKey: 'rotary_emb_base', partialKey: 'rotary_pct', partial: 0.25 });
    refuseKey(config, 'num_key_value_heads', (v) => v === null || v === numHeads, 'GPT-NeoX has one key/value head per query head');
    refuseMixtureOfExperts(config);
    const numLayers = positiveInteger(config, 'num_hidden_layers');
    return {
      family: 'gpt_neox',
      modelType: config.model_type,
      numLayers,
      embedDim: E,
      numHeads,
      numKvHeads: numHeads,
      headDim,
      vocabSize: positiveInteger(config, 'vocab_size'),
      maxPositions: positiveInteger(config, 'max_position_embeddings', 2048),
      hiddenDim: positiveInteger(config, 'intermediate_size', 4 * E),
      normEps: positiveNumber(config, 'layer_norm_eps', 1e-5),
      attentionBias: config.attention_bias !== false,
      tiedUnembedding: config.tie_word_embeddings === true,
      rotary: { dim: rotaryDim(headDim, rope.partial, rope.partialKey), base: rope.theta },
      mlp: { gated: false, act: ACTIVATIONS[activation] },
      parallelResidual: config.use_parallel_residual !== false,
    };
  },

  /** The buffers of old files, recomputed by the forward. */
  ignored: (key) => /^gpt_neox\.layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)$/.test(key),

  model({ get, f32 }, a) {
    const E = a.embedDim, V = a.vocabSize;
    const embedding = get('gpt_neox.embed_in.weight', [V, E]);
    return {
      embedding,
      finalNorm: { weight: f32('gpt_neox.final_layer_norm.weight', [E]), bias: f32('gpt_neox.final_layer_norm.bias', [E]) },
      unembedding: a.tiedUnembedding ? embedding : get('embed_out.weight', [V, E]),
    };
  },

  layer({ get, f32 }, a, l) {
    const { embedDim: E, numHeads: H, headDim: D, hiddenDim: I } = a;
    const p = `gpt_neox.layers.${l}.`;
    const [q, k, v] = deinterleave(f32(p + 'attention.query_key_value.weight', [3 * E, E]), H, D, E);
    const biases = a.attentionBias ? deinterleave(f32(p + 'attention.query_key_value.bias', [3 * E]), H, D, 1) : null;
    const bias = (key, shape) => (a.attentionBias ? f32(key, shape) : undefined);
    return {
      attention: {
        q, k, v, ...(biases ? { qBias: biases[0], kBias: biases[1], vBias: biases[2] } : {}),
        o: f32(p + 'attention.dense.weight', [E, E]), oBias: bias(p + 'attention.dense.bias', [E]),
      },
      norm1: { weight: f32(p + 'input_layernorm.weight', [E]), bias: f32(p + 'input_layernorm.bias', [E]) },
      norm2: { weight: f32(p + 'post_attention_layernorm.weight', [E]), bias: f32(p + 'post_attention_layernorm.bias', [E]) },
      up: { tensor: get(p + 'mlp.dense_h_to_4h.weight', [I, E]), bias: f32(p + 'mlp.dense_h_to_4h.bias', [I]) },
      down: { tensor: get(p + 'mlp.dense_4h_to_h.weight', [E, I]), bias: f32(p + 'mlp.dense_4h_to_h.bias', [E]) },
    };
  },

  /**
   * TransformerLens (weight_conversions/neox.py, then fold_ln and fold_value_biases): the v bias of
   * each head from query_key_value's interleaved rows, plus input_layernorm's bias read through
   * W_V (b_V' = b_V + ln1.b · W_V), through dense [E, H·D]. Without attention biases
   * (attention_bias false) b_V starts at 0, but ln1's bias still folds in.
   */
  valueBias(weight, a, l) {
    const { embedDim: E, numHeads: H, headDim: D } = a;
    const p = `gpt_neox.layers.${l}.`;
    const [, , W_V] = deinterleave(weight(p + 'attention.query_key_value.weight'), H, D, E);
    const bias = a.attentionBias
      ? deinterleave(weight(p + 'attention.query_key_value.bias'), H, D, 1)[2] : new Float32Array(H * D);
    const lnBias = weight(p + 'input_layernorm.bias');
    for (let j = 0; j < H * D; j++) {
      for (let i = 0; i < E; i++) bias[j] += lnBias[i] * W_V[j * E + i];
    }
    const out = weight(p + 'attention.dense.weight');
    return { bias, at: (h, d, e) => out[e * H * D + h * D + d] };
  },
};

/** config[key], else config[alias]; the two must agree where both are set (the forward reads one). */
function agreed(config, key, alias) {
  const [value, other] = [config[key], config[alias]];
  if (value === undefined || value === null) return other;
  refuseUnless(other === undefined || other === null || other === value,
    `${key} ${JSON.stringify(value)} and ${alias} ${JSON.stringify(other)} disagree`);
  return value;
}

/** query_key_value's rows [H, 3, D] (each row `cols` wide) as q, k, v [H·D rows] each. */
function deinterleave(data, H, D, cols) {
  const parts = [0, 1, 2].map(() => new Float32Array(H * D * cols));
  for (let h = 0; h < H; h++) {
    for (let part = 0; part < 3; part++) {
      const from = (h * 3 + part) * D * cols;
      parts[part].set(data.subarray(from, from + D * cols), h * D * cols);
    }
  }
  return parts;
}
