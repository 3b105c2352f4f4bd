// The worker's side of the default model's runs (the text box, with the Steps view's captures,
// ablations and patches) and of Generate (web/modes/generate.js is the page's side):
//   run { text, padding, steps } -> a result the page's views draw
//   generate { text, changes, count, temperature, topK, seed, useCache, steps } -> progress
//     messages ({ prompt }, then { tokens, prediction, cacheLength }), then { reused, cacheLength, changed }
//   stop -> { cacheLength }
// The model and its sessions are the worker context's (web/worker-context.js). No DOM.
import { topK, tokenize } from '../model.js';
import { zPatch } from '../z-patch.js';
import { buffersOf, lostReason, yieldToMessages } from '../worker-context.js';

/** The messages of the default model's runs and of Generate, on `context` (a WorkerContext). */
export function generateWorker(context) {
  /**
   * The Steps view's z patches (docs/steps.md), per layer: zeros for the `ablated` heads, and for the
   * `patched` heads their z on `patchText` (as many tokens as the text shown: activation patching).
   * Heads are [layer, head] pairs. `generated`: the token ids Generate added after the text; the
   * second text is followed by the same tokens, so its z covers every position.
   */
  async function zPatches({ ablated = [], patched = [], patchText = '' }, L, keyPaddingMask, generated = [], on = context.model) {
    if (ablated.length === 0 && patched.length === 0) return [];
    const { model } = context;
    let other = null;
    if (patched.length > 0) {
      const ids = [...tokenize(patchText, model.vocab).ids, ...generated];
      const padding = keyPaddingMask ? keyPaddingMask.reduce((n, p) => n + p, 0) : 0;
      if (ids.length !== L - padding) {
        const n = generated.length;
        throw new RangeError(`patch: the second text has ${ids.length - 1 - n} characters; patching needs as many as the text shown (${L - padding - 1 - n})`);
      }
      for (let i = 0; i < padding; i++) ids.push(model.vocab.bos);
      other = (await on.forwardAsync(ids, { keyPaddingMask, capture: true })).layers;  // (on the backend that runs the view)
    }
    const H = model.numHeads, Dv = model.dModel / H;
    const of = (pairs, l) => pairs.filter(([layer]) => layer === l).map(([, h]) => h);
    return Array.from({ length: model.numLayers }, (_, l) => zPatch(of(ablated, l), of(patched, l), other?.[l].captured.z.data, L, H, Dv));
  }

  /**
   * steps: the Steps view is open: capture every layer's steps, and apply its ablations and patches.
   * mode: 'default', or 'generate' for Generate's prompt.
   */
  async function run({ text, padding = 0, steps = null }, mode = 'default') {
    const { model } = context;
    const { ids, labels } = tokenize(text, model.vocab);
    // New text ends a generation; the caches keep what it shares with the text they hold.
    const cacheLength = context.stopGenerating(ids);
    // Padding positions: <bos> tokens the keyPaddingMask hides, to show how padded keys look.
    const paddingMask = padding > 0 ? new Uint8Array(ids.length + padding).fill(1, ids.length) : null;
    for (let i = 0; i < padding; i++) {
      ids.push(model.vocab.bos);
      labels.push('<pad>');
    }
    const started = performance.now();
    const { layers, logits, wasmMs, backend } = await context.onBackend(steps ? 'steps' : mode, async (on) => {
      const running = on === 'webgpu' ? context.gpuModel : model;
      const patches = steps ? await zPatches(steps, ids.length, paddingMask, [], running) : [];
      return running.forwardAsync(ids, { keyPaddingMask: paddingMask, capture: Boolean(steps), patches });
    });
    const V = model.vocab.tokens.length;
    const last = ids.length - padding - 1;
    return {
      text, ids, labels, layers, wasmMs, totalMs: performance.now() - started, backend,
      padding: paddingMask,
      prediction: topK(Array.from(logits.subarray(last * V, (last + 1) * V)), model.vocab.tokens, 5),
      causal: true,
      config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads },
      cacheLength,
      steps,
    };
  }

  /**
   * Continues `text` by `count` tokens (GenerationSession.generate). Progress goes to the page in
   * batches, at most ~30 a second: first { prompt } (the prompt's full forward, for the views), then
   * { tokens: [{ id, label, layers, attentionMs, stepMs }], prediction, cacheLength }.
   */
  async function generate({ text, changes = null, ...options }, progress) {
    // The Steps view's ablated and patched heads (`changes`, as run's `steps`): the prompt and every
    // step run the whole text with them, without the cache (its keys and values are the unchanged
    // model's); a patch's second text is followed by the same generated tokens.
    const changed = Boolean(changes && (changes.ablated.length || changes.patched.length));
    const mode = changed || options.steps ? 'steps' : 'generate';
    const prompt = await run({ text, steps: changed ? changes : null }, mode);
    const { model } = context;
    const generating = context.sessionFor(mode);
    const patches = changed ? (ids) => zPatches(changes, ids.length, null, ids.slice(prompt.ids.length), generating.model) : null;
    const steps = generating.generate(prompt.ids, { ...options, patches });  // options: { count, temperature, topK, seed, useCache, steps }
    progress({ prompt }, buffersOf(prompt.layers));
    let batch = [];
    let last = null;
    let posted = performance.now();
    const flush = () => {
      if (batch.length === 0) return;
      // The Steps view draws the newest token: only the batch's last one keeps its steps.
      for (const token of batch.slice(0, -1)) for (const layer of token.layers) delete layer.captured;
      progress({
        tokens: batch,
        prediction: topK(Array.from(last.logits), model.vocab.tokens, 5),
        cacheLength: last.cacheLength,
      }, batch.flatMap((t) => buffersOf(t.layers)));
      batch = [];
      posted = performance.now();
    };
    for (;;) {
      let next;
      try {
        next = await steps.next();
      } catch (error) {
        // A device lost mid-run: the tokens so far stay; the page says so and the next run is on wasm.
        if (generating === context.session || !/device was lost/.test(error.message)) throw error;
        context.backends.lose(`the WebGPU device was lost while generating (${lostReason(error)})`);
        flush();
        return { reused: 0, cacheLength: 0, changed, lost: true };
      }
      const { value, done } = next;
      if (done) {
        flush();
        return { reused: value.reused, cacheLength: generating.cacheLength, changed };
      }
      last = value;
      batch.push({
        id: value.id, label: model.vocab.tokens[value.id], layers: value.layers,
        attentionMs: value.attentionMs, stepMs: value.stepMs,
      });
      if (performance.now() - posted >= 33) {
        flush();
        await yieldToMessages();
      }
    }
  }

  return {
    run: (args) => run(args),  // (run's second parameter is its mode, not progress)
    generate,
    stop: () => ({ cacheLength: context.stopGenerating() }),
  };
}
