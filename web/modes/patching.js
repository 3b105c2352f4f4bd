// The page's Patching mode (issue 47): activation patching on the model the Your model mode
// loaded, with mha-wasm/models' workflows in the worker (web/modes/patching-worker.js). Two texts, a
// clean and a corrupted one of as many tokens, and an answer and a wrong token (default: the clean
// run's top next token, and the corrupted run's); sweeps over layer × head (each head's output) and
// layer × position (resid_pre, attn_out, mlp_out), the direct logit attribution by head and the
// three head scores of the clean run (web/patching-view.js draws them). The page's other views show
// the clean run; a cell opens its head (or its layer and position) there. The panel, its tab and
// the view build their own DOM, as the Your model mode's do, so index.html is unchanged.
import { LatestOnly } from '../latest-only.js';
import { saveCsv, saveJson, savePng, saveSvg } from '../export.js';
import { drawFigure, patchingCanvas, patchingCsv, patchingFigures, patchingJson, patchingSvg, SWEEPS } from '../patching-view.js';
import { displayToken } from '../heatmap.js';

const PANEL_HTML = `
  <p class="hint">Activation patching on the model loaded in <b>Your model</b>: a run of the corrupted text with one slice
    of the clean run's activations patched in, for every slice (TransformerLens' <code>patching</code>). Each value is the
    logit difference answer − wrong at the last position: 1 = the clean run's, 0 = the corrupted run's.</p>
  <label for="patch-source">Model</label>
  <select id="patch-source">
    <option value="model" selected>your model (loaded in the Your model tab)</option>
    <option value="default">the default model (characters, attention only)</option>
  </select>
  <p id="patch-model" class="hint" aria-live="polite"></p>
  <label for="patch-clean">Clean text</label>
  <textarea id="patch-clean" rows="3" spellcheck="false">When John and Mary went to the store, John gave a drink to</textarea>
  <label for="patch-corrupted">Corrupted text <small>(as many tokens)</small></label>
  <textarea id="patch-corrupted" rows="3" spellcheck="false">When John and Mary went to the store, Mary gave a drink to</textarea>
  <p id="patch-counts" class="hint" aria-live="polite"></p>
  <div class="patch-token-inputs">
    <label for="patch-answer">answer</label>
    <input id="patch-answer" type="text" spellcheck="false" placeholder="clean top">
    <label for="patch-wrong">wrong</label>
    <input id="patch-wrong" type="text" spellcheck="false" placeholder="corrupted top">
  </div>
  <p class="hint">A token's text (with its leading space), or <code>#id</code>; blank for the default.</p>
  <p id="patch-tokens" class="hint" aria-live="polite"></p>
  <label for="patch-over">Sweep</label>
  <select id="patch-over">
    <option value="head_out" selected>each head's output · layer × head</option>
    <option value="resid_pre">residual stream (resid_pre) · layer × position</option>
    <option value="attn_out">attention output (attn_out) · layer × position</option>
    <option value="mlp_out">MLP output (mlp_out) · layer × position</option>
    <option value="all">all four</option>
  </select>
  <div class="row">
    <button id="patch-run" type="button" disabled>Run sweep</button>
    <button id="patch-cancel" type="button" disabled>Cancel</button>
  </div>
  <div class="row" id="patch-progress-row" hidden>
    <progress id="patch-progress" max="1" value="0"></progress>
    <span id="patch-progress-text" class="hint"></span>
  </div>
  <p id="patch-summary" class="hint" aria-live="polite"></p>
  <div class="row">
    <button id="patch-export-png" type="button" disabled>PNG</button>
    <button id="patch-export-svg" type="button" disabled>SVG</button>
    <button id="patch-export-csv" type="button" disabled>CSV</button>
    <button id="patch-export-json" type="button" disabled>JSON</button>
  </div>`;

const VIEW_HTML = `
  <h2>Patching <small>rows: layers · 1 = the clean run's logit difference, 0 = the corrupted run's · click a cell: that head
    (or that layer and position) in the views below</small></h2>
  <div id="patch-figures"></div>
  <p id="patch-empty" class="hint"></p>
  <div id="patch-tooltip" hidden></div>`;

