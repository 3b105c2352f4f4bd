// BERT (model_type bert: BertForMaskedLM, BertForPreTraining, BertModel) and RoBERTa (roberta:
// RobertaForMaskedLM, RobertaModel): encoders. Bidirectional attention (no causal mask; the keys
// attention_mask marks 0 are padding), word + position + token-type embeddings then a LayerNorm,
// post-LN blocks (a = LN(x + attn(x)), y = LN(a + mlp(a)), exact-erf GELU), and the masked-LM head
// where the file holds it (BERT's cls.predictions: transform.dense, hidden_act, transform.LayerNorm,
// the decoder tied to the word embeddings plus cls.predictions.bias; RoBERTa's lm_head: dense, erf
// GELU, layer_norm, decoder + lm_head.bias). RoBERTa's positions count from padding_idx + 1
// (modeling_roberta.py create_position_ids_from_input_ids). bert-base-uncased's files name the
// LayerNorms' weights gamma / beta (transformers renames them on load): both are read. The pooler
// and the next-sentence / classifier heads are not read. DistilBERT (distilbert:
// DistilBertForMaskedLM, DistilBertModel) is the same encoder under its own config keys and weight
// names (modeling_distilbert.py), without token types; its sinusoidal positions option is refused.
import { positiveInteger, positiveNumber, refuseKey, refuseMixtureOfExperts, refuseUnless } from './common.js';

/** The encoders' shared config reading; `prefix` is the weights' ('bert.', 'roberta.'). */
function encoderArchitecture(config, family) {
  const E = positiveInteger(config, 'hidden_size');
  const numHeads = positiveInteger(config, 'num_attention_heads');
  refuseUnless(E % numHeads === 0, `hidden_size (${E}) must be a multiple of num_attention_heads (${numHeads})`);
  const activation = config.hidden_act ?? 'gelu';
  refuseUnless(activation === 'gelu', `hidden_act ${JSON.stringify(activation)} is not supported (only 'gelu', the exact erf GELU BERT and RoBERTa use)`);
  refuseKey(config, 'position_embedding_type', (v) => v === null || v === 'absolute',
    "only absolute learned positions; relative_key / relative_key_query add a distance embedding to the scores");
  refuseKey(config, 'is_decoder', (v) => v === false || v === null, 'the encoder runs bidirectionally; a causal BERT is not supported');
  refuseKey(config, 'add_cross_attention', (v) => v === false || v === null, 'cross-attention to an encoder is not supported');
  refuseKey(config, 'num_key_value_heads', (v) => v === null || v === numHeads, 'BERT has one key/value head per query head');
  refuseMixtureOfExperts(config);
  const typeVocabSize = config.type_vocab_size ?? 2;
  refuseUnless(Number.isInteger(typeVocabSize) && typeVocabSize >= 0, `type_vocab_size must be a non-negative integer, got ${JSON.stringify(config.type_vocab_size)}`);
  const padTokenId = config.pad_token_id ?? (family === 'roberta' ? 1 : 0);
  refuseUnless(Number.isInteger(padTokenId) && padTokenId >= 0, `pad_token_id must be a non-negative integer, got ${JSON.stringify(config.pad_token_id)}`);
  const maxPositions = positiveInteger(config, 'max_position_embeddings', 512);
  // RoBERTa's position rows start after padding_idx (rows 0..pad hold none of a sequence's tokens).
  const positionOffset = family === 'roberta' ? padTokenId + 1 : 0;
  refuseUnless(maxPositions > positionOffset, `max_position_embeddings (${maxPositions}) leaves no positions after padding_idx ${padTokenId}`);
  return {
    family,
    modelType: config.model_type,
    numLayers: positiveInteger(config, 'num_hidden_layers'),
    embedDim: E,
    numHeads,
    numKvHeads: numHeads,
    headDim: E / numHeads,
    vocabSize: positiveInteger(config, 'vocab_size'),
    // (the tokens a sequence may hold: RoBERTa's 514 rows give 512)
    maxPositions: maxPositions - positionOffset,
    positionRowCount: maxPositions,
    positionOffset,
    padTokenId,
    typeVocabSize,
    hiddenDim: positiveInteger(config, 'intermediate_size', 4 * E),
    normEps: positiveNumber(config, 'layer_norm_eps', 1e-12),
    tiedUnembedding: config.tie_word_embeddings !== false,
    mlp: { gated: false, act: 'gelu' },
  };
}

