// The page's Generate mode: continues the text box's text with the default model, token by token,
// in the worker (web/generation.js), and feeds the views as tokens arrive. main.js wires it in:
// it gives this mode the worker and three callbacks, and asks it for the status line.
//
// What the views read while generating is a GeneratedText: the prompt's forward pass plus one new
// row of attention per token, kept in buffers sized for the whole run up front, so a token costs a
// row copy, not a reallocation of [H, L, L].

import { MAX_NEW_TOKENS } from '../generation.js';

/** The default model's result for a text that grows: what main.js's views read, plus the run's figures. */
class GeneratedText {
  /** @param prompt the worker's 'run' result for the prompt; capacity: prompt tokens + new tokens. */
  constructor(prompt, capacity, settings) {
    const { numHeads: H, embedDim: E } = prompt.config;
    const P = prompt.labels.length;
    Object.assign(this, prompt);
    this.ids = [...prompt.ids];
    this.labels = [...prompt.labels];
    this.stride = capacity;  // rows of each head's matrix are `capacity` apart (main.js matrixOf)
    this.layers = prompt.layers.map(({ weights, output }) => {
      const grown = new Float32Array(H * capacity * capacity);
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < P; i++) {
          grown.set(weights.subarray((h * P + i) * P, (h * P + i + 1) * P), (h * capacity + i) * capacity);
        }
      }
      const outputs = new Float32Array(capacity * E);
      outputs.set(output);
      return { weights: grown, output: outputs };
    });
    this.generation = {
      running: true, settings, promptTokens: P, generated: 0, stepMs: 0, attentionMs: 0,
      started: performance.now(), wallMs: 0, cacheLength: prompt.cacheLength,
    };
  }

  /** Appends one generated token with its row of attention: weights [H, i + 1] per layer. */
  append({ id, label, layers, stepMs, attentionMs }) {
    const i = this.labels.length;
    const C = this.stride;
    const E = this.config.embedDim;
    // The Steps view's newest token: its steps against the cache (one query row, S = i + 1 keys).
    if (layers[0].captured) this.cacheSteps = { position: i, layers: layers.map(({ captured, input, output }) => ({ captured, input, output })) };
    layers.forEach(({ weights, output }, l) => {
      for (let h = 0; h < this.config.numHeads; h++) {
        this.layers[l].weights.set(weights.subarray(h * (i + 1), (h + 1) * (i + 1)), (h * C + i) * C);
      }
      this.layers[l].output.set(output, i * E);
    });
    this.ids.push(id);
    this.labels.push(label);
    this.text += label;
    const g = this.generation;
    g.generated += 1;
    g.stepMs += stepMs;
    g.attentionMs += attentionMs;
    g.wallMs = performance.now() - g.started;
  }
}

const number = (text) => (text.trim() === '' ? NaN : Number(text));

export class GenerateMode {
  #worker;
  #$;
  #show;      // (result) => main.js shows a new result (selection kept)
  #redraw;    // () => main.js redraws the current result; returns the drawing's ms
  #message;   // (text | null, kind) => main.js's message line
  #text = null;     // the GeneratedText being grown, or null
  #runId = 0;       // a Stop or an edit bumps it: late progress of an older run is dropped
  #running = false;
  #boxBase = 0;     // the text box's length when the run began
  #drawTimer = null;
  #lastDraw = 0;
  #drawMs = 0;
  /** The caches' length as the worker last reported it (tokens held). */
  cacheLength = 0;

  #wantsSteps;  // () => whether the Steps view is open (then each token brings its steps)
  #changes;     // () => the Steps view's { ablated, patched, patchText } (web/modes/steps.js), or null