const STYLE = '.patch-token-inputs { display: grid; grid-template-columns: auto minmax(0, 1fr) auto minmax(0, 1fr); gap: 6px; align-items: center; }'
  + ' #patching-panel input[type=text] { width: 100%; font: 13px ui-monospace, Menlo, monospace; padding: 4px 6px; }'
  + ' #patch-counts.refused { color: var(--error); } #patch-progress { flex: 1; }'
  + ' #patching-view { position: relative; } #patch-figures { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }'
  + ' .patch-figure { margin: 0; } .patch-figure canvas { display: block; cursor: pointer; }'
  + ' #patch-tooltip { position: absolute; pointer-events: none; background: var(--ink); color: #fff; font-size: 12px;'
  + ' padding: 4px 8px; border-radius: 4px; white-space: nowrap; font-variant-numeric: tabular-nums; z-index: 2; }';

const EXPORTS = ['patch-export-png', 'patch-export-svg', 'patch-export-csv', 'patch-export-json'];

export class PatchingMode {
  /**
   * main.js's pieces: { $, worker, state, accept, showMessage, leaveOthers, yourModel (the Your
   * model mode: its `model` summary), selectHead(layer, head), selectPosition(layer, position) }.
   */
  #page;
  #prepares = new LatestOnly((inputs) => this.#prepareOne(inputs));
  #figures = new Map();  // figure id -> { figure, layout, canvas }
  #inputsKey = null;     // the model, ids and tokens the sweeps were run on
  #messageShown = false;
  /** The worker's answer for the inputs shown (texts, ids, tokens, logit differences, attribution, scores), or null. */
  prepared = null;
  config = null;
  /** over -> { over, shape, data, ms } of the sweeps run on the inputs shown. */
  sweeps = {};
  /** { over, done, total } while a sweep runs, else null. */
  running = null;
  /** The last error's message (a refused token, no model), or null. */
  error = null;
  #runs = 0;
  #cancelled = false;  // Cancel pressed: 'all' stops before its next sweep too

