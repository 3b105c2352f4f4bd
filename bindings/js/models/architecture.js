// Which transformer a Hugging Face config.json describes, as the hyperparameters the forward
// needs. Two families: GPT-2 (LayerNorm, GELU MLP, learned positions, Conv1D weights, tied
// unembedding) and Llama (RMSNorm, SwiGLU MLP, rotary, grouped-query heads, optional sliding
// window, tied or untied unembedding), which Mistral and Qwen2 checkpoints share. Anything else is
// refused by name, as is an option of these families that the forward does not implement.

/** model_type -> family. */
const FAMILIES = {
  gpt2: 'gpt2',
  llama: 'llama',
  mistral: 'llama',
  qwen2: 'llama',
};
const KNOWN = Object.keys(FAMILIES).join(', ');

const what = 'config.json';

function positiveInteger(config, key, fallback) {
  const value = config[key] ?? fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new TypeError(`${what}: ${key} must be a positive integer, got ${JSON.stringify(config[key])}`);
  }
  return value;
}

function positiveNumber(config, key, fallback) {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new TypeError(`${what}: ${key} must be a positive number, got ${JSON.stringify(config[key])}`);
  }
  return value;
}

function refuseUnless(condition, message) {
  if (!condition) throw new TypeError(`${what}: ${message}`);
}

function gpt2(config) {
  const E = positiveInteger(config, 'n_embd');
  const numHeads = positiveInteger(config, 'n_head');
  refuseUnless(E % numHeads === 0, `n_embd (${E}) must be a multiple of n_head (${numHeads})`);
  const activation = config.activation_function ?? 'gelu_new';
  refuseUnless(['gelu_new', 'gelu_pytorch_tanh'].includes(activation),
    `activation_function '${activation}' is not supported (only GPT-2's 'gelu_new' / 'gelu_pytorch_tanh')`);
  refuseUnless(config.scale_attn_weights !== false, 'scale_attn_weights: false is not supported');
  refuseUnless(!config.scale_attn_by_inverse_layer_idx, 'scale_attn_by_inverse_layer_idx is not supported');
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
}

function llama(config) {
  const E = positiveInteger(config, 'hidden_size');
  const numHeads = positiveInteger(config, 'num_attention_heads');
  const numKvHeads = positiveInteger(config, 'num_key_value_heads', numHeads);
  refuseUnless(numHeads % numKvHeads === 0,
    `num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`);
  const headDim = positiveInteger(config, 'head_dim', E / numHeads);
  const activation = config.hidden_act ?? 'silu';
  refuseUnless(activation === 'silu', `hidden_act '${activation}' is not supported (only 'silu')`);
  refuseUnless(config.rope_scaling === undefined || config.rope_scaling === null,
    `rope_scaling ${JSON.stringify(config.rope_scaling)} is not supported (only plain rotary, rope_scaling null)`);
  refuseUnless(!config.mlp_bias, 'mlp_bias: true is not supported');
  refuseUnless((config.pretraining_tp ?? 1) === 1, `pretraining_tp ${config.pretraining_tp} is not supported (only 1)`);
  // Qwen2 turns its window on with use_sliding_window; Mistral's sliding_window applies when set.
  const windowed = config.model_type === 'qwen2' ? config.use_sliding_window === true : true;
  const slidingWindow = windowed && config.sliding_window != null ? positiveInteger(config, 'sliding_window') : null;
  refuseUnless(!(config.model_type === 'qwen2' && slidingWindow !== null && (config.max_window_layers ?? 0) > 0
    && config.max_window_layers < config.num_hidden_layers), 'a sliding window on some layers only (max_window_layers) is not supported');
  return {
    family: 'llama',
    modelType: config.model_type,
    numLayers: positiveInteger(config, 'num_hidden_layers'),
    embedDim: E,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: positiveInteger(config, 'vocab_size'),
    maxPositions: positiveInteger(config, 'max_position_embeddings', 2048),
    hiddenDim: positiveInteger(config, 'intermediate_size'),
    normEps: positiveNumber(config, 'rms_norm_eps', 1e-6),
    ropeTheta: positiveNumber(config, 'rope_theta', 10000),
    slidingWindow,
    // Qwen2 always has q/k/v biases; Llama and Mistral when attention_bias is set.
    attentionBias: config.model_type === 'qwen2' || config.attention_bias === true,
    tiedUnembedding: config.tie_word_embeddings === true,
  };
}

/**
 * The hyperparameters of a parsed config.json, or a TypeError naming the model_type and
 * architectures found when they are not a family this forward runs.
 */
export function architectureOf(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`${what} must be a JSON object, got ${Array.isArray(config) ? 'an array' : typeof config}`);
  }
  const family = FAMILIES[config.model_type];
  if (!family) {
    const found = `model_type ${JSON.stringify(config.model_type ?? null)}`
      + (config.architectures ? `, architectures ${JSON.stringify(config.architectures)}` : '');
    throw new TypeError(`${what}: ${found} is not a supported architecture; supported model_type: ${KNOWN}`);
  }
  return family === 'gpt2' ? gpt2(config) : llama(config);
}
