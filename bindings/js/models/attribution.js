// Direct logit attribution: how much each head and each MLP writes along the answer − wrong
// direction at one position, read off a cache, with the numbers TransformerLens gives on its
// default (processed) loading while our model keeps the raw weights:
// - the final norm's cached scale divides every component (apply_ln_to_stack); for LayerNorm
//   each component is first centred over d (center_writing_weights does that to the weights);
// - the final norm's weight is folded into the direction: w ⊙ (W_U[answer] − W_U[wrong]) (fold_ln);
// - a head's share excludes its value bias (fold_value_biases moves b_V · W_O[h] into b_O; for
//   LayerNorm, b_V there already holds ln1's bias read through W_V, as fold_ln put it).
// The accumulated residual is the logit lens as numbers: each layer's resid_pre, then the final
// resid_post, each normalized by its own statistics.
import { checkOptions, refuseEncoder } from './hooked-model.js';

function needs(cache, names) {
  const missing = names.filter((name) => !cache.has(name));
  if (missing.length) {
    throw new TypeError(`directLogitAttribution: the cache lacks ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}; run runWithCache(ids) without names, or with these`);
  }
}

/** Each head's value-bias output [H, E] of layer l (value-bias.js, computed at load). */
const valueBiasOutputs = (model, l) => model.transformer.valueBiasOutputs(l);

/**
 * { heads: [layers, heads], mlps: [layers], accumulated: [layers + 1] }, each { data, shape }, of
 * the cache's run at `position` (default the last) along answer − wrong.
 */
export function directLogitAttribution(model, cache, options = {}) {
  const { answer, wrong, position } = checkOptions('directLogitAttribution', options, ['answer', 'wrong', 'position']);
  refuseEncoder('directLogitAttribution', model.config, 'a post-LN block normalizes the residual after every attention and MLP, so no head or MLP writes a direct, additive share of the logits');
  const { numLayers, numHeads: H, embedDim: E, vocabSize: V, normalization } = model.config;
  const L = cache.ids.length;
  for (const [what, id] of [['answer', answer], ['wrong', wrong]]) {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new RangeError(`directLogitAttribution: ${what} must be a token id in [0, ${V}), got ${id}`);
  }
  const pos = position ?? L - 1;
  if (!Number.isInteger(pos) || pos < 0 || pos >= L) throw new RangeError(`directLogitAttribution: position must be an integer in [0, ${L}), got ${position}`);
  // An attention-only model has no final norm (its scale is 1) and no MLPs (their shares are 0).
  const normed = normalization !== 'none';
  const names = [...(normed ? ['ln_final.hook_scale'] : []), `blocks.${numLayers - 1}.hook_resid_post`];
  for (let l = 0; l < numLayers; l++) {
    names.push(`blocks.${l}.attn.hook_result`, ...(normed ? [`blocks.${l}.hook_mlp_out`] : []), `blocks.${l}.hook_resid_pre`);
  }
  needs(cache, names);

  const t = model.transformer;
  const direction = t.unembeddingRow(answer);
  const other = t.unembeddingRow(wrong);
  const weight = t.finalNorm?.weight;
  for (let i = 0; i < E; i++) direction[i] = (weight ? weight[i] : 1) * (direction[i] - other[i]);
  const centre = normalization === 'layernorm';
  const eps = t.architecture.normEps;
  const scale = normed ? cache.get('ln_final.hook_scale').data[pos] : 1;
  // One component [E] along the direction, divided by `by` (centred first for LayerNorm).
  const along = (c, by) => {
    let mean = 0;
    if (centre) {
      for (let i = 0; i < E; i++) mean += c[i];
      mean /= E;
    }
    let dot = 0;
    for (let i = 0; i < E; i++) dot += (c[i] - mean) * direction[i];
    return dot / by;
  };
  // Its own norm's scale: √(mean of the (centred) squares + eps).
  const ownScale = (c) => {
    if (!normed) return 1;
    let mean = 0;
    if (centre) {
      for (let i = 0; i < E; i++) mean += c[i];
      mean /= E;
    }
    let squares = 0;
    for (let i = 0; i < E; i++) squares += (c[i] - mean) ** 2;
    return Math.sqrt(squares / E + eps);
  };
  const rowAt = (name, width = E, offset = 0) => cache.get(name).data.subarray(pos * width + offset, pos * width + offset + E);

  const heads = new Float32Array(numLayers * H);
  const mlps = new Float32Array(numLayers);
  const accumulated = new Float32Array(numLayers + 1);
  const c = new Float32Array(E);
  for (let l = 0; l < numLayers; l++) {
    const p = `blocks.${l}.`;
    const bias = valueBiasOutputs(model, l);
    for (let h = 0; h < H; h++) {
      const result = rowAt(p + 'attn.hook_result', H * E, h * E);
      for (let i = 0; i < E; i++) c[i] = result[i] - bias[h * E + i];
      heads[l * H + h] = along(c, scale);
    }
    if (normed) mlps[l] = along(rowAt(p + 'hook_mlp_out'), scale);
    const resid = rowAt(p + 'hook_resid_pre');
    accumulated[l] = along(resid, ownScale(resid));
  }
  const final = rowAt(`blocks.${numLayers - 1}.hook_resid_post`);
  accumulated[numLayers] = along(final, ownScale(final));
  return {
    heads: { data: heads, shape: [numLayers, H] },
    mlps: { data: mlps, shape: [numLayers] },
    accumulated: { data: accumulated, shape: [numLayers + 1] },
  };
}