/** gamma / beta (bert-base-uncased's files) for a LayerNorm's weight / bias. */
function gammaBeta(key) {
  if (/LayerNorm\.weight$/.test(key)) return key.replace(/weight$/, 'gamma');
  if (/LayerNorm\.bias$/.test(key)) return key.replace(/bias$/, 'beta');
  return undefined;
}

const ENCODER_TRAITS = { norm: 'layernorm', encoder: true, learnedPositions: true };

/** The embeddings and the masked-LM head of an encoder whose weights start `p` and whose head's keys `head` gives (or none). */
function encoderModel({ get, f32, has }, a, p, head) {
  const E = a.embedDim, V = a.vocabSize;
  const norm = (key) => ({ weight: f32(key + '.weight', [E]), bias: f32(key + '.bias', [E]) });
  const embedding = get(p + 'embeddings.word_embeddings.weight', [V, E]);
  const parts = {
    embedding,
    positions: get(p + 'embeddings.position_embeddings.weight', [a.positionRowCount, E]),
    tokenTypes: a.typeVocabSize > 0 ? get(p + 'embeddings.token_type_embeddings.weight', [a.typeVocabSize, E]) : null,
    embedNorm: norm(p + 'embeddings.LayerNorm'),
    finalNorm: null,
    mlmHead: null,
    unembedding: null,
  };
  if (!has(head.dense + '.weight')) return parts;
  parts.mlmHead = { dense: get(head.dense + '.weight', [E, E]), denseBias: f32(head.dense + '.bias', [E]), norm: norm(head.norm) };
  parts.unembedding = a.tiedUnembedding || !has(head.decoder + '.weight') ? embedding : get(head.decoder + '.weight', [V, E]);
  parts.unembeddingBias = f32(head.bias, [V]);
  return parts;
}

/** One post-LN layer of BERT's layout under `p` (bert.encoder.layer.N. / roberta.encoder.layer.N.). */
function encoderLayer({ get, f32 }, a, p) {
  const { embedDim: E, hiddenDim: I } = a;
  const w = (key, shape) => f32(key, shape);
  return {
    attention: {
      q: w(p + 'attention.self.query.weight', [E, E]), qBias: w(p + 'attention.self.query.bias', [E]),
      k: w(p + 'attention.self.key.weight', [E, E]), kBias: w(p + 'attention.self.key.bias', [E]),
      v: w(p + 'attention.self.value.weight', [E, E]), vBias: w(p + 'attention.self.value.bias', [E]),
      o: w(p + 'attention.output.dense.weight', [E, E]), oBias: w(p + 'attention.output.dense.bias', [E]),
    },
    // Post-LN: norm1 after the attention's residual add (TransformerLens' ln1), norm2 after the MLP's (ln2).
    norm1: { weight: w(p + 'attention.output.LayerNorm.weight', [E]), bias: w(p + 'attention.output.LayerNorm.bias', [E]) },
    norm2: { weight: w(p + 'output.LayerNorm.weight', [E]), bias: w(p + 'output.LayerNorm.bias', [E]) },
    up: { tensor: get(p + 'intermediate.dense.weight', [I, E]), bias: w(p + 'intermediate.dense.bias', [I]) },
    down: { tensor: get(p + 'output.dense.weight', [E, I]), bias: w(p + 'output.dense.bias', [E]) },
  };
}

export const bert = {
  name: 'bert',
  modelTypes: ['bert'],
  traits: ENCODER_TRAITS,
  architecture: (config) => encoderArchitecture(config, 'bert'),
  /** gamma / beta for LayerNorm weight / bias; sentence-transformers' BertModel files without the 'bert.' prefix. */
  aliases: (key) => {
    const bare = key.startsWith('bert.') ? key.slice(5) : null;
    return [gammaBeta(key), bare, bare && gammaBeta(bare)].filter(Boolean);
  },
  model: (ctx, a) => encoderModel(ctx, a, 'bert.', {
    dense: 'cls.predictions.transform.dense', norm: 'cls.predictions.transform.LayerNorm',
    decoder: 'cls.predictions.decoder', bias: 'cls.predictions.bias',
  }),
  layer: (ctx, a, l) => encoderLayer(ctx, a, `bert.encoder.layer.${l}.`),
};

