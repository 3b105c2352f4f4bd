// The Sentiment tab's "Train in this browser": starts the training worker
// (web/sentiment-train/worker.js, which loads tfjs; the page never does) when the user presses
// Train, shows its progress bar and live loss and accuracy curves (uPlot, as the Train tab), Stop,
// and hands the trained weights to the page's worker, which then classifies with them. It also
// counts the animation frames and the classified sentences the page handled while training ran:
// the hook's evidence that the page stayed responsive.
import { loadUPlot } from '../load-uplot.js';

const CHART_HEIGHT = 200;
const WORKER_URL = new URL('../sentiment-train/worker.js', import.meta.url);

export class SentimentTraining {
  #$;
  #useModel;   // (which, trained?) => the page's worker classifies with it
  #message;
  #pageBackend;  // () => the page's backend ('webgpu' | 'wasm'): tfjs trains on 'webgpu' where the page runs on it
  #worker = null;
  #uPlot = null;
  #charts = null;  // { loss, accuracy }
  #done = null;    // resolves when the run has ended (and its weights are in use)
  status = null;

  constructor({ $, useModel, message, pageBackend = () => 'wasm' }) {
    this.#$ = $;
    this.#pageBackend = pageBackend;
    this.#useModel = useModel;
    this.#message = message;
    $('sentiment-train').addEventListener('click', () => this.start().catch((e) => this.#message(e.message)));
    $('sentiment-stop').addEventListener('click', () => this.stop().catch((e) => this.#message(e.message)));
    $('sentiment-model').addEventListener('change', () => this.#useModel($('sentiment-model').value).catch((e) => this.#message(e.message)));
  }

  get running() { return Boolean(this.status?.running); }

  /** The panel's settings (undefined where a field is empty). */
  settings() {
    const number = (id) => (this.#$(id).value === '' ? undefined : Number(this.#$(id).value));
    return { epochs: number('sentiment-epochs'), learningRate: number('sentiment-lr') };
  }

  /**
   * Starts a run from a fresh initialisation with the panel's settings and `overrides` (session.js's
   * settings, and backend). Resolves once the worker has loaded tfjs and training runs.
   */
  async start(overrides = {}) {
    if (this.running) throw new Error('Train: training is already running; press Stop first');
    for (const [key, id] of [['epochs', 'sentiment-epochs'], ['learningRate', 'sentiment-lr']]) {
      if (overrides[key] !== undefined) this.#$(id).value = String(overrides[key]);
    }
    const settings = { ...this.settings(), ...(this.#pageBackend() === 'webgpu' ? { backend: 'webgpu' } : {}), ...overrides };
    this.status = {
      running: true, phase: 'loading tfjs', backend: null, threads: null, settings, note: null, epoch: 0, epochs: settings.epochs ?? 10,
      batch: 0, batchesPerEpoch: null, progress: 0, loss: null, accuracy: null,
      history: { loss: [], accuracy: [], valLoss: [], valAccuracy: [], seconds: [] },
      curves: { x: [], loss: [], accuracy: [] },
      stopped: false, finished: false, error: null, seconds: null, framesDuringTraining: 0, inputsDuringTraining: 0,
    };
    this.#worker?.terminate();
    const worker = this.#worker = new Worker(WORKER_URL);  // classic: it loads tfjs with importScripts
    let ready, failed;
    const started = new Promise((resolve, reject) => { ready = resolve; failed = reject; });
    let finish;
    this.#done = new Promise((resolve) => { finish = resolve; });
    worker.onmessage = ({ data }) => this.#receive(data, { ready, failed, finish });
    worker.onerror = (event) => {
      event.preventDefault();
      this.#receive({ type: 'error', message: `the training worker failed: ${event.message || 'could not load it'}` }, { ready, failed, finish });
    };
    worker.postMessage({ type: 'train', settings });
    this.show(!this.#$('sentiment-panel').hidden);
    this.#countFrames();
    this.#render();
    await this.#loadCharts();
    await started;
  }

  /** Asks the worker to stop after its current batch; resolves once the run has ended. */
  async stop() {
    if (!this.running) return this.status;
    this.#worker.postMessage({ type: 'stop' });
    await this.#done;
    return this.status;
  }

  /** Resolves when the current run (if any) has ended and its weights classify. */
  async done() {
    await this.#done;
    return this.status;
  }

  #restarted = null;
  /** Test only: destroys the training worker's WebGPU device (tfjs'); resolves once the run has restarted on wasm. */
  async testLoseDevice() {
    if (!this.running || this.status.backend !== 'webgpu') throw new Error('testLoseDevice: no training runs on WebGPU');
    const restarted = new Promise((resolve) => { this.#restarted = resolve; });
    this.#worker.postMessage({ type: 'testLoseDevice' });
    await restarted;
    this.#restarted = null;
  }

  /** The page classified a sentence: counted while training runs. */
  noteInput() {
    if (this.running) this.status.inputsDuringTraining += 1;
  }

  async #receive(data, { ready, failed, finish }) {
    const s = this.status;
    if (data.type === 'ready') {
      Object.assign(s, { phase: 'training', backend: data.backend, threads: data.threads, tfjs: data.tfjs, note: data.note ?? null });
      if (data.note) this.#message(data.note, 'info');
      ready();
    } else if (data.type === 'restart') {  // (the WebGPU device was lost: the run starts again on wasm)
      Object.assign(s, { backend: data.backend, threads: data.threads, note: data.note, epoch: 0, batch: 0, progress: 0, loss: null, accuracy: null,
        history: { loss: [], accuracy: [], valLoss: [], valAccuracy: [], seconds: [] }, curves: { x: [], loss: [], accuracy: [] } });
      this.#message(data.note, 'info');
      this.#restarted?.();
    } else if (data.type === 'progress') {
      const { epoch, batch, batchesPerEpoch, loss, accuracy } = data;
      Object.assign(s, { epoch, batch, batchesPerEpoch, loss, accuracy, progress: ((epoch - 1) * batchesPerEpoch + batch) / (s.epochs * batchesPerEpoch) });
      s.curves.x.push(epoch - 1 + batch / batchesPerEpoch);
      s.curves.loss.push(loss);
      s.curves.accuracy.push(accuracy);
    } else if (data.type === 'epoch') {
      for (const key of Object.keys(s.history)) s.history[key].push(data[key]);
    } else if (data.type === 'done') {
      Object.assign(s, { running: false, phase: 'done', stopped: data.stopped, finished: !data.stopped, seconds: data.seconds });
      this.#terminate();
      try {
        await this.#useModel('trained', { tensors: data.weights, vocab: data.vocab });
        this.#$('sentiment-model').disabled = false;
        this.#$('sentiment-model').value = 'trained';
      } catch (error) {
        s.error = error.message;
        this.#message(`Could not use the trained weights: ${error.message}`);
      }
      finish();
    } else if (data.type === 'error') {
      Object.assign(s, { running: false, phase: 'failed', error: data.message });
      this.#terminate();
      this.#message(`Training failed: ${data.message}`);
      failed(new Error(data.message));
      finish();
    }
    this.#render();
  }

  #terminate() {
    this.#worker?.terminate();  // frees tfjs' memory; the next Train starts a fresh worker
    this.#worker = null;
  }

  /** Counts the page's animation frames while training runs. */
  #countFrames() {
    const tick = () => {
      if (!this.running) return;
      this.status.framesDuringTraining += 1;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }

  #render() {
    const $ = this.#$, s = this.status;
    $('sentiment-train').disabled = s.running;
    $('sentiment-stop').disabled = !s.running;
    $('sentiment-progress').hidden = false;
    $('sentiment-progress').value = s.progress;
    const last = s.history.loss.length - 1;
    const epochText = last >= 0 ? ` · epoch ${last + 1}: val_loss ${s.history.valLoss[last].toFixed(3)}, val_accuracy ${s.history.valAccuracy[last].toFixed(3)}, ${s.history.seconds[last].toFixed(1)} s` : '';
    $('sentiment-train-summary').textContent = s.phase === 'loading tfjs' ? 'loading tfjs…'
      : s.phase === 'failed' ? `failed: ${s.error}`
      : `${s.running ? 'training' : s.stopped ? 'stopped' : 'trained'} on tfjs' ${s.backend} backend · epoch ${s.epoch} / ${s.epochs}`
        + ` · batch ${s.batch} / ${s.batchesPerEpoch ?? '?'} · loss ${s.loss?.toFixed(3) ?? '–'} · accuracy ${s.accuracy?.toFixed(3) ?? '–'}${epochText}`
        + (s.running ? '' : ' · now classifying with these weights');
    this.#redrawCharts();
  }

  /** Shows (or hides) the charts: the Sentiment tab shows them once a run has started. */
  show(visible) {
    this.#$('sentiment-charts').hidden = !(visible && this.status);
    if (visible) this.#redrawCharts();
  }

  async #loadCharts() {
    if (this.#uPlot) return;
    this.#uPlot = await loadUPlot();
    this.#redrawCharts();
  }

  #redrawCharts() {
    const s = this.status;
    if (!this.#uPlot || !s || this.#$('sentiment-charts').hidden) return;
    // One x axis in epochs: the running means at each batch, validation at each epoch's end.
    const { x, loss, accuracy } = s.curves;
    const at = new Map(x.map((v, i) => [Math.round(v * 1e6), i]));
    const validation = (values) => {
      const out = new Array(x.length).fill(null);
      values.forEach((v, e) => { const i = at.get((e + 1) * 1e6); if (i !== undefined) out[i] = v; });
      return out;
    };
    const data = { loss: [x, loss, validation(s.history.valLoss)], accuracy: [x, accuracy, validation(s.history.valAccuracy)] };
    if (!this.#charts) {
      const width = Math.max(280, Math.floor((this.#$('sentiment-charts').clientWidth - 60) / 2));
      const make = (title, values, target) => new this.#uPlot({
        title, width, height: CHART_HEIGHT, scales: { x: { time: false } },
        series: [{ label: 'epoch' }, { label: 'training', stroke: '#1f77b4', width: 1.5, points: { show: false } },
          { label: 'validation', stroke: '#ff7f0e', width: 2, spanGaps: true, points: { show: true, size: 6 } }],
        axes: [{}, { size: 44 }],
      }, values, this.#$(target));
      this.#charts = { loss: make('loss', data.loss, 'sentiment-loss-chart'), accuracy: make('accuracy', data.accuracy, 'sentiment-accuracy-chart') };
    } else {
      this.#charts.loss.setData(data.loss);
      this.#charts.accuracy.setData(data.accuracy);
    }
  }
}
