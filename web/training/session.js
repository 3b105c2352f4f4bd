// The Train mode's side in the page's worker: one Trainer (trainer.js) at a time, a training loop
// that yields to the worker's other messages between steps (pause, ablate, the text box's runs),
// and throttled progress for the page: new losses, held-out evaluations, the probe text's attention
// and the rates. Nothing here touches the DOM.
import { writeSafetensors } from '../../bindings/js/index.js';
import { tokenize, topK } from '../model.js';
import { describeHeads } from './head-scores.js';
import { parameterShapes } from './initialization.js';
import { checkSettings } from './settings.js';
import { Trainer } from './trainer.js';

/** The settings a paused run takes without starting over; any other change needs a reset. */
const LIVE_SETTINGS = ['learningRate', 'batchSize', 'steps', 'evalEvery', 'weightDecay'];
const PROGRESS_MS = 200;  // at most ~5 progress messages a second
const RATE_WINDOW_MS = 2000;

export const DEFAULT_PROBE = 'kelumi likes the red boat (near the old hill). fjqwzkd pmrtx fjqwzkd pmrtx';

export class TrainingSession {
  #mha;
  #vocab;
  #pauseRequested = false;
  #gpu;   // () => the WebGPU module when the page runs Train on WebGPU, else null (web/backends.js)
  #lose;  // (why) => the page's backends move to wasm and say so

  /**
   * @param {{ mha, vocab, gpu?: () => object | null, lose?: (why: string) => void }} options mha:
   *   the wasm package; gpu: asked before every step which backend runs it (null: wasm)
   */
  constructor({ mha, vocab, gpu = () => null, lose = () => {} }) {
    this.#mha = mha;
    this.#vocab = vocab;
    this.#gpu = gpu;
    this.#lose = lose;
    this.trainer = null;
    this.running = false;
    this.probeText = DEFAULT_PROBE;
    this.latest = null;  // { step, loss, lr, backend }
    this.evaluation = null;  // { step, heldOutLoss, headScores }
    this.rate = { stepsPerSecond: 0, tokensPerSecond: 0 };
    this.rates = {};  // per backend ('wasm', 'webgpu'): its latest { stepsPerSecond, tokensPerSecond }
    this.trainingMs = 0;  // wall time of the training loop, evaluations included
  }

