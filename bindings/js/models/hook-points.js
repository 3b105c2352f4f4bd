// The hook points of a model, under TransformerLens' names and with its batch-first shapes (batch
// 1): the one list that runWithCache's names, runWithHooks' hooks, the cache and the docs read.
// No DOM: worker and Node.
import { withTraits } from './families/index.js';

// Which points a model has follows its architecture's traits (families/common.js): norms (none in
// an attention-only model, TransformerLens' attn_only), rotary, a gated MLP, learned positions, a
// parallel block (attention and MLP both read resid_pre: no hook_resid_mid, as TransformerLens'
// parallel_attn_mlp blocks lack it), Gemma 2's norms after the attention and the MLP (ln1_post,
// ln2_post: hook_attn_out and hook_mlp_out come after them) and OLMo-2's blocks with those only
// (no ln1, ln2).
const normed = (a) => a.norm !== 'none';
const preNormed = (a) => normed(a) && a.preNorms;
const withMlp = (a) => a.mlp !== null;
const postNorms = (a) => a.postNorms;

/** A block's points in the order the forward reaches them; `when` says which architectures have one. */
const BLOCK_POINTS = [
  ['hook_resid_pre', (a, L) => [1, L, a.embedDim]],
  ['ln1.hook_scale', (a, L) => [1, L, 1], preNormed],
  ['ln1.hook_normalized', (a, L) => [1, L, a.embedDim], preNormed],
  ['attn.hook_q', (a, L) => [1, L, a.numHeads, a.headDim]],
  ['attn.hook_k', (a, L) => [1, L, a.numKvHeads, a.headDim]],
  ['attn.hook_v', (a, L) => [1, L, a.numKvHeads, a.headDim]],
  ['attn.hook_rot_q', (a, L) => [1, L, a.numHeads, a.headDim], (a) => a.rotary !== null],
  ['attn.hook_rot_k', (a, L) => [1, L, a.numKvHeads, a.headDim], (a) => a.rotary !== null],
  ['attn.hook_attn_scores', (a, L) => [1, a.numHeads, L, L]],
  ['attn.hook_pattern', (a, L) => [1, a.numHeads, L, L]],
  ['attn.hook_z', (a, L) => [1, L, a.numHeads, a.headDim]],
  ['attn.hook_result', (a, L) => [1, L, a.numHeads, a.embedDim]],
  ['ln1_post.hook_scale', (a, L) => [1, L, 1], postNorms],
  ['ln1_post.hook_normalized', (a, L) => [1, L, a.embedDim], postNorms],
  ['hook_attn_out', (a, L) => [1, L, a.embedDim]],
  ['hook_resid_mid', (a, L) => [1, L, a.embedDim], (a) => withMlp(a) && !a.parallelResidual],
  ['ln2.hook_scale', (a, L) => [1, L, 1], (a) => withMlp(a) && preNormed(a)],
  ['ln2.hook_normalized', (a, L) => [1, L, a.embedDim], (a) => withMlp(a) && preNormed(a)],
  ['mlp.hook_pre', (a, L) => [1, L, a.hiddenDim], withMlp],
  ['mlp.hook_pre_linear', (a, L) => [1, L, a.hiddenDim], (a) => withMlp(a) && a.mlp.gated],
  ['mlp.hook_post', (a, L) => [1, L, a.hiddenDim], withMlp],
  ['ln2_post.hook_scale', (a, L) => [1, L, 1], (a) => withMlp(a) && postNorms(a)],
  ['ln2_post.hook_normalized', (a, L) => [1, L, a.embedDim], (a) => withMlp(a) && postNorms(a)],
  ['hook_mlp_out', (a, L) => [1, L, a.embedDim], withMlp],
  ['hook_resid_post', (a, L) => [1, L, a.embedDim]],
];

const MODEL_POINTS_BEFORE = [
  ['hook_embed', (a, L) => [1, L, a.embedDim]],
  ['hook_pos_embed', (a, L) => [1, L, a.embedDim], (a) => a.learnedPositions],
];
const MODEL_POINTS_AFTER = [
  ['ln_final.hook_scale', (a, L) => [1, L, 1], normed],
  ['ln_final.hook_normalized', (a, L) => [1, L, a.embedDim], normed],
];