export const roberta = {
  name: 'roberta',
  modelTypes: ['roberta'],
  traits: ENCODER_TRAITS,
  architecture: (config) => encoderArchitecture(config, 'roberta'),
  aliases: (key) => {
    const bare = key.startsWith('roberta.') ? key.slice(8) : null;
    return [gammaBeta(key), bare, bare && gammaBeta(bare)].filter(Boolean);
  },
  model: (ctx, a) => encoderModel(ctx, a, 'roberta.', {
    dense: 'lm_head.dense', norm: 'lm_head.layer_norm', decoder: 'lm_head.decoder', bias: 'lm_head.bias',
  }),
  layer: (ctx, a, l) => encoderLayer(ctx, a, `roberta.encoder.layer.${l}.`),
};

/** DistilBERT's config keys read as BERT's (dim, n_heads, n_layers, hidden_dim, activation). */
function distilbertArchitecture(config) {
  refuseKey(config, 'sinusoidal_pos_embds', (v) => v === false || v === null || v === undefined,
    'only learned positions (sinusoidal_pos_embds: false), as the released checkpoints have them');
  const renamed = {
    ...config, hidden_size: config.dim, num_attention_heads: config.n_heads, num_hidden_layers: config.n_layers,
    intermediate_size: config.hidden_dim, hidden_act: config.activation ?? 'gelu', type_vocab_size: 0,
    layer_norm_eps: config.layer_norm_eps ?? 1e-12,
  };
  for (const key of ['dim', 'n_heads', 'n_layers', 'hidden_dim']) {
    if (config[key] === undefined) throw new TypeError(`config.json: ${key} is missing (DistilBERT's config names it so)`);
  }
  return encoderArchitecture(renamed, 'distilbert');
}

export const distilbert = {
  name: 'distilbert',
  modelTypes: ['distilbert'],
  traits: ENCODER_TRAITS,
  architecture: distilbertArchitecture,
  aliases: (key) => {
    const bare = key.startsWith('distilbert.') ? key.slice(11) : null;
    return [bare].filter(Boolean);
  },
  model: (ctx, a) => encoderModel(ctx, a, 'distilbert.', {
    dense: 'vocab_transform', norm: 'vocab_layer_norm', decoder: 'vocab_projector', bias: 'vocab_projector.bias',
  }),
  layer: (ctx, a, l) => {
    const { embedDim: E, hiddenDim: I } = a;
    const { get, f32 } = ctx;
    const p = `distilbert.transformer.layer.${l}.`;
    return {
      attention: {
        q: f32(p + 'attention.q_lin.weight', [E, E]), qBias: f32(p + 'attention.q_lin.bias', [E]),
        k: f32(p + 'attention.k_lin.weight', [E, E]), kBias: f32(p + 'attention.k_lin.bias', [E]),
        v: f32(p + 'attention.v_lin.weight', [E, E]), vBias: f32(p + 'attention.v_lin.bias', [E]),
        o: f32(p + 'attention.out_lin.weight', [E, E]), oBias: f32(p + 'attention.out_lin.bias', [E]),
      },
      // Post-LN, as BERT's: sa_layer_norm after the attention's residual add, output_layer_norm after the MLP's.
      norm1: { weight: f32(p + 'sa_layer_norm.weight', [E]), bias: f32(p + 'sa_layer_norm.bias', [E]) },
      norm2: { weight: f32(p + 'output_layer_norm.weight', [E]), bias: f32(p + 'output_layer_norm.bias', [E]) },
      up: { tensor: get(p + 'ffn.lin1.weight', [I, E]), bias: f32(p + 'ffn.lin1.bias', [I]) },
      down: { tensor: get(p + 'ffn.lin2.weight', [E, I]), bias: f32(p + 'ffn.lin2.bias', [E]) },
    };
  },
};
