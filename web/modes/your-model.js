// The page's "Your model" mode: a Hugging Face GPT-2- or Llama-family checkpoint (or a BERT /
// RoBERTa encoder: every head, fill-mask at its [MASK] / <mask> tokens) from the user's
// disk (config.json, model.safetensors or the sharded index with its shards, tokenizer.json),
// dropped or picked. The worker loads and runs it (web/your-model/session.js) and answers in the
// shape every view reads, so the grid shows every head of every layer, the large view the
// selected one, the Steps view its steps (with ablation and patching from a second text). This
// panel adds the logit lens per layer, token-by-token generation through every layer's KV cache,
// and export of the heads as SVG / PNG and of the whole state as JSON. The panel builds its own
// DOM, so index.html is unchanged.
import { LatestOnly } from '../latest-only.js';

const PANEL_HTML = `
  <p class="hint">A Hugging Face checkpoint folder's files: <code>config.json</code>, <code>model.safetensors</code>
    (or <code>model.safetensors.index.json</code> with its shards) and <code>tokenizer.json</code>. GPT-2,
    Llama-style models (Llama, Mistral, Qwen2, SmolLM, TinyLlama), Pythia (GPT-NeoX), Gemma, Gemma 2 and Phi-3;
    encoders: BERT, RoBERTa and DistilBERT (every head, and fill-mask at a <code>[MASK]</code> / <code>&lt;mask&gt;</code> in the text).
    Nothing leaves this page.</p>
  <div id="model-drop" class="model-drop" tabindex="0">Drop the files here, or
    <label class="link">pick files<input id="model-files" type="file" multiple accept=".json,.safetensors" hidden></label>
    or <label class="link">a folder<input id="model-folder" type="file" webkitdirectory hidden></label></div>
  <label>Precision <select id="model-precision" title="what every matrix is held in: auto keeps the stored precision when it fits the 4 GiB of wasm memory, else int8, else q4">
    <option value="auto" selected>auto (stored, else int8, else q4)</option><option value="f32">f32</option>
    <option value="f16">f16</option><option value="int8">int8</option><option value="q4">q4</option></select></label>
  <div class="row" id="model-loading" hidden>
    <progress id="model-progress" max="1" value="0"></progress>
    <button id="model-cancel" type="button">Cancel</button>
  </div>
  <p id="model-summary" aria-live="polite"></p>
  <label for="model-text">Text <small>(updates as you type)</small></label>
  <textarea id="model-text" rows="4" spellcheck="false">the cat met a dog. the cat</textarea>
  <fieldset>
    <legend>Generate <small>(greedy, one token at a time through every layer's KV cache)</small></legend>
    <div class="row">
      <label for="model-gen-count">tokens</label>
      <input id="model-gen-count" type="number" min="1" max="2000" value="20">
      <button id="model-gen-start" type="button">Generate</button>
      <button id="model-gen-stop" type="button" disabled>Stop</button>
    </div>
    <p id="model-gen-status" class="hint" aria-live="polite"></p>
  </fieldset>
  <fieldset id="model-fill-set" hidden>
    <legend>Fill-mask <small>(each mask token's top 5, from the masked-LM head)</small></legend>
    <ol id="model-fill"></ol>
  </fieldset>
  <fieldset>
    <legend>Logit lens <small>(the last token's prediction if the model stopped after each layer)</small></legend>
    <p id="model-lens-status" class="hint" hidden></p>
    <ol id="model-lens" start="0"></ol>
  </fieldset>
  <div class="row">
    <button id="model-export-svg" type="button" disabled>Heads SVG</button>
    <button id="model-export-png" type="button" disabled>Heads PNG</button>
    <button id="model-export-json" type="button" disabled>State JSON</button>
  </div>`;

/** The summary's name of each family mha-wasm/models loads (its config.family). */
const FAMILY_NAMES = { gpt2: 'GPT-2', llama: 'Llama', gpt_neox: 'GPT-NeoX', gemma: 'Gemma', gemma2: 'Gemma 2', phi3: 'Phi-3', bert: 'BERT', roberta: 'RoBERTa', distilbert: 'DistilBERT' };