  constructor(page) {
    this.#page = page;
    const { $ } = page;
    const tab = Object.assign(document.createElement('button'), { id: 'source-patching', textContent: 'Patching' });
    tab.setAttribute('role', 'tab');
    tab.setAttribute('aria-selected', 'false');
    $('source-model').after(tab);
    const panel = Object.assign(document.createElement('div'), { id: 'patching-panel', hidden: true, innerHTML: PANEL_HTML });
    $('model-panel').after(panel);
    const view = Object.assign(document.createElement('section'), { id: 'patching-view', hidden: true, innerHTML: VIEW_HTML });
    $('grid').closest('section').before(view);
    const style = document.createElement('style');
    style.textContent = STYLE;
    document.head.append(style);

    tab.addEventListener('click', () => this.show());
    // Any other mode's tab hides this one (their own handlers show theirs).
    $('source-tabs').addEventListener('click', (event) => {
      const other = event.target.closest('[role=tab]');
      if (other && other !== tab) this.#hide();
    });
    for (const id of ['patch-clean', 'patch-corrupted']) $(id).addEventListener('input', () => this.prepare());
    for (const id of ['patch-answer', 'patch-wrong', 'patch-source']) $(id).addEventListener('change', () => this.prepare());
    $('patch-run').addEventListener('click', () => this.runSweep().catch(() => {}));
    $('patch-cancel').addEventListener('click', () => this.cancel());
    $('patch-export-png').addEventListener('click', () => this.#export('png'));
    $('patch-export-svg').addEventListener('click', () => this.#export('svg'));
    $('patch-export-csv').addEventListener('click', () => this.#export('csv'));
    $('patch-export-json').addEventListener('click', () => this.#export('json'));
    this.#bindPointer();
    let resizeTimer;
    addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => this.active && this.#renderFigures(), 100);
    });
  }

  get active() { return this.#page.state.source === 'patching'; }

  /** Selects the tab: the other modes' panels hide; the clean run is drawn in the page's views. */
  show() {
    const { $, state } = this.#page;
    this.#page.leaveOthers();
    for (const tab of $('source-tabs').querySelectorAll('[role=tab]')) {
      const mine = tab.id === 'source-patching';
      tab.setAttribute('aria-selected', String(mine));
      const panel = $(`${tab.id.replace(/^source-/, '')}-panel`);
      if (panel) panel.hidden = !mine;
    }
    $('patching-view').hidden = false;
    state.source = 'patching';
    return this.prepare();
  }

  #hide() {
    const { $ } = this.#page;
    $('source-patching').setAttribute('aria-selected', 'false');
    $('patching-panel').hidden = true;
    $('patching-view').hidden = true;
    $('patch-tooltip').hidden = true;
  }

  #inputs() {
    const { $ } = this.#page;
    return { source: $('patch-source').value, clean: $('patch-clean').value, corrupted: $('patch-corrupted').value, answer: $('patch-answer').value.trim() && $('patch-answer').value,
      wrong: $('patch-wrong').value.trim() && $('patch-wrong').value };
  }

  /**
   * Runs the inputs shown in the worker (the clean run, the defaults, the attribution, the scores);
   * the latest only while one is in flight. Resolves once drawn (or refused: the message says why).
   */
  async prepare() {
    const { $ } = this.#page;
    const source = $('patch-source').value;
    // The default model has no MLPs: its mlp_out sweep does not exist.
    $('patch-over').querySelector('option[value=mlp_out]').disabled = source === 'default';
    if (source === 'default' && $('patch-over').value === 'mlp_out') $('patch-over').value = 'head_out';
    const loaded = source === 'default' ? { family: 'attention-only, characters', numLayers: null } : this.#page.yourModel.model;
    if (!loaded) {
      this.prepared = null;
      this.sweeps = {};
      $('patch-model').textContent = 'No model loaded: load a checkpoint in the Your model tab first.';
      this.#renderInputs();
      this.#renderFigures();
      return;
    }
    $('patch-model').textContent = source === 'default' ? 'On the default model (attention only: no mlp_out sweep).'
      : `On your model: ${loaded.family}, ${loaded.numLayers} layers × ${loaded.numHeads} heads.`;
    await this.#prepares.run({ ...this.#inputs(), run: ++this.#runs });
    await this.#prepares.idle();
  }

  async #prepareOne({ run, ...inputs }) {
    const { worker, accept, showMessage, $ } = this.#page;
    try {
      const { patching, ...view } = await worker.request('patchPrepare', inputs);
      const key = JSON.stringify([patching.model, patching.clean.ids, patching.corrupted.ids, patching.answer.id, patching.wrong.id]);
      if (key !== this.#inputsKey) this.sweeps = {};
      this.#inputsKey = key;
      this.prepared = patching;
      this.config = view.config;
      this.error = null;
      if (this.#messageShown) showMessage(null);
      this.#messageShown = false;
      if (this.active) {
        accept({ ...view, run });
        $('prediction-title').textContent = 'Next token (clean text)';
      }
    } catch (error) {
      this.prepared = null;
      this.sweeps = {};
      this.#inputsKey = null;
      this.error = error.message;
      $('patch-summary').textContent = '';
      if (this.active) {
        showMessage(`Patching: ${error.message}`);
        this.#messageShown = true;
      }
    }
    this.#renderInputs();
    this.#renderFigures();
  }

  #renderInputs() {
    const { $ } = this.#page;
    const p = this.prepared;
    const counts = $('patch-counts');
    counts.classList.toggle('refused', Boolean(p?.refused));
    counts.textContent = !p ? '' : p.refused ? `Refused: ${p.refused}.`
      : `clean ${p.clean.ids.length} tokens · corrupted ${p.corrupted.ids.length} tokens`;
    $('patch-answer').placeholder = p && !p.answer.chosen ? JSON.stringify(p.answer.token) : 'clean top';
    $('patch-wrong').placeholder = p && !p.wrong.chosen ? JSON.stringify(p.wrong.token) : 'corrupted top';
    const ld = p?.logitDiff;
    $('patch-tokens').textContent = !p ? '' : `answer ${JSON.stringify(p.answer.token)} (#${p.answer.id}) − wrong ${JSON.stringify(p.wrong.token)} (#${p.wrong.id})`
      + ` · logit difference: clean ${ld.clean.toFixed(3)}${ld.corrupted === null ? '' : `, corrupted ${ld.corrupted.toFixed(3)}`}`;
    $('patch-run').disabled = !p || Boolean(p.refused) || Boolean(this.running);
    for (const id of EXPORTS) $(id).disabled = !p;
  }

  /** Draws every figure the numbers allow, reusing each figure's canvas. */
  #renderFigures() {
    const { $ } = this.#page;
    const box = $('patch-figures');
    const figures = patchingFigures({ prepared: this.prepared, config: this.config, sweeps: this.sweeps });
    $('patch-empty').textContent = !this.prepared ? (this.error ? `Nothing to show: ${this.error}` : 'Load a checkpoint in the Your model tab.')
      : Object.keys(this.sweeps).length ? '' : 'Run a sweep to see where the clean run\'s answer is carried.';
    const width = Math.max(320, ($('patching-view').clientWidth || 900) - 30);
    const elements = figures.map((figure) => {
      let element = box.querySelector(`[data-figure="${figure.id}"]`);
      if (!element) {
        element = Object.assign(document.createElement('figure'), { className: 'patch-figure' });
        element.dataset.figure = figure.id;
        element.append(document.createElement('canvas'));
      }
      const canvas = element.querySelector('canvas');
      this.#figures.set(figure.id, { figure, canvas, layout: drawFigure(canvas, figure, width) });
      return element;
    });
    for (const id of [...this.#figures.keys()]) if (!figures.some((f) => f.id === id)) this.#figures.delete(id);
    box.replaceChildren(...elements);
  }

  /** The figure and cell under a pointer event, or null. */
  #cellAt(event) {
    const element = event.target.closest?.('.patch-figure');
    const entry = element && this.#figures.get(element.dataset.figure);
    if (!entry) return null;
    const rect = entry.canvas.getBoundingClientRect();
    const cell = entry.layout.hit(event.clientX - rect.left, event.clientY - rect.top);
    return cell && { ...entry, ...cell, x: event.clientX - rect.left + entry.canvas.offsetLeft, y: event.clientY - rect.top + entry.canvas.offsetTop };
  }

  #describe({ figure, row, col }) {
    const v = figure.data[row * figure.cols + col];
    const where = figure.columns === 'head' ? `L${row} H${col}`
      : `layer ${row}, position ${col} ${JSON.stringify(displayToken(this.prepared.clean.tokens[col]))}`;
    const what = figure.kind === 'bars' ? 'direct logit attribution' : figure.id.startsWith('score-') ? figure.title.replace(/ \(.*/, '').toLowerCase()
      : `${figure.id} patched`;
    return `${where}: ${what} ${Number.isFinite(v) ? v.toFixed(4) : '—'}`;
  }

  #bindPointer() {
    const { $ } = this.#page;
    const box = $('patch-figures');
    box.addEventListener('mousemove', (event) => {
      const cell = this.#cellAt(event);
      const tooltip = $('patch-tooltip');
      if (!cell) {
        tooltip.hidden = true;
        return;
      }
      tooltip.textContent = this.#describe(cell);
      const section = $('patching-view').getBoundingClientRect();
      tooltip.style.left = `${event.clientX - section.left + 14}px`;
      tooltip.style.top = `${event.clientY - section.top + 10}px`;
      tooltip.hidden = false;
    });
    box.addEventListener('mouseleave', () => { $('patch-tooltip').hidden = true; });
    box.addEventListener('click', (event) => {
      const cell = this.#cellAt(event);
      if (cell) this.open(cell.figure.id, cell.row, cell.col);
    });
  }

