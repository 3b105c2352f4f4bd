// The Your model mode's result for an encoder (BERT, RoBERTa, DistilBERT), from mha-wasm/models'
// runWithCache: every head of every layer (bidirectional: causal false), each layer's attention
// output, the Steps view's steps when it is open (from the hook points), and the fill-mask
// prediction: the top tokens of the masked-LM logits at each [MASK] / <mask> position, or with none
// at the last non-special position. No logit lens (a post-LN encoder's residual stream is not the
// head's input); ablating or patching a head is refused by name. No DOM: the page's worker.
import { swapLeading } from '../../bindings/js/models/layout.js';
import { topTokens } from './top-tokens.js';

const STEP_POINTS = ['hook_resid_pre', 'attn.hook_q', 'attn.hook_k', 'attn.hook_v', 'attn.hook_attn_scores', 'attn.hook_z', 'attn.hook_result'];

/**
 * The fill-mask prediction: { masks: [{ position, token, top }] for each [MASK] / <mask>,
 * prediction (the first mask's top tokens, or the last non-special position's), title }.
 */
function fillMask(tokenizer, checkpoint, ids, labels, logits) {
  if (!logits) {
    return { masks: [], prediction: null, title: 'No prediction: the checkpoint has no masked-LM head' };
  }
  const V = logits.shape[2];
  const at = (i) => topTokens(logits.data.subarray(i * V, (i + 1) * V), tokenizer);
  const maskId = tokenizer.maskTokenId;
  const masks = [];
  ids.forEach((id, position) => {
    if (maskId !== null && id === maskId) masks.push({ position, token: labels[position], top: at(position) });
  });
  if (masks.length) {
    const { position, token, top } = masks[0];
    const others = masks.length > 1 ? ` (1 of ${masks.length} masks: every one in the panel)` : '';
    return { masks, prediction: top, title: `Fill-mask: ${token} at position ${position}${others}` };
  }
  const special = new Set((checkpoint.tokenizerJson.added_tokens ?? []).filter((t) => t.special).map((t) => t.id));
  let position = ids.length - 1;
  while (position > 0 && special.has(ids[position])) position--;
  const mask = tokenizer.decodeOne(maskId ?? 0);
  return {
    masks, prediction: at(position),
    title: `No ${maskId === null ? 'mask token' : mask} in the text: the prediction at position ${position} '${labels[position]}' (the last non-special token)`,
  };
}

/**
 * The page's result fields for an encoder `model` (a HookedModel) on `encoded` ({ ids, labels }),
 * with the Steps view's `steps` (or null); the session adds text, backend, config and summary.
 */
export async function encoderRun(model, { ids, labels }, steps, checkpoint) {
  const { family, numLayers, numHeads: H, headDim: D, embedDim: E } = checkpoint.architecture;
  if (steps && (steps.ablated.length || steps.patched.length)) {
    throw new TypeError(`ablating or patching a head from the Steps view: not supported on an encoder (${family}): `
      + 'the page\'s Steps view edits a decoder\'s heads; on an encoder, hook_z through mha-wasm/models\' runWithHooks does it');
  }
  const L = ids.length;
  const started = performance.now();
  const names = [];
  for (let l = 0; l < numLayers; l++) {
    names.push(`blocks.${l}.attn.hook_pattern`, `blocks.${l}.hook_attn_out`);
    if (steps) names.push(...STEP_POINTS.map((name) => `blocks.${l}.${name}`));
  }
  const { logits, cache } = await model.runWithCache(ids, { names });
  const get = (l, name) => cache.get(`blocks.${l}.${name}`).data;
  // q, k, v at the hooks are [L, H, D]; the Steps view reads the layer's [H, L, D].
  const headsFirst = (data) => swapLeading(data, L, H, D);
  const layers = Array.from({ length: numLayers }, (_, l) => {
    const layer = { weights: get(l, 'attn.hook_pattern'), keys: L, output: get(l, 'hook_attn_out') };
    if (!steps) return layer;
    const scores = get(l, 'attn.hook_attn_scores');
    return {
      ...layer, input: get(l, 'hook_resid_pre'),
      captured: {
        q: { data: headsFirst(get(l, 'attn.hook_q')), shape: [H, L, D] },
        k: { data: headsFirst(get(l, 'attn.hook_k')), shape: [H, L, D] },
        v: { data: headsFirst(get(l, 'attn.hook_v')), shape: [H, L, D] },
        scores: { data: scores, shape: [H, L, L] },
        logits: { data: scores, shape: [H, L, L] },  // (no mask: the scores are the logits softmax reads)
        pattern: { data: get(l, 'attn.hook_pattern'), shape: [H, L, L] },
        z: { data: get(l, 'attn.hook_z'), shape: [L, H, D] },
        result: { data: get(l, 'attn.hook_result'), shape: [L, H, E] },
      },
    };
  });
  const fill = fillMask(model.tokenizer, checkpoint, ids, labels, logits);
  const totalMs = performance.now() - started;
  return {
    source: 'model', ids, labels, layers, wasmMs: totalMs, totalMs, padding: null, causal: false,
    encoder: true, prediction: fill.prediction, predictionTitle: fill.title, fillMask: fill.masks, lens: [],
  };
}
