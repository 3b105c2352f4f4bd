// The page's Train mode: trains the default model's architecture in the worker
// (web/training/session.js) and shows it live: the loss curves and each head's score curves
// (uPlot, loaded when the tab is first opened), the grid and the heatmap on a probe text, the rates
// in the status line. main.js wires it in with the worker and a few callbacks, as the other modes.
import { DEFAULT_PROBE } from '../training/session.js';
import { loadUPlot } from '../load-uplot.js';

const SCORE_NAMES = { induction: 'induction', previousToken: 'previous token', bracket: 'bracket', bos: 'bos' };
const HEAD_COLORS = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'];
const CHART_HEIGHT = 200;

/** Each backend's latest training rate (session.js rates): 'wasm 12.0 steps/s (9,072 tokens/s) · WebGPU ...'. */
function ratesText(status) {
  return ['wasm', 'webgpu'].filter((b) => status.rates?.[b]).map((backend) => [backend, status.rates[backend]]).map(([backend, r]) => `${backend === 'webgpu' ? 'WebGPU' : 'wasm'} `
    + `${r.stepsPerSecond.toFixed(r.stepsPerSecond < 1 ? 2 : 1)} steps/s (${Math.round(r.tokensPerSecond).toLocaleString('en')} tokens/s)`).join(' · ');
}

export class TrainMode {
  #worker;
  #$;
  #show;
  #message;
  #onWeights;  // (info) => main.js: the worker's default model is now the trained one
  #onStatus;   // () => main.js redraws the status line
  #download;   // (name, blob) => main.js saves a file
  #uPlot = null;
  #charts = null;  // { loss, scores }
  #curves = { steps: [], losses: [], evaluations: [] };
  #request = null;  // the running 'train' request's promise
  #started = null;  // resolves on the run's first progress
  /** Whether the Train tab is the page's source. */
  active = false;
  status = null;  // the worker's latest status (session.js status())
  selected = { layer: 0, head: 0 };