/** An encoder's hints: what the panel refuses for it, by name. */
const ENCODER_HINTS = {
  generate: (name) => `Generate: not for an encoder (${name}): it predicts the tokens at its [MASK] / <mask> positions, it does not decode left to right.`,
  lens: (name) => `Logit lens: not for an encoder (${name}): its post-LN blocks leave a residual stream the masked-LM head does not read layer by layer.`,
};

const OTHER_SOURCES = ['default', 'custom', 'sentiment', 'train'];
const NO_MODEL = 'No model loaded: drop a checkpoint\'s files above.';

/**
 * A File as it is (the worker reads its tensors a slice at a time: the page never holds the file),
 * or { name, bytes } with a Uint8Array (the tests' form).
 */
function workerFile(file) {
  if (typeof File !== 'undefined' && file instanceof File) return file;
  if (file && typeof file.name === 'string' && (file.bytes instanceof Uint8Array || file.bytes instanceof ArrayBuffer || Array.isArray(file.bytes))) {
    return { name: file.name, bytes: file.bytes instanceof Uint8Array ? file.bytes : new Uint8Array(file.bytes) };
  }
  throw new TypeError('loadModel: each file must be a File or { name, bytes }');
}

/** Every head of every layer: [layers][heads] of [L][L] query rows (what SVG, PNG and JSON export). */
function everyHead(result) {
  const L = result.labels.length;
  const H = result.config.numHeads;
  return result.layers.map(({ weights }) => Array.from({ length: H }, (_, h) => Array.from({ length: L },
    (_, i) => Array.from(weights.subarray((h * L + i) * L, (h * L + i + 1) * L)))));
}