  /** A cell opened: its head selected in the page's views, or its layer with that position (query row) followed. */
  open(figureId, row, col) {
    const entry = this.#figures.get(figureId);
    if (!entry) throw new Error(`patching: no figure ${figureId} is drawn`);
    if (entry.figure.columns === 'head') this.#page.selectHead(row, col);
    else this.#page.selectPosition(row, col);
  }

  /** Where a figure's cell (row, col) is drawn, in page coordinates (the test hook's patchingPoint). */
  cellPoint(figureId, row, col) {
    const entry = this.#figures.get(figureId);
    if (!entry) return null;
    const rect = entry.canvas.getBoundingClientRect();
    const { x, y } = entry.layout.centre(row, col);
    return { x: rect.left + x, y: rect.top + y };
  }

  /**
   * Runs the sweep chosen (or `over`: one of SWEEPS, or 'all' for the four in turn) on the inputs
   * shown; resolves with the last sweep's { over, shape, data, ms }, or { cancelled: true }.
   */
  async runSweep(over = this.#page.$('patch-over').value) {
    const { $, worker, showMessage } = this.#page;
    const p = this.prepared;
    if (!p) throw new Error('patching: nothing to patch yet (load a checkpoint in the Your model tab, then give two texts)');
    if (p.refused) throw new RangeError(`patching: ${p.refused}`);
    if (this.running) throw new Error('patching: a sweep is running');
    const source = $('patch-source').value;
    const kinds = over === 'all' ? Object.keys(SWEEPS).filter((k) => !(k === 'mlp_out' && p.family === 'attn-only')) : [over];
    if (!kinds.every((k) => k in SWEEPS)) throw new TypeError(`patching: over must be one of ${Object.keys(SWEEPS).join(', ')} or all, got ${over}`);
    const key = this.#inputsKey;
    this.#cancelled = false;
    $('patch-progress-row').hidden = false;
    $('patch-cancel').disabled = false;
    const progress = $('patch-progress');
    let last = null;
    try {
      for (const [k, kind] of kinds.entries()) {
        if (this.#cancelled) {
          const error = new Error('patching: cancelled');
          error.name = 'AbortError';
          throw error;
        }
        this.running = { over: kind, done: 0, total: 0 };
        this.#renderInputs();
        progress.value = k / kinds.length;
        $('patch-progress-text').textContent = `${kind}…`;
        const result = await worker.request('patchSweep', { source, clean: p.clean.ids, corrupted: p.corrupted.ids, answer: p.answer.id, wrong: p.wrong.id, over: kind },
          [], ({ done, total }) => {
            this.running = { over: kind, done, total };
            progress.value = (k + done / total) / kinds.length;
            $('patch-progress-text').textContent = `${kind}: ${done} of ${total}`;
          });
        if (this.#inputsKey !== key) return { stale: true };  // (the inputs changed meanwhile: a new prepare cleared the sweeps)
        this.sweeps[kind] = result;
        last = result;
        this.#renderFigures();
      }
      $('patch-summary').textContent = kinds.map((k) => `${k} [${this.sweeps[k].shape.join(' × ')}] in ${(this.sweeps[k].ms / 1000).toFixed(2)} s`).join(' · ');
      return last;
    } catch (error) {
      if (error.name === 'AbortError') {
        $('patch-summary').textContent = `Sweep cancelled${last ? ` (${Object.keys(this.sweeps).join(', ')} kept)` : ''}.`;
        return { cancelled: true };
      }
      showMessage(`Patching: ${error.message}`);
      this.#messageShown = true;
      throw error;
    } finally {
      this.running = null;
      $('patch-progress-row').hidden = true;
      $('patch-cancel').disabled = true;
      this.#renderInputs();
    }
  }

  /** Cancel: the running sweep stops at its next pause (between patches). */
  cancel() {
    if (this.running) this.#cancelled = true;
    this.#page.worker.request('patchCancel', {}).catch(() => {});
  }

  #state() {
    return { prepared: this.prepared, config: this.config, sweeps: this.sweeps, model: this.#page.yourModel.model };
  }

  #export(kind) {
    if (!this.prepared) return;
    const name = `patching-${this.#page.yourModel.model?.family ?? 'model'}`;
    const figures = patchingFigures(this.#state());
    if (kind === 'json') saveJson(`${name}.json`, patchingJson(this.#state()));
    else if (kind === 'csv') saveCsv(`${name}.csv`, patchingCsv(this.#state()));
    else if (kind === 'svg') saveSvg(`${name}.svg`, patchingSvg(figures, this.prepared, this.#page.yourModel.model));
    else savePng(patchingCanvas(figures, this.prepared, this.#page.yourModel.model), `${name}.png`);
  }

  /** What the test hook reports as getState().patching (plain arrays). */
  hookState() {
    const p = this.prepared;
    const plain = (t) => ({ shape: [...t.shape], data: Array.from(t.data) });
    return {
      error: this.error,
      running: this.running && { ...this.running },
      prepared: p && {
        family: p.family, clean: structuredClone(p.clean), corrupted: structuredClone(p.corrupted), refused: p.refused,
        answer: { ...p.answer }, wrong: { ...p.wrong }, logitDiff: { ...p.logitDiff },
        attribution: { heads: plain(p.attribution.heads), mlps: plain(p.attribution.mlps), accumulated: plain(p.attribution.accumulated) },
        scores: Object.fromEntries(Object.entries(p.scores).map(([k, s]) => [k, plain(s)])),
      },
      sweeps: Object.fromEntries(Object.entries(this.sweeps).map(([k, s]) => [k, plain(s)])),
      figures: [...this.#figures.keys()],
      /** The JSON export (what the JSON button saves), or null. */
      json: p ? structuredClone(patchingJson(this.#state())) : null,
    };
  }

  /** The test hook: sets the inputs given ({ source, clean, corrupted, answer, wrong }) and resolves once drawn. */
  async setInputs(inputs) {
    const { $ } = this.#page;
    for (const [key, id] of [['source', 'patch-source'], ['clean', 'patch-clean'], ['corrupted', 'patch-corrupted'], ['answer', 'patch-answer'], ['wrong', 'patch-wrong']]) {
      if (inputs[key] !== undefined) $(id).value = inputs[key];
    }
    if (!this.active) return this.show();
    return this.prepare();
  }
}
