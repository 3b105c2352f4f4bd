// Text generation with the demo model (web/model.js), token by token: the worker's half of the
// page's Generate mode (web/modes/generate.js), and what the Node tests drive. No DOM.
//
// Two ways to the same tokens:
//   cache    one KV cache per layer (layer.createCache); a step feeds one token and attends to the
//            cached keys and values: O(tokens so far) work per token.
//   no cache the whole text goes through model.forward() again every step: O(tokens²) per token.
// Greedy decoding gives the same text both ways (to float32 rounding of the logits); so does
// sampling with the same seed.

/** The most new tokens one Generate asks for. */
export const MAX_NEW_TOKENS = 2000;
/** Tokens each layer's cache holds (prompt + generated); 2 layers x 4 heads x 4096 x 32 floats = 4 MB. */
export const CACHE_CAPACITY = 4096;

/** A repeatable stream of uniform numbers in [0, 1) from a 32-bit seed (mulberry32). */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Checks the sampling options; throws a RangeError naming the one that is wrong. */
export function checkSampling({ count, temperature = 0, topK = 0, seed = 0 }) {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NEW_TOKENS) {
    throw new RangeError(`count must be an integer from 1 to ${MAX_NEW_TOKENS} (new tokens), got ${count}`);
  }
  if (!Number.isFinite(temperature) || temperature < 0) {
    throw new RangeError(`temperature must be a number >= 0 (0 = greedy), got ${temperature}`);
  }
  if (!Number.isInteger(topK) || topK < 0) throw new RangeError(`topK must be an integer >= 0 (0 = every token), got ${topK}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`seed must be an integer from 0 to ${0xffffffff}, got ${seed}`);
  }
}

/**
 * The next token from one logits row. temperature 0 is greedy (the first largest logit);
 * otherwise a draw from softmax(logits / temperature) over the topK largest logits (0 = all).
 * Tokens in `banned` (<bos>, <unk>: they are not text) are never chosen.
 */
export function chooseToken(logits, { temperature = 0, topK = 0 }, random, banned = []) {
  const allowed = [];
  for (let id = 0; id < logits.length; id++) if (!banned.includes(id)) allowed.push(id);
  if (temperature === 0) return allowed.reduce((best, id) => (logits[id] > logits[best] ? id : best), allowed[0]);
  // Stable sort keeps equal logits in id order, so a seed always means the same draw.
  const ranked = allowed.sort((a, b) => logits[b] - logits[a] || a - b);
  const candidates = topK > 0 ? ranked.slice(0, topK) : ranked;
  const max = logits[candidates[0]];
  const weights = candidates.map((id) => Math.exp((logits[id] - max) / temperature));
  let u = random() * weights.reduce((sum, w) => sum + w, 0);
  for (let k = 0; k < candidates.length; k++) {
    u -= weights[k];
    if (u < 0) return candidates[k];
  }
  return candidates[candidates.length - 1];
}

/**
 * A whole text's captured steps (docs/steps.md, unbatched) cut to its last query row, the layout
 * a cached step captures: q, scores, logits, pattern [H, 1, ·], z and result [1, H, ·]; k and v whole.
 */
export function lastQueryRow(captured, L) {
  const row = {};
  for (const [name, t] of Object.entries(captured)) {
    if (name === 'k' || name === 'v') {
      row[name] = t;
    } else if (name === 'z' || name === 'result') {  // [L, H, X]
      row[name] = { data: t.data.slice((L - 1) * (t.data.length / L)), shape: [1, ...t.shape.slice(1)] };
    } else {  // [H, L, X]
      const [H, , X] = t.shape;
      const data = new Float32Array(H * X);
      for (let h = 0; h < H; h++) data.set(t.data.subarray((h * L + L - 1) * X, (h * L + L) * X), h * X);
      row[name] = { data, shape: [H, 1, X] };
    }
  }
  return row;
}

function commonPrefix(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/**
 * The worker's generation state: the model, one KV cache per layer, and the token ids the caches
 * hold. A new prompt keeps the longest prefix it shares with them (cache.truncate) and runs only the rest.
 */
export class GenerationSession {
  #caches;
  #cachedIds = [];
  #run = 0;  // bumped by stop(): a running generation checks it between steps

  constructor(model) {
    this.model = model;
    this.#caches = model.createCaches(CACHE_CAPACITY);
    this.banned = [model.vocab.bos, model.vocab.unk];
  }

  /** Tokens the caches hold. */
  get cacheLength() { return this.#caches[0].length; }

  /** Ends any running generation (it returns after its current step). */
  stop() { this.#run += 1; }

  /**
   * Drops what the caches hold beyond the longest prefix shared with `ids` (at most `limit` tokens):
   * an edit of earlier text keeps everything before it. Returns the tokens kept.
   */
  keepPrefix(ids, limit = ids.length) {
    const keep = Math.min(commonPrefix(this.#cachedIds, ids), limit);
    for (const cache of this.#caches) cache.truncate(keep);
    this.#cachedIds.length = keep;
    return keep;
  }

  /**
   * Generates `count` tokens after `promptIds`, one step at a time: an async generator (the model's
   * layers are called through forwardAsync, so a model on the WebGPU backend generates too) whose every value
   * is one token with the newest row of attention, for the views:
   *   { id, layers: [{ weights [H, position + 1], output [E] }], logits [V] (of the token after),
   *     attentionMs, stepMs, cacheLength }
   * Its return value says how many prompt tokens the cache already held (`reused`).
   * options: { count, temperature, topK, seed, useCache, steps, patches }. With `steps`, each
   * layer of a token also has its steps: its one query row against the cache (DemoModel.extend's
   * capture), or the whole text's last row without it.
   * `patches`: (ids) => each layer's z patch for the text `ids` (DemoModel.forward's `patches`:
   * ablated or patched heads); with it every step runs the whole text again, whatever useCache
   * says: a cache would hold the later layers' keys and values of the unchanged model.
   * A stop() ends it between steps.
   * Bad options throw here, before any step.
   */
  generate(promptIds, { count, temperature = 0, topK = 0, seed = 0, useCache = true, steps = false, patches = null }) {
    checkSampling({ count, temperature, topK, seed });
    if (promptIds.length + count > CACHE_CAPACITY) {
      throw new RangeError(`the prompt (${promptIds.length} tokens) plus count (${count}) must fit in ${CACHE_CAPACITY} tokens`);
    }
    if (patches !== null && typeof patches !== 'function') throw new TypeError('patches must be a function of the token ids, or null');
    return this.#steps(promptIds, { count, temperature, topK, seed, useCache: useCache && !patches, steps, patches });
  }

  async *#steps(promptIds, { count, temperature, topK, seed, useCache, steps, patches }) {
    this.stop();
    const run = this.#run;
    const random = seededRandom(seed);
    const ids = [...promptIds];
    let logits;
    let reused = 0;
    if (useCache) {
      // The last prompt token always runs: its logits choose the first new token.
      reused = this.keepPrefix(ids, ids.length - 1);
      logits = (await this.model.extendAsync(ids.slice(reused), this.#caches)).logits;
      this.#cachedIds = [...ids];
    } else {
      const V = this.model.vocab.tokens.length;
      logits = (await this.model.forwardAsync(ids, { patches: (await patches?.(ids)) ?? [] })).logits.slice((ids.length - 1) * V);
    }
    for (let n = 0; n < count && run === this.#run; n++) {
      const started = performance.now();
      const id = chooseToken(logits, { temperature, topK }, random, this.banned);
      ids.push(id);
      let step;
      if (useCache) {
        step = await this.model.extendAsync([id], this.#caches, { needWeights: true, capture: steps });
        this.#cachedIds.push(id);
      } else {
        step = await this.#recompute(ids, { capture: steps, patches });
      }
      logits = step.logits;
      yield {
        id, layers: step.layers, logits, attentionMs: step.wasmMs, stepMs: performance.now() - started,
        cacheLength: useCache ? this.cacheLength : 0,
      };
    }
    return { reused };
  }

  /**
   * No cache: the whole text again (with `patches`, its changed heads), keeping its last row (what
   * a cached step computes); with `capture`, the last row's steps too.
   */
  async #recompute(ids, { capture = false, patches = null } = {}) {
    const L = ids.length;
    const { layers, logits, wasmMs } = await this.model.forwardAsync(ids, { capture, patches: (await patches?.(ids)) ?? [] });
    const V = this.model.vocab.tokens.length;
    const E = this.model.dModel;
    const H = this.model.numHeads;
    return {
      logits: logits.slice((L - 1) * V),
      wasmMs,
      layers: layers.map(({ weights, output, input, captured }) => {
        const row = new Float32Array(H * L);
        for (let h = 0; h < H; h++) row.set(weights.subarray((h * L + L - 1) * L, (h * L + L) * L), h * L);
        return {
          weights: row, output: output.slice((L - 1) * E),
          ...(capture && { input: input.slice((L - 1) * E), captured: lastQueryRow(captured, L) }),
        };
      }),
    };
  }

  dispose() {
    this.stop();
    for (const cache of this.#caches) cache.dispose();
  }
}
