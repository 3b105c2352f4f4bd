// The worker's side of the Your layer mode (web/modes/custom-layer.js is the page's side):
//   custom { embeddingsFile, weightsFile, numHeads, prefix, causal, variants, capture, steps }
//     -> the user's nn.MultiheadAttention layer on their embeddings, as a result the views draw
// The layer itself is web/custom-layer.js's. No DOM.
import { readSafetensors, stateDictFromSafetensors } from '../../bindings/js/index.js';
import { attentionPrefixes, LAYER_KEYS, parseEmbeddings, runCustomLayer } from '../custom-layer.js';

/** The Your layer mode's message, on `context` (a WorkerContext). */
export function customLayerWorker(context) {
  async function custom({ embeddingsFile, weightsFile, numHeads, prefix, causal, variants, capture = false, steps = null }) {
    const embeddings = parseEmbeddings(embeddingsFile.name, embeddingsFile.bytes);
    let names;
    try {
      names = Object.keys(readSafetensors(weightsFile.bytes).tensors);
    } catch (error) {
      throw new error.constructor(`${weightsFile.name}: ${error.message}`);
    }
    const prefixes = attentionPrefixes(names);
    if (prefixes.length === 0) {
      throw new TypeError(`${weightsFile.name}: no nn.MultiheadAttention weights (in_proj_weight or q_proj_weight) among `
        + `${names.length} tensors: ${names.slice(0, 8).join(', ')}${names.length > 8 ? ', ...' : ''}`);
    }
    const chosen = prefixes.includes(prefix) ? prefix : prefixes[0];
    const stateDict = stateDictFromSafetensors(weightsFile.bytes, { prefix: chosen });
    // Keep only this layer's own keys (a deeper prefix could also match, e.g. "attn." inside "attn.sub.").
    const own = Object.fromEntries(Object.entries(stateDict).filter(([k]) => LAYER_KEYS.includes(k)));
    const started = performance.now();
    const heads = (pairs) => (steps ? pairs.filter(([l]) => l === 0).map(([, h]) => h) : []);
    // The Steps view's patch: its second embeddings file ({ name, bytes }), read like the first.
    const patchFrom = steps?.patchFile && heads(steps.patched).length ? parseEmbeddings(steps.patchFile.name, steps.patchFile.bytes) : null;
    const ablated = heads(steps?.ablated ?? []), patched = heads(steps?.patched ?? []);
    const mode = capture || ablated.length || patched.length ? 'steps' : 'custom';
    const result = await context.onBackend(mode, (on) => runCustomLayer(on === 'webgpu' ? context.backends.gpu : context.mha, {
      embeddings, stateDict: own, numHeads, causal, variants, capture, ablated, patched, patchFrom,
    }));
    const L = embeddings.shape[0];
    return {
      ...result,
      totalMs: performance.now() - started,
      ids: null,
      labels: embeddings.labels ?? Array.from({ length: L }, (_, i) => String(i)),
      padding: embeddings.padding ?? null,
      prediction: null,
      causal,
      prefixes,
      prefix: chosen,
    };
  }

  return { custom };
}