  /**
   * One step on the backend the page chose. A WebGPU step that fails because the device was lost
   * leaves the trainer's state as it was: the page moves to wasm and the same batch runs there.
   */
  async #step(trainer) {
    const gpu = trainer.backend === 'mha-wasm' ? this.#gpu() : null;
    const batch = trainer.nextBatch();
    if (!gpu) return trainer.trainStep(batch);
    try {
      return await trainer.trainStepAsync(batch, gpu);
    } catch (error) {
      // (A destroyed device fails a pending readback at once, and its `lost` promise may resolve
      // later: a failed step waits up to a second for it before calling the error a bug.)
      const lost = gpu.lost ?? await Promise.race([gpu.device.lost, new Promise((resolve) => { setTimeout(resolve, 1000, null); })]);
      if (!lost && !/device was lost/.test(error.message)) throw error;
      this.#lose(`the WebGPU device was lost while training (${lost?.reason ?? 'destroyed'}${lost?.message ? `: ${lost.message}` : ''})`);
      return trainer.trainStep(batch);
    }
  }

  /** Settings changed while paused: the live ones apply, the rest must match (else: reset). */
  #update(settings) {
    const changed = Object.keys(settings).filter((k) => settings[k] !== undefined
      && JSON.stringify(settings[k]) !== JSON.stringify(this.trainer.settings[k]));
    const fixed = changed.filter((k) => !LIVE_SETTINGS.includes(k));
    if (fixed.length) throw new TypeError(`train: ${fixed.join(', ')} cannot change during a run; press Reset first`);
    Object.assign(this.trainer.settings, checkSettings({ ...this.trainer.settings, ...settings }));
  }

  /**
   * Starts (or resumes) training. `reset` (or no run yet) makes a fresh model from `settings`.
   * Runs until paused or `steps` is reached; progress(message) gets the page's updates.
   */
  async train({ settings = {}, reset = false, probeText }, progress, yieldToMessages) {
    if (this.running) throw new Error('train: training is already running; pause it first');
    if (probeText !== undefined) this.probeText = probeText;
    if (reset || !this.trainer) {
      this.trainer?.dispose();
      this.trainer = null;
      this.trainer = new Trainer({ mha: this.#mha, vocab: this.#vocab, settings });
      this.latest = null;
      this.evaluation = null;
      this.trainingMs = 0;
      this.rates = {};
      this.curves = { steps: [], losses: [], evaluations: [] };
    } else {
      this.#update(settings);
    }
    const { trainer } = this;
    this.running = true;
    this.#pauseRequested = false;
    const recent = [];  // [time, step, tokens] for the rates
    let posted = -Infinity;
    let pending = { losses: [], evaluations: [] };
    const post = (force) => {
      const now = performance.now();
      if (!force && now - posted < PROGRESS_MS) return;
      posted = now;
      progress({ ...this.status(), newLosses: pending.losses, newEvaluations: pending.evaluations,
        probe: pending.evaluations.length ? this.probe() : null });
      pending = { losses: [], evaluations: [] };
    };
    if (trainer.step === 0) {
      this.#evaluate(pending);
      post(true);
    }
    try {
      while (!this.#pauseRequested && trainer.step < trainer.settings.steps) {
        const started = performance.now();
        const r = await this.#step(trainer);
        // The rates are per backend: a switch starts a new window.
        if (recent.length && recent.at(-1)[3] !== r.backend) recent.length = 0;
        this.latest = r;
        pending.losses.push([r.step, r.loss]);
        this.curves.steps.push(r.step);
        this.curves.losses.push(r.loss);
        if (r.step % trainer.settings.evalEvery === 0 || r.step === trainer.settings.steps) this.#evaluate(pending);
        const now = performance.now();
        this.trainingMs += now - started;
        // The first step of a window counts from its own start (a slow step on a software
        // adapter would otherwise show no rate for a long while).
        if (!recent.length) recent.push([started, r.step - 1, 0, r.backend]);
        recent.push([now, r.step, r.tokens, r.backend]);
        while (recent.length > 2 && now - recent[0][0] > RATE_WINDOW_MS) recent.shift();
        const seconds = (now - recent[0][0]) / 1000;
        const tokens = recent.slice(1).reduce((sum, w) => sum + w[2], 0);
        this.rate = { stepsPerSecond: (recent.length - 1) / seconds, tokensPerSecond: tokens / seconds };
        this.rates[r.backend] = { ...this.rate };
        post(false);
        await yieldToMessages();
      }
    } finally {
      this.running = false;
      // A paused (or finished) run's held-out figures are of the step it stopped at.
      if (this.evaluation?.step !== trainer.step) this.#evaluate(pending);
      post(true);
    }
    return this.status();
  }

  #evaluate(pending) {
    const { heldOutLoss, headScores } = this.trainer.evaluate();
    this.evaluation = { step: this.trainer.step, heldOutLoss, headScores };
    this.curves.evaluations.push(this.evaluation);
    pending.evaluations.push(this.evaluation);
  }

  pause() {
    this.#pauseRequested = true;
    return this.status();
  }

  /** Ablates (or restores) a head; returns the held-out loss and scores and the probe with it. */
  ablate({ layer, head, ablated }) {
    if (!this.trainer) throw new Error('ablate: nothing trained yet; start training first');
    this.trainer.setAblated(layer, head, ablated);
    const { heldOutLoss, headScores } = this.trainer.evaluate();
    this.evaluation = { step: this.trainer.step, heldOutLoss, headScores };
    return { ...this.status(), probe: this.probe() };
  }

  /** The probe text through the current model, shaped like the worker's 'run' result. */
  probe(text = this.probeText) {
    if (!this.trainer) throw new Error('probe: nothing trained yet');
    const started = performance.now();
    const { ids, labels } = tokenize(text, this.#vocab);
    const { layers, logits } = this.trainer.probe(ids);
    const V = this.#vocab.tokens.length;
    const E = this.trainer.settings.dModel;
    return {
      text, ids, labels, layers, wasmMs: 0, totalMs: performance.now() - started, padding: null, causal: true,
      prediction: topK(Array.from(logits.subarray((ids.length - 1) * V)), this.#vocab.tokens, 5),
      config: { embedDim: E, numHeads: this.trainer.numHeads, numKvHeads: this.trainer.numHeads },
      description: `The model being trained, step ${this.trainer.step}${this.trainer.ablated.size ? `, ablated: ${[...this.trainer.ablated].map((k) => `L${k.replace(':', ' H')}`).join(', ')}` : ''}.`,
      trainedHeads: this.evaluation ? describeHeads(this.evaluation.headScores) : null,
    };
  }

  /** The weights as .safetensors bytes (PyTorch state-dict names; web/model.js's metadata). */
  exportWeights() {
    if (!this.trainer) throw new Error('export: nothing trained yet');
    const { dModel, numLayers } = this.trainer.settings;
    const shapes = parameterShapes(this.#vocab.tokens.length, dModel, numLayers);
    const tensors = Object.fromEntries(Object.entries(this.trainer.stateDict()).map(([k, data]) => [k, { data, shape: shapes[k] }]));
    return writeSafetensors(tensors, { metadata: this.trainer.metadata() });
  }

  /** What the test hook's getState().training reports. */
  status() {
    const t = this.trainer;
    return {
      running: this.running,
      step: t?.step ?? 0,
      steps: t?.settings.steps ?? 0,
      loss: this.latest?.loss ?? null,
      learningRate: this.latest?.lr ?? null,
      heldOutLoss: this.evaluation?.heldOutLoss ?? null,
      evaluatedAt: this.evaluation?.step ?? null,
      tokensPerSecond: this.rate.tokensPerSecond,
      stepsPerSecond: this.rate.stepsPerSecond,
      // The backend of the latest step ('wasm' | 'webgpu'), and each backend's latest rates.
      ranOn: this.latest?.backend ?? null,
      rates: structuredClone(this.rates),
      trainingSeconds: this.trainingMs / 1000,
      headScores: this.evaluation?.headScores ?? [],
      ablated: t ? [...t.ablated].map((k) => { const [layer, head] = k.split(':').map(Number); return { layer, head }; }) : [],
      backend: t?.backend ?? null,
      settings: t ? { ...t.settings } : null,
    };
  }
}
