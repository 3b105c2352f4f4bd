// Activation patching, TransformerLens' patching.py sweeps: the corrupted ids run again with one
// slice of one activation copied in from the clean run, for every slice, and each run scored.
// A patch at layer l changes nothing before it, so each run starts there from the corrupted run's
// cache (HookedModel.runFrom) and recomputes only what follows. A head's output is its share of
// hook_attn_out (hook_result, z_h · W_O[h]): patching the head's z, as TransformerLens does, is
// the same as swapping that share, so a head's patch starts from its layer's attention output.
import { abortError, checkIds, checkOptions, refuseEncoder } from './hooked-model.js';

const OVERS = {
  resid_pre: { hooks: ['hook_resid_pre'], byPosition: true },
  attn_out: { hooks: ['hook_attn_out', 'hook_resid_pre'], byPosition: true },
  // (resid_mid is resid_pre + attn_out, bit for bit; a parallel block has no resid_mid)
  mlp_out: { hooks: ['hook_mlp_out', 'hook_attn_out', 'hook_resid_pre'], byPosition: true },
  head_out: { hooks: ['attn.hook_result', 'hook_attn_out', 'hook_resid_pre'], byPosition: false },
  head_out_by_pos: { hooks: ['attn.hook_result', 'hook_attn_out', 'hook_resid_pre'], byPosition: true },
};

const tokenId = (what, id, V) => {
  if (!Number.isInteger(id) || id < 0 || id >= V) throw new RangeError(`activationPatching: ${what} must be a token id in [0, ${V}), got ${id}`);
  return id;
};

/** The row `pos` of [L, width] rows. */
const row = (data, pos, width) => data.subarray(pos * width, (pos + 1) * width);

/** a + b as a new array. */
function sum(a, b) {
  const out = Float32Array.from(a);
  for (let i = 0; i < out.length; i++) out[i] += b[i];
  return out;
}

/** The attention's output before its post-norm: Σ_h result [L, H, E] + b_O. */
function attentionOutput(result, bias, L, H, E) {
  const out = new Float32Array(L * E);
  for (let t = 0; t < L; t++) {
    for (let h = 0; h < H; h++) {
      for (let e = 0; e < E; e++) out[t * E + e] += result[(t * H + h) * E + e];
    }
    if (bias) for (let e = 0; e < E; e++) out[t * E + e] += bias[e];
  }
  return out;
}

// Patched runs that start at the same layer go through it side by side, this many at a time: the
// products run faster on more rows (a 20-token run's MLP product at 10 GFLOPS, 80 rows' at 31 on
// one wasm thread), and the memory stays a few batches of activations.
const BATCH = 8;

/** A macrotask between runs, so that a worker sees a cancel message (and a page can paint). */
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * The sweep `over` ('resid_pre', 'attn_out', 'mlp_out': [layers, positions]; 'head_out':
 * [layers, heads]; 'head_out_by_pos': [layers, positions, heads]) as { data, shape }. Each value is
 * the logit difference answer − wrong at the last position, normalized to 0 for the corrupted run
 * and 1 for the clean one; or `metric(logits)`'s value (logits { data, shape: [1, pos, vocab] }),
 * not normalized. `onProgress(done, total)`; `signal` (an AbortSignal) rejects with an AbortError.
 */
