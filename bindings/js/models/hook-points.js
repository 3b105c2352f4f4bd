// The hook points of a model, under TransformerLens' names and with its batch-first shapes (batch
// 1): the one list that runWithCache's names, runWithHooks' hooks, the cache and the docs read.
// Which points a model has depends on its family: learned positions (hook_pos_embed), rotary
// (hook_rot_q / hook_rot_k) and a gated MLP (mlp.hook_pre_linear). No DOM: worker and Node.

// An attention-only model (TransformerLens' attn_only) has no norms, no MLP and so no resid_mid.
const hasNormsAndMlp = (a) => !a.attentionOnly;

/** A block's points in the order the forward reaches them; `when` says which families have one. */
const BLOCK_POINTS = [
  ['hook_resid_pre', (a, L) => [1, L, a.embedDim]],
  ['ln1.hook_scale', (a, L) => [1, L, 1], hasNormsAndMlp],
  ['ln1.hook_normalized', (a, L) => [1, L, a.embedDim], hasNormsAndMlp],
  ['attn.hook_q', (a, L) => [1, L, a.numHeads, a.headDim]],
  ['attn.hook_k', (a, L) => [1, L, a.numKvHeads, a.headDim]],
  ['attn.hook_v', (a, L) => [1, L, a.numKvHeads, a.headDim]],
  ['attn.hook_rot_q', (a, L) => [1, L, a.numHeads, a.headDim], (a) => a.rotary],
  ['attn.hook_rot_k', (a, L) => [1, L, a.numKvHeads, a.headDim], (a) => a.rotary],
  ['attn.hook_attn_scores', (a, L) => [1, a.numHeads, L, L]],
  ['attn.hook_pattern', (a, L) => [1, a.numHeads, L, L]],
  ['attn.hook_z', (a, L) => [1, L, a.numHeads, a.headDim]],
  ['attn.hook_result', (a, L) => [1, L, a.numHeads, a.embedDim]],
  ['hook_attn_out', (a, L) => [1, L, a.embedDim]],
  ['hook_resid_mid', (a, L) => [1, L, a.embedDim], hasNormsAndMlp],
  ['ln2.hook_scale', (a, L) => [1, L, 1], hasNormsAndMlp],
  ['ln2.hook_normalized', (a, L) => [1, L, a.embedDim], hasNormsAndMlp],
  ['mlp.hook_pre', (a, L) => [1, L, a.hiddenDim], hasNormsAndMlp],
  ['mlp.hook_pre_linear', (a, L) => [1, L, a.hiddenDim], (a) => a.gatedMlp],
  ['mlp.hook_post', (a, L) => [1, L, a.hiddenDim], hasNormsAndMlp],
  ['hook_mlp_out', (a, L) => [1, L, a.embedDim], hasNormsAndMlp],
  ['hook_resid_post', (a, L) => [1, L, a.embedDim]],
];

const MODEL_POINTS_BEFORE = [
  ['hook_embed', (a, L) => [1, L, a.embedDim]],
  ['hook_pos_embed', (a, L) => [1, L, a.embedDim], (a) => a.learnedPositions],
];
const MODEL_POINTS_AFTER = [
  ['ln_final.hook_scale', (a, L) => [1, L, 1], hasNormsAndMlp],
  ['ln_final.hook_normalized', (a, L) => [1, L, a.embedDim], hasNormsAndMlp],
];

/** What the point lists ask of an architecture (architecture.js' hyperparameters). */
function traits(architecture) {
  const llama = architecture.family === 'llama';
  return { ...architecture, rotary: llama, gatedMlp: llama, learnedPositions: !llama, attentionOnly: architecture.family === 'attn-only' };
}

/**
 * The model's hook points: name -> shape(L) (the shape for a run of L tokens), in forward order.
 * Built once per model.
 */
export function hookPoints(architecture) {
  const a = traits(architecture);
  const points = new Map();
  const add = (prefix) => ([name, shape, when]) => {
    if (!when || when(a)) points.set(prefix + name, (L) => shape(a, L));
  };
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