/** The heads grid as SVG: one square per head, one rect per weight of at least 0.005 (blue, opacity = weight). */
export function headsSvg(result, cell = 6) {
  const L = result.labels.length;
  const heads = everyHead(result);
  const size = L * cell, gap = 12, label = 14;
  const H = heads[0]?.length ?? 0;
  const width = H * (size + gap) + gap, height = heads.length * (size + gap + label) + gap;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`];
  heads.forEach((layer, l) => layer.forEach((rows, h) => {
    const x0 = gap + h * (size + gap), y0 = gap + l * (size + gap + label);
    parts.push(`<g id="L${l}H${h}"><text x="${x0}" y="${y0 + 10}" font-size="10" font-family="sans-serif">L${l} H${h}</text>`,
      `<rect x="${x0}" y="${y0 + label}" width="${size}" height="${size}" fill="none" stroke="#ccc"/>`);
    rows.forEach((row, i) => row.forEach((w, j) => {
      if (w >= 0.005) parts.push(`<rect x="${x0 + j * cell}" y="${y0 + label + i * cell}" width="${cell}" height="${cell}" fill="#1f4eb4" fill-opacity="${w.toFixed(3)}"/>`);
    }));
    parts.push('</g>');
  }));
  parts.push('</svg>');
  return parts.join('');
}

export class YourModelMode {
  #page;      // main.js's pieces: { $, worker, state, accept, showMessage, nextRender, download, leaveOthers, backToDefault }
  #modelRuns = new LatestOnly((request) => this.#runOne(request));  // { text, run } requests
  #runs = 0;
  #loadRequest = null;
  #summary = '';  // the panel's line on the loaded model (shown again when a later checkpoint is refused)
  /** { family, numLayers, numHeads, numKvHeads, dtype } of the loaded model, or null. */
  model = null;
  generating = false;

  constructor(page) {
    this.#page = page;
    const { $ } = page;
    const tab = Object.assign(document.createElement('button'), { id: 'source-model', textContent: 'Your model' });
    tab.setAttribute('role', 'tab');
    tab.setAttribute('aria-selected', 'false');
    $('source-train').after(tab);
    const panel = Object.assign(document.createElement('div'), { id: 'model-panel', hidden: true, innerHTML: PANEL_HTML });
    $('train-panel').after(panel);
    const style = document.createElement('style');
    style.textContent = '.model-drop { border: 2px dashed #98a2b3; border-radius: 8px; padding: 14px; margin: 6px 0; text-align: center; }'
      + ' .model-drop.over { background: #eff4ff; border-color: #1d3a8a; } .model-drop .link { text-decoration: underline; cursor: pointer; }'
      + ' #model-progress { flex: 1; }';
    document.head.append(style);
    tab.addEventListener('click', () => this.show());
    for (const source of OTHER_SOURCES) $(`source-${source}`).addEventListener('click', () => this.#hide());
    $('model-files').addEventListener('change', () => this.#loadPicked($('model-files')));
    $('model-folder').addEventListener('change', () => this.#loadPicked($('model-folder')));
    const drop = $('model-drop');
    drop.addEventListener('dragover', (event) => { event.preventDefault(); drop.classList.add('over'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', (event) => {
      event.preventDefault();
      drop.classList.remove('over');
      this.load([...event.dataTransfer.files]).catch(() => {});
    });
    $('model-cancel').addEventListener('click', () => this.cancel());
    $('model-text').addEventListener('input', () => this.run());
    $('model-gen-start').addEventListener('click', () => this.generate().catch(() => {}));
    $('model-gen-stop').addEventListener('click', () => this.cancel());
    $('model-export-svg').addEventListener('click', () => this.#export('svg'));
    $('model-export-png').addEventListener('click', () => this.#export('png'));
    $('model-export-json').addEventListener('click', () => this.#export('json'));
  }

  get active() { return this.#page.state.source === 'model'; }

  /** Selects the tab: the other sources' panels hide, and the model's latest view is drawn. */
  show() {
    const { $, state } = this.#page;
    this.#page.leaveOthers();
    for (const source of OTHER_SOURCES) {
      $(`source-${source}`).setAttribute('aria-selected', 'false');
      $(`${source}-panel`).hidden = true;
    }
    $('source-model').setAttribute('aria-selected', 'true');
    $('model-panel').hidden = false;
    state.source = 'model';
    if (this.model) this.run();
    else if (!this.#loadRequest) $('model-summary').textContent = NO_MODEL;
  }

  #hide() {
    const { $ } = this.#page;
    $('source-model').setAttribute('aria-selected', 'false');
    $('model-panel').hidden = true;
  }

  async #loadPicked(input) {
    try {
      await this.load([...input.files]);
    } catch {
      // (the message is on the page)
    } finally {
      input.value = '';
    }
  }

  /**
   * Loads a checkpoint's files (File objects or { name, bytes }); resolves when its first view is
   * drawn, rejects with the page's message when a file is refused or the load is cancelled.
   */
  async load(files) {
    const { $, worker, showMessage } = this.#page;
    if (!this.active) this.show();
    $('model-loading').hidden = false;
    const progress = $('model-progress');
    progress.value = 0;
    $('model-summary').textContent = 'reading the files…';
    this.#loadRequest = { cancelled: false };
    const request = this.#loadRequest;
    try {
      const named = files.map(workerFile);
      if (request.cancelled) throw new Error('loading cancelled');
      $('model-summary').textContent = 'reading the headers…';
      // The worker: each weight file's header read (to 1/4), the memory estimate, then each layer
      // read and built (to the end). File objects go as they are (structured clone shares the file).
      const buffers = [...new Set(named.filter((f) => f.bytes instanceof Uint8Array).map((f) => f.bytes.buffer))];  // (a File has a bytes() method)
      let estimate = '';
      const weightDtype = $('model-precision').value;
      const loaded = await worker.request('modelLoad', { files: named, weightDtype }, buffers, ({ phase, done, total, name, estimate: e }) => {
        if (phase === 'estimate') {
          estimate = `needs ${(e.bytes.total / 2 ** 30).toFixed(2)} GiB of wasm memory at ${e.weightDtype} (${(e.available / 2 ** 30).toFixed(2)} GiB free)`;
        }
        progress.value = phase === 'weights' ? done / total / 4 : phase === 'estimate' ? 0.25 : 0.25 + 0.75 * done / total;
        $('model-summary').textContent = phase === 'weights' ? `read the header of ${name} (${done} of ${total})`
          : phase === 'estimate' ? estimate : `built layer ${done} of ${total} · ${estimate}`;
      });
      this.model = loaded.model;
      const m = loaded.model;
      this.#summary = `${FAMILY_NAMES[m.family] ?? m.family} family · ${m.encoder ? `encoder (bidirectional heads${m.mlmHead ? ', fill-mask' : ', no masked-LM head'}) · ` : ''}`
        + `${m.numLayers} layers · ${m.numHeads} heads`
        + `${m.numKvHeads < m.numHeads ? ` (${m.numKvHeads} key/value)` : ''} · weights ${m.dtype}, run at ${m.weightDtype} · on ${loaded.backend}`;
      $('model-summary').textContent = this.#summary;
      this.#encoderControls();
      for (const id of ['model-export-svg', 'model-export-png', 'model-export-json']) $(id).disabled = false;
      showMessage(null);
      $('model-loading').hidden = true;  // (loaded: the first view is drawn next)
      await this.run();
    } catch (error) {
      const message = `Could not load the model: ${error.message === 'cancelled' ? 'loading cancelled' : error.message}`;
      $('model-loading').hidden = true;
      this.#loadRequest = null;
      await this.#refused();
      showMessage(message);  // (after the redraw, which clears the message line)
      throw new Error(message);
    } finally {
      $('model-loading').hidden = true;
      this.#loadRequest = null;
    }
  }

  /**
   * A checkpoint refused or a load cancelled: the page goes back to the model it had. The worker
   * keeps the model loaded before (a refused checkpoint replaces nothing): it is drawn again. With
   * none (the first checkpoint, or a worker that could not keep it), the page goes back to the
   * default model, and the text box and setText answer for it.
   */
  async #refused() {
    const { $, state } = this.#page;
    if (this.model) {
      $('model-summary').textContent = this.#summary;
      if (this.active) {
        await this.run();
        if (state.runError === null) return;
      } else {
        return;
      }
      this.model = null;  // (the worker has no model: 'no model loaded')
      this.#encoderControls();
      for (const id of ['model-export-svg', 'model-export-png', 'model-export-json']) $(id).disabled = true;
    }
    $('model-summary').textContent = NO_MODEL;
    if (this.active) {
      this.#hide();
      await this.#page.backToDefault();
    }
  }

  /** Generate and the logit lens: off, with the hint saying why, for an encoder; on for a decoder. */
  #encoderControls() {
    const { $ } = this.#page;
    const encoder = Boolean(this.model?.encoder);
    const name = encoder ? FAMILY_NAMES[this.model.family] ?? this.model.family : '';
    for (const id of ['model-gen-start', 'model-gen-count']) $(id).disabled = encoder;
    $('model-gen-status').textContent = encoder ? ENCODER_HINTS.generate(name) : '';
    $('model-lens-status').hidden = !encoder;
    $('model-lens-status').textContent = encoder ? ENCODER_HINTS.lens(name) : '';
    $('model-fill-set').hidden = !encoder;
    if (!encoder) $('model-fill').replaceChildren();
  }

  /** Cancel: a load (between files, or at the worker's next pause) or a generation (between tokens). */
  cancel() {
    if (this.#loadRequest) this.#loadRequest.cancelled = true;
    this.#page.worker.request('modelCancel', {}).catch(() => {});
  }

  #steps() {
    return this.#page.stepsMode().runOptions();  // (the Steps view's ablations and patches, web/modes/steps.js)
  }

  #show(result) {
    const { $, accept, state } = this.#page;
    if (!this.active) return;
    accept(result);
    $('prediction-title').textContent = result.predictionTitle ?? 'Next token';
    $('model-fill').replaceChildren(...(result.fillMask ?? []).map(({ position, token, top }) => {
      const item = document.createElement('li');
      item.textContent = `${token} at position ${position}: ${top.map((t) => `${JSON.stringify(t.token)} ${(t.probability * 100).toFixed(1)}%`).join(', ')}`;
      return item;
    }));
    $('model-lens').replaceChildren(...result.lens.map(({ layer, top }) => {
      const item = document.createElement('li');
      item.textContent = `layer ${layer}: ${top.map((t) => `${JSON.stringify(t.token)} ${(t.probability * 100).toFixed(1)}%`).join(', ')}`;
      return item;
    }));
    state.modelLens = result.lens;
  }

  /** Runs the text box's text (the latest only, while a run is in flight); resolves once drawn. */
  async run() {
    if (!this.model) return;
    // (Handed to a running call, this text is run by it: wait until that call has drawn it.)
    await this.#modelRuns.run({ text: this.#page.$('model-text').value, run: ++this.#runs });
    await this.#modelRuns.idle();
  }

  async #runOne({ text, run }) {
    try {
      const result = await this.#page.worker.request('modelRun', { text, steps: this.#steps() });
      this.#show({ ...result, run });
      this.#page.showMessage(null);
    } catch (error) {
      this.#page.runFailed(`Could not run the model: ${error.message}`);
    }
  }

  /** Sets the text and resolves when the page shows its result (the test hook's setText). */
  async setText(text) {
    const { $, state } = this.#page;
    $('model-text').value = text;
    if (!this.model) return;  // (no model loaded: nothing to draw; the panel says so)
    await this.run();
    while (state.result?.text !== text && !state.runError) await this.#page.nextRender();
  }

  /** Greedy generation: the text box grows token by token; the final text's views are drawn. */
  async generate() {
    const { $, worker, showMessage } = this.#page;
    if (!this.model || this.generating) return null;
    if (this.model.encoder) {
      const message = `Could not generate: ${ENCODER_HINTS.generate(FAMILY_NAMES[this.model.family] ?? this.model.family)}`;
      showMessage(message);
      throw new Error(message);
    }
    this.generating = true;
    $('model-gen-start').disabled = true;
    $('model-gen-stop').disabled = false;
    try {
      const count = Math.max(1, Math.min(2000, Number($('model-gen-count').value) || 1));
      const result = await worker.request('modelGenerate', { text: $('model-text').value, count, steps: this.#steps() }, [], (p) => {
        $('model-text').value = p.text;
        $('model-gen-status').textContent = `${p.generated} tokens · ${p.tokensPerSecond.toFixed(1)} tokens/s`;
      });
      $('model-text').value = result.text;
      const g = result.generation;
      $('model-gen-status').textContent = `${g.generated} tokens · ${g.tokensPerSecond.toFixed(1)} tokens/s${g.cancelled ? ' · stopped' : ''}`;
      this.lastGeneration = { generated: g.generated, ids: g.ids, tokensPerSecond: g.tokensPerSecond, cancelled: g.cancelled };
      const { generation, ...shown } = result;
      this.#show({ ...shown, run: ++this.#runs });
      return this.lastGeneration;
    } catch (error) {
      showMessage(`Could not generate: ${error.message}`);
      throw error;
    } finally {
      this.generating = false;
      $('model-gen-start').disabled = false;
      $('model-gen-stop').disabled = true;
    }
  }

  /** The whole state as JSON: model, tokens, prediction, logit lens, every head's pattern, the Steps view's head. */
  stateJson() {
    const { state } = this.#page;
    const result = state.result;
    const steps = this.#page.stepsMode();
    return {
      source: 'your model', model: this.model, text: result.text, ids: result.ids, tokens: result.labels,
      prediction: result.prediction, lens: result.lens, ablated: steps.ablated, patched: steps.patched, patchText: steps.patchText,
      shape: [result.layers.length, result.config.numHeads, result.labels.length, result.labels.length],
      heads: everyHead(result),
      selected: { ...state.selected },
      steps: state.view === 'steps' && steps.steps ? steps.steps : null,
    };
  }

  #export(kind) {
    const { state, download } = this.#page;
    if (!state.result || state.source !== 'model') return;
    const name = `your-model-${this.model.family}`;
    if (kind === 'json') {
      download(`${name}-state.json`, new Blob([JSON.stringify(this.stateJson())], { type: 'application/json' }));
      return;
    }
    const svg = headsSvg(state.result);
    if (kind === 'svg') {
      download(`${name}-heads.svg`, new Blob([svg], { type: 'image/svg+xml' }));
      return;
    }
    const image = new Image();
    image.onload = () => {
      const canvas = Object.assign(document.createElement('canvas'), { width: image.width, height: image.height });
      canvas.getContext('2d').drawImage(image, 0, 0);
      canvas.toBlob((blob) => download(`${name}-heads.png`, blob), 'image/png');
    };
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  }
}