  constructor({ worker, $, show, message, status, onWeights, download }) {
    this.#worker = worker;
    this.#$ = $;
    this.#show = show;
    this.#message = message;
    this.#onWeights = onWeights;
    this.#onStatus = status;
    this.#download = download;
    $('train-probe').value = DEFAULT_PROBE;
    $('train-start').addEventListener('click', () => this.toggle().catch((e) => this.#message(e.message)));
    $('train-reset').addEventListener('click', () => this.reset().catch((e) => this.#message(e.message)));
    $('train-ablate').addEventListener('click', () => this.toggleAblation().catch((e) => this.#message(e.message)));
    $('train-use').addEventListener('click', () => this.useWeights().catch((e) => this.#message(e.message)));
    $('train-export-weights').addEventListener('click', () => this.exportWeights().catch((e) => this.#message(e.message)));
    $('train-export-json').addEventListener('click', () => this.#download('training-curves.json',
      new Blob([JSON.stringify(this.curvesJson())], { type: 'application/json' })));
    $('train-export-png').addEventListener('click', () => this.curvesPng().then((blob) => this.#download('training-curves.png', blob)));
    $('train-score-kind').addEventListener('change', () => this.#redrawCharts());
    $('train-probe').addEventListener('change', () => this.#probe());
  }

  get running() { return Boolean(this.status?.running); }

  /** The settings in the panel's fields (undefined where a field is empty). */
  settings() {
    const $ = this.#$;
    const number = (id) => ($(id).value === '' ? undefined : Number($(id).value));
    return {
      seed: number('train-seed'), learningRate: number('train-lr'), batchSize: number('train-batch'),
      seqLen: number('train-seq'), steps: number('train-steps'),
      dModel: number('train-dmodel'), numHeads: number('train-heads'), numLayers: number('train-layers'),
      mix: { copy: number('train-mix-copy'), repeat: number('train-mix-repeat'), bracket: number('train-mix-bracket'), sentence: number('train-mix-sentence') },
      text: $('train-own-text').checked ? $('train-text').value : null,
    };
  }

  /** Writes settings (the hook's startTraining) into the fields. */
  #fill(settings) {
    const ids = { seed: 'train-seed', learningRate: 'train-lr', batchSize: 'train-batch', seqLen: 'train-seq', steps: 'train-steps',
      dModel: 'train-dmodel', numHeads: 'train-heads', numLayers: 'train-layers' };
    for (const [key, id] of Object.entries(ids)) if (settings[key] !== undefined) this.#$(id).value = String(settings[key]);
  }

  /** Starts a fresh run (or resumes the paused one); resolves once it has started. */
  async start(settings = {}, { reset = false } = {}) {
    await this.#loadCharts();
    this.#fill(settings);
    if (this.running) return;
    const fresh = reset || !this.status || this.status.step === 0;
    const all = this.settings();
    const request = { settings: fresh ? all : { learningRate: all.learningRate, batchSize: all.batchSize, steps: all.steps }, reset: fresh, probeText: this.#$('train-probe').value };
    // Settings the panel does not show (schedule, evalEvery, ...) pass straight through.
    for (const [key, value] of Object.entries(settings)) if (!(key in all)) request.settings[key] = value;
    if (fresh) this.#curves = { steps: [], losses: [], evaluations: [] };
    let started;
    this.#started = new Promise((resolve) => { started = resolve; });
    this.#request = this.#worker.request('train', request, [], (progress) => {
      this.#progress(progress);
      started();
    });
    this.#request.then((status) => this.#update(status), (error) => {
      started();
      this.#message(`Training stopped: ${error.message}`);
    }).finally(() => { this.#request = null; this.#updateButtons(); });
    await Promise.race([this.#started, this.#request.catch(() => {})]);
    this.#updateButtons();
  }

  /** Pauses; resolves when the worker has stopped stepping. */
  async pause() {
    if (!this.#request) return this.status;
    await this.#worker.request('trainPause', {});
    await this.#request.catch(() => {});
    return this.status;
  }

  async toggle() {
    if (this.running) await this.pause();
    else await this.start();
  }

  /** A new seed (the next one), a fresh model, curves cleared; starts training. */
  async reset() {
    await this.pause();
    this.#$('train-seed').value = String(Number(this.#$('train-seed').value || 0) + 1);
    await this.start({}, { reset: true });
  }

  /** Ablates (or restores) a head: the worker re-measures the held-out loss and redraws the probe. */
  async ablate(layer, head, ablated = true) {
    const result = await this.#worker.request('trainAblate', { layer, head, ablated });
    this.#update(result);
    if (result.probe && this.active) this.#show(result.probe);
    this.#message(`${ablated ? 'Ablated' : 'Restored'} layer ${layer} head ${head}: held-out loss ${result.heldOutLoss.toFixed(3)}`, 'info');
    return result;
  }

  async toggleAblation() {
    const { layer, head } = this.selected;
    const on = !this.status?.ablated.some((a) => a.layer === layer && a.head === head);
    await this.ablate(layer, head, on);
  }

  /** The worker's default model becomes the trained one (Generate and the text box use it). */
  async useWeights() {
    const info = await this.#worker.request('trainUse', {});
    this.#onWeights(info);
    // The Train view then shows the probe text through exactly these weights (the view may still
    // show an earlier evaluation's, or none yet), so it and the default model agree once this resolves.
    if (this.active) await this.#probe();
    this.#message(`The default model is now the one trained here (step ${info.step}); Generate writes with it.`, 'info');
    return info;
  }

  /** The trained weights as .safetensors bytes (Uint8Array); the button downloads them. */
  async weightsFile() {
    return (await this.#worker.request('trainExport', {})).bytes;
  }

  async exportWeights() {
    const bytes = await this.weightsFile();
    this.#download(`attention-only-step${this.status?.step ?? 0}.safetensors`, new Blob([bytes], { type: 'application/octet-stream' }));
  }

  curvesJson() {
    return { settings: this.status?.settings ?? null, backend: this.status?.backend ?? null, ...this.#curves };
  }

  /** Both charts on one canvas, as a PNG blob. */
  async curvesPng() {
    const canvases = [this.#charts?.loss, this.#charts?.scores].filter(Boolean).map((u) => u.ctx.canvas);
    const out = document.createElement('canvas');
    out.width = canvases.reduce((w, c) => w + c.width, 0);
    out.height = Math.max(1, ...canvases.map((c) => c.height));
    const ctx = out.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, out.width, out.height);
    let x = 0;
    for (const c of canvases) {
      ctx.drawImage(c, x, 0);
      x += c.width;
    }
    return new Promise((resolve) => out.toBlob(resolve, 'image/png'));
  }

  async #probe() {
    if (!this.status || this.status.step === undefined) return;
    try {
      const result = await this.#worker.request('trainProbe', { text: this.#$('train-probe').value });
      if (this.active) this.#show(result);
    } catch (error) {
      this.#message(error.message);
    }
  }

  #progress(progress) {
    for (const [step, loss] of progress.newLosses) {
      this.#curves.steps.push(step);
      this.#curves.losses.push(loss);
    }
    this.#curves.evaluations.push(...progress.newEvaluations);
    this.#update(progress);
    if (progress.newLosses.length || progress.newEvaluations.length) this.#redrawCharts();
    if (progress.probe && this.active) this.#show(progress.probe);
  }

  #update(status) {
    this.status = { ...status };
    delete this.status.probe;
    delete this.status.newLosses;
    delete this.status.newEvaluations;
    const s = this.status;
    const best = (layer, kind) => s.headScores.filter((h) => h.layer === layer).reduce((a, h) => (!a || h[kind] > a[kind] ? h : a), null);
    const lastLayer = Math.max(0, (s.settings?.numLayers ?? 1) - 1);
    const induction = best(lastLayer, 'induction');
    const previous = best(0, 'previousToken');
    this.#$('train-summary').textContent = `step ${s.step} / ${s.steps} · loss ${s.loss?.toFixed(3) ?? '–'} · held-out ${s.heldOutLoss?.toFixed(3) ?? '–'}`
      + (induction ? ` · best L${lastLayer} induction ${induction.induction.toFixed(2)} (H${induction.head})` : '')
      + (previous ? ` · best L0 previous-token ${previous.previousToken.toFixed(2)} (H${previous.head})` : '')
      + (s.ablated.length ? ` · ablated ${s.ablated.map((a) => `L${a.layer} H${a.head}`).join(', ')}` : '')
      + (ratesText(s) ? ` · ${ratesText(s)}` : '')
      + (s.backend === 'javascript' ? ' · (this build has no backward: attention runs in JavaScript)' : '');
    this.#updateButtons();
    this.#onStatus();
  }

  #updateButtons() {
    const $ = this.#$;
    const trained = Boolean(this.status && this.status.step > 0);
    $('train-start').textContent = this.running ? 'Pause' : trained && this.status.step < this.status.steps ? 'Resume' : 'Train';
    for (const id of ['train-use', 'train-export-weights', 'train-export-json', 'train-export-png', 'train-ablate']) $(id).disabled = !trained;
    const { layer, head } = this.selected;
    const ablated = this.status?.ablated.some((a) => a.layer === layer && a.head === head);
    $('train-ablate').textContent = `${ablated ? 'Restore' : 'Ablate'} L${layer} H${head}`;
    for (const id of ['train-dmodel', 'train-heads', 'train-layers', 'train-seq', 'train-seed']) $(id).disabled = this.running;
  }

  /** main.js tells the mode which head is selected (the ablate button acts on it). */
  select(layer, head) {
    this.selected = { layer, head };
    this.#updateButtons();
  }

  /** The status line's training part: the current rate, where the attention runs, and each backend's latest rate. */
  statusHtml() {
    const s = this.status;
    if (!s) return 'not trained yet';
    const where = s.backend === 'javascript' ? 'javascript' : s.ranOn === 'webgpu' ? 'WebGPU' : 'wasm';
    const each = Object.keys(s.rates ?? {}).length > 1 ? ` · ${ratesText(s)}` : '';
    return `training step <b>${s.step}</b> · <b>${s.stepsPerSecond.toFixed(1)}</b> steps/s · `
      + `<b>${Math.round(s.tokensPerSecond).toLocaleString('en')}</b> tokens/s · attention in <b>${where}</b>${each}`;
  }

  async #loadCharts() {
    if (this.#uPlot) return;
    this.#uPlot = await loadUPlot();
  }

  #chartWidth() {
    return Math.max(280, Math.floor((this.#$('train-charts').clientWidth - 60) / 2));
  }

  #redrawCharts() {
    if (!this.#uPlot || !this.status) return;
    const UPlot = this.#uPlot;
    const kind = this.#$('train-score-kind').value;
    const { steps, losses, evaluations } = this.#curves;
    const numHeads = this.status.settings.numHeads;
    const numLayers = this.status.settings.numLayers;
    // The held-out loss sits at its evaluation's step; uPlot draws the gaps joined.
    const heldOut = new Array(steps.length).fill(null);
    const at = new Map(steps.map((s, i) => [s, i]));
    for (const e of evaluations) if (at.has(e.step)) heldOut[at.get(e.step)] = e.heldOutLoss;
    const lossData = [steps, losses, heldOut];
    const evalSteps = evaluations.map((e) => e.step);
    const scoreData = [evalSteps];
    for (let l = 0; l < numLayers; l++) {
      for (let h = 0; h < numHeads; h++) scoreData.push(evaluations.map((e) => e.headScores[l * numHeads + h][kind]));
    }
    const layout = `${numLayers}x${numHeads}`;
    const width = this.#chartWidth();
    if (!this.#charts || this.#charts.layout !== layout) {
      this.#charts?.loss.destroy();
      this.#charts?.scores.destroy();
      const loss = new UPlot({
        title: 'loss', width, height: CHART_HEIGHT, scales: { x: { time: false } },
        series: [{ label: 'step' }, { label: 'training', stroke: '#888', width: 1, points: { show: false } },
          { label: 'held-out', stroke: '#d62728', width: 2, spanGaps: true, points: { show: false } }],
        axes: [{}, { size: 40 }],
      }, lossData, this.#$('train-loss-chart'));
      const series = [{ label: 'step' }];
      for (let l = 0; l < numLayers; l++) {
        for (let h = 0; h < numHeads; h++) {
          series.push({ label: `L${l} H${h}`, stroke: HEAD_COLORS[h % HEAD_COLORS.length], width: 1.5, dash: l === 0 ? [4, 3] : undefined });
        }
      }
      const scores = new UPlot({
        title: 'head scores (dashed: layer 0)', width, height: CHART_HEIGHT, scales: { x: { time: false }, y: { range: [0, 1] } },
        series, axes: [{}, { size: 40 }],
      }, scoreData, this.#$('train-score-chart'));
      this.#charts = { layout, loss, scores };
    } else {
      this.#charts.loss.setData(lossData);
      this.#charts.scores.setData(scoreData);
    }
    this.#charts.scores.setScale('y', { min: 0, max: kind === 'bos' ? 1 : Math.max(0.5, ...scoreData.slice(1).flat()) });
  }

  /** Shows the Train tab's views: the charts and the probe's heads. */
  async activate() {
    this.active = true;
    this.#$('train-charts').hidden = false;
    await this.#loadCharts();
    this.#redrawCharts();
    if (this.status?.step >= 0 && this.status.settings) await this.#probe();
  }

  deactivate() {
    this.active = false;
    this.#$('train-charts').hidden = true;
  }
}
