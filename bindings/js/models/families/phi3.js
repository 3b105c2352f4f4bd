// Phi-3 (model_type phi3: Phi-3/3.5-mini, Phi-4, Phi-4-mini): Llama's pre-RMSNorm block and names,
// but one fused qkv_proj (row blocks q [H·D], k [Hkv·D], v [Hkv·D], not per head) and one
// gate_up_proj (rows: gate [I], then up [I]; out = down(up · silu(gate))), partial rotary
// (partial_rotary_factor), a sliding window when sliding_window is set. longrope (and its legacy
// names su / yarn) is refused by name.
import {
  headsOf, positiveInteger, positiveNumber, refuseMixtureOfExperts, refuseUnless, ropeOf, rotaryDim,
} from './common.js';
import { llamaModelWeights } from './llama.js';

export const phi3 = {
  name: 'phi3',
  modelTypes: ['phi3'],
  traits: { norm: 'rmsnorm' },

  architecture(config) {
    const E = positiveInteger(config, 'hidden_size');
    const { numHeads, numKvHeads } = headsOf(config);
    const headDim = positiveInteger(config, 'head_dim', E / numHeads);
    const activation = config.hidden_act ?? 'silu';
    refuseUnless(activation === 'silu', `hidden_act '${activation}' is not supported (only 'silu')`);
    const rope = ropeOf(config);
    refuseMixtureOfExperts(config);
    const numLayers = positiveInteger(config, 'num_hidden_layers');
    const window = config.sliding_window == null ? null : positiveInteger(config, 'sliding_window');
    return {
      family: 'phi3',
      modelType: config.model_type,
      numLayers,
      embedDim: E,
      numHeads,
      numKvHeads,
      headDim,
      vocabSize: positiveInteger(config, 'vocab_size'),
      maxPositions: positiveInteger(config, 'max_position_embeddings', 4096),
      hiddenDim: positiveInteger(config, 'intermediate_size'),
      normEps: positiveNumber(config, 'rms_norm_eps', 1e-5),
      tiedUnembedding: config.tie_word_embeddings === true,
      rotary: { dim: rotaryDim(headDim, rope.partial, rope.partialKey), base: rope.theta },
      mlp: { gated: true, act: 'silu' },
      layerWindows: Array(numLayers).fill(window),
    };
  },

  model: llamaModelWeights,  // (Llama's keys)

  layer({ get, f32 }, a, l) {
    const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: D, hiddenDim: I } = a;
    const p = `model.layers.${l}.`;
    const qkv = f32(p + 'self_attn.qkv_proj.weight', [(H + 2 * Hkv) * D, E]);
    return {
      attention: { qkv, o: f32(p + 'self_attn.o_proj.weight', [E, H * D]) },
      norm1: { weight: f32(p + 'input_layernorm.weight', [E]) },
      norm2: { weight: f32(p + 'post_attention_layernorm.weight', [E]) },
      // Already [gate; up], the stacked form the gated MLP reads.
      up: { tensor: get(p + 'mlp.gate_up_proj.weight', [2 * I, E]) },
      down: { tensor: get(p + 'mlp.down_proj.weight', [E, I]) },
    };
  },

  /** No biases: nothing to fold. */
  valueBias: () => null,
};