// An encoder's points (BERT, RoBERTa), as TransformerLens' HookedEncoder names them
// (components/bert_embed.py, bert_block.py, bert_mlm_head.py): the embeddings under `embed.` and
// their LayerNorm's output hook_full_embed; post-LN blocks, where ln1 normalizes hook_resid_mid
// (attention.output.LayerNorm) and ln2 hook_resid_post (output.LayerNorm), whose output is
// hook_normalized_resid_post (the next block's hook_resid_pre); the masked-LM head's LayerNorm.
const ENCODER_POINTS_BEFORE = [
  ['embed.hook_embed', (a, L) => [1, L, a.embedDim]],
  ['embed.hook_pos_embed', (a, L) => [1, L, a.embedDim]],
  ['embed.hook_token_type_embed', (a, L) => [1, L, a.embedDim], (a) => a.typeVocabSize > 0],
  ['embed.ln.hook_scale', (a, L) => [1, L, 1]],
  ['embed.ln.hook_normalized', (a, L) => [1, L, a.embedDim]],
  ['hook_full_embed', (a, L) => [1, L, a.embedDim]],
];
const ENCODER_BLOCK_POINTS = [
  ...BLOCK_POINTS.filter(([name]) => name.startsWith('attn.') && !name.startsWith('attn.hook_rot') || name === 'hook_resid_pre' || name === 'hook_attn_out' || name === 'hook_resid_mid'),
  ['ln1.hook_scale', (a, L) => [1, L, 1]],
  ['ln1.hook_normalized', (a, L) => [1, L, a.embedDim]],
  ['mlp.hook_pre', (a, L) => [1, L, a.hiddenDim]],
  ['mlp.hook_post', (a, L) => [1, L, a.hiddenDim]],
  ['hook_mlp_out', (a, L) => [1, L, a.embedDim]],
  ['hook_resid_post', (a, L) => [1, L, a.embedDim]],
  ['ln2.hook_scale', (a, L) => [1, L, 1]],
  ['ln2.hook_normalized', (a, L) => [1, L, a.embedDim]],
  ['hook_normalized_resid_post', (a, L) => [1, L, a.embedDim]],
];
const ENCODER_POINTS_AFTER = [
  ['mlm_head.ln.hook_scale', (a, L) => [1, L, 1], (a) => a.mlmHead],
  ['mlm_head.ln.hook_normalized', (a, L) => [1, L, a.embedDim], (a) => a.mlmHead],
];

/**
 * The model's hook points: name -> shape(L) (the shape for a run of L tokens), in forward order.
 * Built once per model.
 */
export function hookPoints(architecture) {
  const a = withTraits(architecture);
  const points = new Map();
  const add = (prefix) => ([name, shape, when]) => {
    if (!when || when(a)) points.set(prefix + name, (L) => shape(a, L));
  };
  if (a.encoder) {
    ENCODER_POINTS_BEFORE.forEach(add(''));
    for (let l = 0; l < a.numLayers; l++) ENCODER_BLOCK_POINTS.forEach(add(`blocks.${l}.`));
    ENCODER_POINTS_AFTER.forEach(add(''));
    return points;
  }
  MODEL_POINTS_BEFORE.forEach(add(''));
  for (let l = 0; l < a.numLayers; l++) BLOCK_POINTS.forEach(add(`blocks.${l}.`));
  MODEL_POINTS_AFTER.forEach(add(''));
  return points;
}

/** The error for a name the model does not have: what was asked, and how names are spelled. */
export function unknownHookError(what, name, points) {
  const hint = typeof name === 'string' && /^blocks\.\d+\./.test(name) && !points.has(name)
    && points.has(name.replace(/^blocks\.\d+\./, 'blocks.0.'))
    ? `the model has blocks 0 to ${[...points.keys()].filter((n) => n.endsWith('.hook_resid_pre')).length - 1}`
    : `names look like 'blocks.0.attn.hook_pattern', 'blocks.0.hook_resid_pre', 'hook_embed' (model.hookNames lists all ${points.size})`;
  return new TypeError(`${what}: unknown hook point ${JSON.stringify(name)}; ${hint}`);
}