export async function activationPatching(model, options = {}) {
  checkOptions('activationPatching', options, ['clean', 'corrupted', 'answer', 'wrong', 'over', 'metric', 'onProgress', 'signal']);
  const { clean, corrupted, answer, wrong, over, metric = null, onProgress = null, signal = null } = options;
  refuseEncoder('activationPatching', model.config, "its sweeps restart the forward from a patched residual of a pre-LN decoder's stream, and its metric is the next-token logit difference at the last position; on an encoder, patch with runWithHooks and read the logits at the [MASK] position");
  const { numLayers, numHeads: H, embedDim: E, vocabSize: V, maxPositions } = model.config;
  if (!(over in OVERS)) {
    throw new TypeError(`activationPatching: over must be one of ${Object.keys(OVERS).map((o) => `'${o}'`).join(', ')}, got ${JSON.stringify(over)}`);
  }
  if (over === 'mlp_out' && model.config.normalization === 'none') {
    throw new TypeError("activationPatching: over 'mlp_out': the model is attention-only (it has no MLPs)");
  }
  const cleanIds = checkIds('activationPatching: clean', clean, V, maxPositions);
  const corruptedIds = checkIds('activationPatching: corrupted', corrupted, V, maxPositions);
  if (cleanIds.length !== corruptedIds.length) {
    throw new RangeError(`activationPatching: clean is ${cleanIds.length} tokens and corrupted ${corruptedIds.length}; patching needs two of the same length`);
  }
  if (metric !== null && typeof metric !== 'function') throw new TypeError(`activationPatching: metric must be a function of the logits, got ${typeof metric}`);
  const L = cleanIds.length;
  let score;
  if (metric) {
    score = async (result) => {
      const value = await metric({ data: result.logits, shape: [1, L, V] });
      if (typeof value !== 'number') throw new TypeError(`activationPatching: metric must return a number, got ${typeof value}`);
      return value;
    };
  } else {
    tokenId('answer', answer, V);
    tokenId('wrong', wrong, V);
    // The logit difference is one dot product with the final norm's last row: no unembedding
    // (two, each logit capped, where the model caps its logits: Gemma 2).
    const t = model.transformer;
    const cap = t.architecture.finalSoftcap;
    const direction = t.unembeddingRow(answer);
    const other = t.unembeddingRow(wrong);
    if (!cap) for (let i = 0; i < E; i++) direction[i] -= other[i];
    const dot = (a, b) => {
      let s = 0;
      for (let i = 0; i < E; i++) s += a[i] * b[i];
      return s;
    };
    score = async ({ residual }) => {
      const last = t.normalize(row(residual, L - 1, E), t.finalNorm);
      if (!cap) return dot(last, direction);
      return cap * Math.tanh(dot(last, direction) / cap) - cap * Math.tanh(dot(last, other) / cap);
    };
  }
  const output = metric ? 'logits' : 'residual';
  const { hooks, byPosition } = OVERS[over];
  const names = Array.from({ length: numLayers }, (_, l) => hooks.map((h) => `blocks.${l}.${h}`)).flat();
  const cached = async (ids) => {
    const run = model.hookRun(L, { keep: new Set(names), what: 'activationPatching' });
    const result = await model.runFrom(ids, run, { output: 'both' });
    return { score: await score(result), get: (name) => run.kept.get(name).data };
  };
  const cleanRun = await cached(cleanIds);
  const corruptedRun = await cached(corruptedIds);
  const span = cleanRun.score - corruptedRun.score;
  const normalized = metric ? (value) => value : (value) => (value - corruptedRun.score) / span;

  const parallel = model.transformer.architecture.parallelResidual;
  const positions = byPosition ? L : 1;
  const perLayer = over.startsWith('head') ? positions * H : positions;
  const total = numLayers * perLayer;
  const data = new Float32Array(total);
  const plain = model.hookRun(L, { what: 'activationPatching' });
  // Each patched run as where it starts: { layer, stage, resid [L, E] } (or { resid } alone: the
  // final residual, when the patch is after the last layer's MLP).
  const start = (l, i) => {
    const p = `blocks.${l}.`;
    if (over === 'resid_pre') {
      const resid = Float32Array.from(corruptedRun.get(p + 'hook_resid_pre'));
      resid.set(row(cleanRun.get(p + 'hook_resid_pre'), i, E), i * E);
      return { layer: l, stage: 'pre', resid };
    }
    const residPre = corruptedRun.get(p + 'hook_resid_pre');
    // After the attention: the residual, and what a parallel block's MLP reads (resid_pre).
    const mid = (attnOut) => ({ layer: l, stage: 'mid', resid: sum(residPre, attnOut), ...(parallel ? { residPre } : {}) });
    if (over === 'attn_out') {
      const attnOut = Float32Array.from(corruptedRun.get(p + 'hook_attn_out'));
      attnOut.set(row(cleanRun.get(p + 'hook_attn_out'), i, E), i * E);
      return mid(attnOut);
    }
    if (over === 'mlp_out') {
      const mlpOut = Float32Array.from(corruptedRun.get(p + 'hook_mlp_out'));
      mlpOut.set(row(cleanRun.get(p + 'hook_mlp_out'), i, E), i * E);
      const resid = sum(sum(residPre, corruptedRun.get(p + 'hook_attn_out')), mlpOut);
      return l + 1 < numLayers ? { layer: l + 1, stage: 'pre', resid } : { resid };
    }
    // head_out: head h at every position; head_out_by_pos: head h at position pos.
    const h = i % H, pos = byPosition ? Math.floor(i / H) : -1;
    const cleanResult = cleanRun.get(p + 'attn.hook_result'), corruptedResult = corruptedRun.get(p + 'attn.hook_result');
    // With a norm after the attention (Gemma 2) the heads' shares add up before it: Σ_h result + b_O, normalized.
    const { postAttnNorm, outBias } = model.transformer.layer(l);
    const attnOut = postAttnNorm ? attentionOutput(corruptedResult, outBias, L, H, E) : Float32Array.from(corruptedRun.get(p + 'hook_attn_out'));
    for (let t = 0; t < L; t++) {
      if (pos >= 0 && t !== pos) continue;
      const at = (t * H + h) * E;
      for (let e = 0; e < E; e++) attnOut[t * E + e] += cleanResult[at + e] - corruptedResult[at + e];
    }
    return mid(postAttnNorm ? model.transformer.normalize(attnOut, postAttnNorm) : attnOut);
  };
  // The scores of runs that start at the same place, side by side as one batch.
  const scoreBatch = async (starts) => {
    const { layer, stage } = starts[0];
    const resid = new Float32Array(starts.length * L * E);
    starts.forEach((s, b) => resid.set(s.resid, b * L * E));
    const from = { layer, stage, resid };
    if (starts[0].residPre) {
      from.residPre = new Float32Array(starts.length * L * E);
      starts.forEach((s, b) => from.residPre.set(s.residPre, b * L * E));
    }
    const result = layer === undefined
      ? (metric ? { logits: model.transformer.unembed(resid) } : { residual: resid })
      : await model.runFrom(corruptedIds, plain, { from, output, batch: starts.length });
    const part = (data, b) => data.subarray(b * (data.length / starts.length), (b + 1) * (data.length / starts.length));
    const scores = [];
    for (let b = 0; b < starts.length; b++) {
      scores.push(await score(metric ? { logits: part(result.logits, b) } : { residual: part(result.residual, b) }));
    }
    return scores;
  };
  // A slice the clean run holds bit for bit as the corrupted one does (a position before the
  // first token the two texts differ in, say) patches nothing: the run is the corrupted one.
  const unchanged = (l, i) => {
    const p = `blocks.${l}.`;
    if (over.startsWith('head')) {
      const h = i % H, pos = byPosition ? Math.floor(i / H) : -1;
      const a = cleanRun.get(p + 'attn.hook_result'), b = corruptedRun.get(p + 'attn.hook_result');
      for (let t = 0; t < L; t++) {
        if (pos >= 0 && t !== pos) continue;
        for (let e = (t * H + h) * E; e < (t * H + h + 1) * E; e++) if (!Object.is(a[e], b[e])) return false;
      }
      return true;
    }
    const name = p + OVERS[over].hooks[0];
    const a = row(cleanRun.get(name), i, E), b = row(corruptedRun.get(name), i, E);
    return a.every((v, e) => Object.is(v, b[e]));
  };
  let done = 0, lastYield = performance.now();
  for (let l = 0; l < numLayers; l++) {
    const changed = [];
    for (let i = 0; i < perLayer; i++) {
      if (unchanged(l, i)) data[l * perLayer + i] = normalized(corruptedRun.score);
      else changed.push(i);
    }
    done += perLayer - changed.length;
    for (let first = 0; first < changed.length; first += BATCH) {
      if (signal?.aborted) throw abortError('activationPatching');
      const slices = changed.slice(first, first + BATCH);
      const scores = await scoreBatch(slices.map((i) => start(l, i)));
      scores.forEach((value, b) => { data[l * perLayer + slices[b]] = normalized(value); });
      done += slices.length;
      onProgress?.(done, total);
      if (performance.now() - lastYield > 50) {
        await yieldToEvents();
        lastYield = performance.now();
      }
    }
  }
  const shape = over === 'head_out' ? [numLayers, H] : over === 'head_out_by_pos' ? [numLayers, L, H] : [numLayers, L];
  return { data, shape };
}