  constructor({ worker, $, show, redraw, message, wantsSteps = () => false, changes = () => null }) {
    this.#wantsSteps = wantsSteps;
    this.#changes = changes;
    this.#worker = worker;
    this.#$ = $;
    this.#show = show;
    this.#redraw = redraw;
    this.#message = message;
    $('gen-start').addEventListener('click', () => this.start());
    $('gen-stop').addEventListener('click', () => this.stop());
    $('gen-sampling').addEventListener('change', () => this.#showSamplingFields());
    this.#showSamplingFields();
  }

  /** From the Generate click until the run ends (its prompt may still be on the way). */
  get running() { return this.#running; }

  #showSamplingFields() {
    this.#$('gen-sample-options').hidden = this.#$('gen-sampling').value !== 'sample';
  }

  /** The form's settings, checked: a message names the field that is wrong. */
  #settings() {
    const $ = this.#$;
    const count = number($('gen-count').value);
    if (!Number.isInteger(count) || count < 1 || count > MAX_NEW_TOKENS) {
      throw new RangeError(`Tokens to generate: a whole number from 1 to ${MAX_NEW_TOKENS}, not '${$('gen-count').value}'.`);
    }
    const sampled = $('gen-sampling').value === 'sample';
    const temperature = sampled ? number($('gen-temperature').value) : 0;
    if (sampled && !(temperature > 0)) throw new RangeError(`Temperature: a number above 0, not '${$('gen-temperature').value}'.`);
    const topK = sampled ? number($('gen-topk').value) : 0;
    if (!Number.isInteger(topK) || topK < 0) throw new RangeError(`Top-k: a whole number, 0 for every token, not '${$('gen-topk').value}'.`);
    const seed = sampled ? number($('gen-seed').value) : 0;
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`Seed: a whole number from 0 to 4294967295, not '${$('gen-seed').value}'.`);
    return { count, temperature, topK, seed, useCache: !$('gen-no-cache').checked };
  }

  /** Continues the text box's text; resolves when the run ends (done, stopped or failed). */
  async start() {
    let settings;
    try {
      settings = this.#settings();
    } catch (error) {
      this.#message(error.message);
      return;
    }
    this.#message(null);
    // Ablated or patched heads: the worker runs the whole text each token with them (no cache).
    const changes = this.#changes();
    if (changes && (changes.ablated.length || changes.patched.length)) settings = { ...settings, useCache: false, changes };
    const runId = ++this.#runId;
    this.#running = true;
    this.#text = null;  // until this run's prompt arrives
    const box = this.#$('text');
    this.#boxBase = box.value.length;
    this.#setButtons(true);
    const onProgress = ({ prompt, tokens, prediction, cacheLength }) => {
      if (runId !== this.#runId) return;
      if (prompt) {
        this.#text = new GeneratedText(prompt, prompt.labels.length + settings.count, settings);
        this.#show(this.#text);
      } else {
        for (const token of tokens) this.#text.append(token);
        this.#text.prediction = prediction;
        this.#scheduleDraw();
      }
      this.cacheLength = cacheLength ?? prompt.cacheLength;
      this.#text.generation.cacheLength = this.cacheLength;
    };
    try {
      const result = await this.#worker.request('generate', { text: box.value, ...settings, steps: this.#wantsSteps() }, [], onProgress);
      if (runId === this.#runId) {
        this.cacheLength = result.cacheLength;
        Object.assign(this.#text.generation, { cacheLength: result.cacheLength, reused: result.reused });
      }
    } catch (error) {
      if (runId === this.#runId) this.#message(`Could not generate: ${error.message}`);
    } finally {
      if (runId === this.#runId) this.#finish();
    }
  }

  /** Stop: the worker ends the run after its current step; what arrived stays on the page. */
  async stop() {
    if (!this.running) return;
    this.#runId += 1;
    this.#finish();
    const { cacheLength } = await this.#worker.request('stop', {});
    this.cacheLength = cacheLength;
  }

  /**
   * The user typed: generation stops (the text box's new text then runs as usual, and the worker
   * keeps the cache's prefix that the edit left unchanged).
   */
  stopForEdit() {
    if (!this.running) return;
    this.#runId += 1;
    this.#finish({ draw: false });  // the text box is the user's now; its run redraws the page
  }

  #finish({ draw = true } = {}) {
    this.#running = false;
    if (this.#text) {
      this.#text.generation.running = false;
      this.#text.generation.wallMs = performance.now() - this.#text.generation.started;
    }
    clearTimeout(this.#drawTimer);
    this.#drawTimer = null;
    this.#setButtons(false);
    if (draw) this.#draw();
  }

  #setButtons(running) {
    this.#$('gen-start').disabled = running;
    this.#$('gen-stop').disabled = !running;
  }

  /**
   * Redraws at most 10 times a second, and less when a redraw is slow (long texts): the browser's
   * own layout and paint of the canvases cost about as much again as the drawing code, and the
   * page must keep time for typing and Stop (the browser test measures its input delay).
   */
  #scheduleDraw() {
    if (this.#drawTimer !== null) return;
    const gap = Math.max(100, 4 * this.#drawMs);
    const wait = Math.max(0, this.#lastDraw + gap - performance.now());
    const runId = this.#runId;
    this.#drawTimer = setTimeout(() => {
      this.#drawTimer = null;
      // A Stop or a keystroke may come before the frame: then this run draws no more.
      requestAnimationFrame(() => { if (runId === this.#runId) this.#draw(); });
    }, wait);
  }

  /** Redraws the page (also when a run ended before its prompt came: then the views are as they were). */
  #draw() {
    this.#lastDraw = performance.now();
    if (this.#text) {
      // The text box shows what the views show: the text grows with each redraw.
      const box = this.#$('text');
      const shown = box.value.length - this.#boxBase;
      const added = this.#text.labels.length - this.#text.generation.promptTokens;
      if (added > shown) {
        box.value += this.#text.labels.slice(this.#text.labels.length - (added - shown)).join('');
        box.scrollTop = box.scrollHeight;
      }
    }
    this.#drawMs = this.#redraw();
  }

  /** The status line's figures for a generated text. */
  statusHtml(g, drawMs) {
    const rate = (ms) => (ms > 0 ? String(Math.round((1000 * g.generated) / ms)).replace(/\B(?=(\d{3})+$)/g, ',') : '–');
    const per = (ms) => (g.generated ? (ms / g.generated).toFixed(3) : '–');
    return `${g.running ? 'generating' : 'generated'} <b>${g.generated}</b> / ${g.settings.count} · `
      + `${g.settings.useCache ? `KV cache <b>${g.cacheLength}</b> tokens` : '<b>no cache</b> (whole text each token)'} · `
      + `${g.settings.changes ? '<b>changed heads</b> (Steps view) · ' : ''}`
      + `<b>${rate(g.stepMs)} tokens/s</b> · <b>${per(g.stepMs)} ms</b> per token, attention layers <b>${per(g.attentionMs)} ms</b> `
      + `(${rate(g.attentionMs)} tokens/s) · drawing ${drawMs.toFixed(0)} ms`;
  }

  /** What the test hook reports. */
  state() {
    const g = this.#text?.generation;
    return {
      running: this.running,
      cacheLength: this.cacheLength,
      generated: g?.generated ?? 0,
      useCache: g?.settings.useCache ?? null,
      changed: Boolean(g?.settings.changes),  // generated with the Steps view's ablated or patched heads
      reused: g?.reused ?? null,  // prompt tokens the cache already held when the run began
      tokensPerSecond: g?.stepMs ? (1000 * g.generated) / g.stepMs : null,
      msPerToken: g?.generated ? g.stepMs / g.generated : null,
      attentionMsPerToken: g?.generated ? g.attentionMs / g.generated : null,
      wallMs: g?.wallMs ?? null,
    };
  }
}
