// Trains the demo's model architecture (tools/train_demo_model.py: embeddings + sinusoidal
// positions, causal self-attention layers with residual adds, unembedding) from a seeded
// initialisation. The attention layers run forward and backward in mha-wasm, and so does the
// unembedding (the package's linear()); embedding, cross-entropy and AdamW are the small JavaScript
// modules beside this file. trainStepAsync(batch, gpu) runs a step's attention layers (forward,
// backward, AdamW) on mha-wasm's WebGPU backend instead (gpu-layers.js), the same numbers to float
// rounding; the embedding, unembedding and cross-entropy stay here on the CPU (a few thousand
// floats a step, and the data arrives on the CPU). The CPU state (params, optimizer) is the
// truth between steps on either backend: a WebGPU step mirrors its result into it, so the next
// step may run on either. The same code runs in the page's worker and in Node
// (examples/train-tiny.mjs): the same settings give the same numbers.
import { sinusoidalPositions } from '../model.js';
import { AdamW, constantWithWarmup, oneCycle } from './adamw.js';
import { softmaxCrossEntropy } from './cross-entropy.js';
import { embed, embedBackward } from './embedding.js';
import { GpuLayers } from './gpu-layers.js';
import { inductionScores, textScores } from './head-scores.js';
import { initialParameters, parameterShapes } from './initialization.js';
import { Random } from './random.js';
import { ReferenceAttention } from './reference-attention.js';
import { checkSettings } from './settings.js';
import { bracketPairs, repeatedBlocks, SequenceSource } from './tasks.js';
import { unembed, unembedBackward } from './unembedding.js';

/** The held-out sets do not depend on the run's seed: every run is scored on the same data. */
const HELD_OUT_SEED = 1235;
const INDUCTION_SEQUENCES = 16;

/** True when this mha-wasm build can run a (loaded) attention layer's backward pass. */
function hasBackward(layer, E) {
  try {
    const r = layer.forward({ data: new Float32Array(2 * E), shape: [2, E] }, null, null, { causal: true, grad: true });
    if (typeof r.backward !== 'function') return false;
    r.release?.();
    return true;
  } catch {
    return false;
  }
}

export class Trainer {
  #layers = [];
  #positions;
  #source;
  #offsets;
  #heldOut;
  #mha = null;  // the package when the layers are mha-wasm's (its linear() runs the unembedding)
  #gpuLayers = null;  // the attention layers on WebGPU (gpu-layers.js) while steps run there; null on wasm
  #layersStale = false;  // true when WebGPU steps moved the parameters since #loadLayers

  /**
   * @param {{ mha?: object | null, vocab: object, settings?: object }} options mha: the loaded
   *   package (init()); null trains with the JavaScript reference attention instead
   */
  constructor({ mha = null, vocab, settings = {} }) {
    this.settings = checkSettings(settings);
    this.vocab = vocab;
    const { seed, dModel: E, numHeads: H, numLayers, seqLen, maxPosition, positionOffsets } = this.settings;
    this.V = vocab.tokens.length;
    this.params = initialParameters(new Random(seed), this.V, E, numLayers);
    this.optimizer = new AdamW(this.params, { weightDecay: this.settings.weightDecay });
    this.step = 0;
    this.ablated = new Set();  // "layer:head"
    this.#positions = sinusoidalPositions(Math.max(positionOffsets ? maxPosition : 0, seqLen) + seqLen, E);
    const dataRng = new Random(seed + 0x9e3779b9);
    // The user's own text: its last tenth is held out (when that is at least a sequence long).
    const { text } = this.settings;
    const split = text !== null && text.length - Math.floor(text.length * 0.9) >= seqLen ? Math.floor(text.length * 0.9) : null;
    const trainingText = text === null || split === null ? text : text.slice(0, split);
    const heldOutText = text === null || split === null ? text : text.slice(split);
    this.#source = new SequenceSource({ vocab, rng: dataRng, seqLen, mix: this.settings.mix, text: trainingText });
    this.#offsets = new Random(seed + 0x7f4a7c15);
    try {
      for (let l = 0; l < numLayers; l++) {
        this.#layers.push(mha ? new mha.MultiHeadAttention({ embedDim: E, numHeads: H }) : new ReferenceAttention({ embedDim: E, numHeads: H }));
      }
      this.#loadLayers();
      this.backend = mha && hasBackward(this.#layers[0], E) ? 'mha-wasm' : 'javascript';
      if (this.backend === 'mha-wasm') this.#mha = mha;
      if (mha && this.backend === 'javascript') {
        for (const layer of this.#layers) layer.dispose();
        this.#layers = Array.from({ length: numLayers }, () => new ReferenceAttention({ embedDim: E, numHeads: H }));
        this.#loadLayers();
      }
    } catch (error) {
      this.dispose();
      throw error;
    }
    const heldOutRng = new Random(HELD_OUT_SEED);
    const heldOutSource = new SequenceSource({ vocab, rng: heldOutRng, seqLen, mix: this.settings.mix, text: heldOutText });
    this.#heldOut = {
      text: heldOutSource.batch(32),
      induction: repeatedBlocks(vocab, heldOutRng, INDUCTION_SEQUENCES),
    };
  }

  get numLayers() { return this.settings.numLayers; }
  get numHeads() { return this.settings.numHeads; }

  /** The layers' weights: the parameters, with an ablated head's columns of out_proj.weight zeroed. */
  #loadLayers() {
    const E = this.settings.dModel;
    const D = E / this.settings.numHeads;
    this.#layers.forEach((layer, l) => {
      const prefix = `layers.${l}.`;
      const outWeight = this.params[`${prefix}out_proj.weight`].slice();
      for (const key of this.ablated) {
        const [layerIndex, head] = key.split(':').map(Number);
        if (layerIndex !== l) continue;
        // Zeroing head h's output = zeroing the out_proj columns it is multiplied by.
        for (let row = 0; row < E; row++) outWeight.fill(0, row * E + head * D, row * E + (head + 1) * D);
      }
      layer.loadStateDict({
        in_proj_weight: this.params[`${prefix}in_proj_weight`],
        in_proj_bias: this.params[`${prefix}in_proj_bias`],
        'out_proj.weight': outWeight,
        'out_proj.bias': this.params[`${prefix}out_proj.bias`],
      });
    });
  }

  /** The wasm layers' weights, when WebGPU steps moved the parameters since they were loaded. */
  #freshLayers() {
    if (!this.#layersStale) return;
    this.#layersStale = false;
    this.#loadLayers();
  }

  /** Zeroes (or restores) one head's output in every forward pass from now on. */
  setAblated(layer, head, ablated = true) {
    if (!Number.isInteger(layer) || layer < 0 || layer >= this.numLayers) throw new RangeError(`ablate: layer must be an integer in [0, ${this.numLayers}), got ${layer}`);
    if (!Number.isInteger(head) || head < 0 || head >= this.numHeads) throw new RangeError(`ablate: head must be an integer in [0, ${this.numHeads}), got ${head}`);
    if (ablated) this.ablated.add(`${layer}:${head}`);
    else this.ablated.delete(`${layer}:${head}`);
    this.#layersStale = false;
    this.#loadLayers();
    this.#gpuLayers?.setAblated(this.ablated);
  }

  /**
   * The layers on token ids [B, T] (sequence b's first position offsets[b]): the last residual
   * stream x [B*T, E], each layer's forward result (for backward), and with needWeights each
   * layer's attention weights [B, H, T, T] and output [B, T, E].
   */
  #forward(inputs, B, T, offsets, { grad = false, needWeights = false, capture = false } = {}) {
    this.#freshLayers();
    const E = this.settings.dModel;
    let x = embed(inputs, this.params['tok_embed.weight'], this.#positions, offsets, B, T, E);
    const saved = [];
    const layers = [];
    for (const layer of this.#layers) {
      const r = layer.forward({ data: x, shape: [B, T, E] }, null, null,
        { causal: true, ...(grad ? { grad: true } : {}), ...(needWeights ? { needWeights: true, averageWeights: false } : {}),
          ...(capture ? { capture: true } : {}) });
      saved.push(r);
      // With capture (one sequence: B = 1), the steps without their batch axis, for the Steps view
      // (the float64 reference backend has none).
      const steps = capture && r.captured ? {
        input: x.slice(),
        captured: Object.fromEntries(Object.entries(r.captured).map(([k, t]) => [k, { data: t.data, shape: t.shape.slice(1) }])),
      } : {};
      if (needWeights) layers.push({ weights: r.weights.data, output: r.output.data.slice(), ...steps });
      // The residual add, into the layer's output (a fresh copy out of the wasm heap).
      const next = r.output.data;
      for (let i = 0; i < x.length; i++) next[i] += x[i];
      x = next;
    }
    return { x, saved, layers };
  }

  /**
   * The model on `ids` [B, S]: runs tokens 0..S-2 and predicts tokens 1..S-1. Returns the mean
   * cross-entropy, and with `gradient` the gradients of every parameter (keyed like the params);
   * with `needWeights` the layers' weights and outputs (#forward).
   */
  lossAndGradients(ids, B, S, offsets, { gradient = true, needWeights = false } = {}) {
    const E = this.settings.dModel;
    const T = S - 1;
    const N = B * T;
    const inputs = new Int32Array(N);
    const targets = new Int32Array(N);
    for (let b = 0; b < B; b++) {
      inputs.set(ids.subarray(b * S, b * S + T), b * T);
      targets.set(ids.subarray(b * S + 1, (b + 1) * S), b * T);
    }
    const { x, saved, layers } = this.#forward(inputs, B, T, offsets, { grad: gradient, needWeights });
    const logits = unembed(x, this.params['unembed.weight'], this.params['unembed.bias'], N, this.V, E, this.#mha);
    const { loss, dLogits } = softmaxCrossEntropy(logits, targets, N, this.V, { gradient });
    if (!gradient) return { loss, layers };

    const grads = Object.fromEntries(Object.entries(this.params).map(([k, v]) => [k, new Float32Array(v.length)]));
    const dx = unembedBackward(dLogits, x, this.params['unembed.weight'],
      { weight: grads['unembed.weight'], bias: grads['unembed.bias'] }, N, this.V, E, this.#mha);
    for (let l = this.#layers.length - 1; l >= 0; l--) {
      // x_{l+1} = x_l + attention_l(x_l): the residual passes dx through, the layer adds its part.
      const g = saved[l].backward({ data: dx, shape: [B, T, E] });
      for (const [key, value] of Object.entries(g.params)) grads[`layers.${l}.${key}`].set(value);
      for (let i = 0; i < dx.length; i++) dx[i] += g.query.data[i];
    }
    embedBackward(inputs, dx, grads['tok_embed.weight'], N, E);
    this.#maskAblated(grads);
    return { loss, grads, layers };
  }

  /** An ablated head's out_proj columns get no gradient (they stay as they were while it is off). */
  #maskAblated(grads) {
    const E = this.settings.dModel;
    const D = E / this.settings.numHeads;
    for (const key of this.ablated) {
      const [l, head] = key.split(':').map(Number);
      const g = grads[`layers.${l}.out_proj.weight`];
      for (let row = 0; row < E; row++) g.fill(0, row * E + head * D, row * E + (head + 1) * D);
    }
  }

  /** The next batch: ids [B, S] and each sequence's first position (train_demo_model.py's offsets). */
  nextBatch() {
    const { batchSize: B, seqLen: S, positionOffsets, maxPosition } = this.settings;
    const { ids } = this.#source.batch(B);
    // As the Python trainer: odd steps at position 0, even steps at one random offset for the batch.
    const offset = positionOffsets && (this.step + 1) % 2 === 0 ? this.#offsets.below(maxPosition - S) : 0;
    return { ids, offsets: new Array(B).fill(offset) };
  }

  /** The learning rate and Adam's beta1 of the next step. */
  schedule(step = this.step + 1) {
    const { schedule, learningRate, steps, warmupSteps } = this.settings;
    return schedule === 'onecycle' ? oneCycle(step, steps, learningRate) : constantWithWarmup(step, warmupSteps, learningRate);
  }

  /** One training step on the next batch; returns { step, loss, lr, tokens, backend: 'wasm' }. */
  trainStep(batch = this.nextBatch()) {
    const { batchSize: B, seqLen: S } = this.settings;
    this.#dropGpuLayers();  // (the CPU state moves on: WebGPU re-uploads it at its next step)
    const { loss, grads } = this.lossAndGradients(batch.ids, B, S, batch.offsets);
    clipGradients(grads, this.settings.clipGradNorm);
    const { lr, beta1 } = this.schedule();
    this.optimizer.step(grads, lr, beta1);
    this.step += 1;
    this.#loadLayers();
    return { step: this.step, loss, lr, tokens: B * (S - 1), backend: 'wasm' };
  }

  /**
   * One training step with the attention layers on WebGPU (`gpu`: the WebGPU module); the same
   * numbers as trainStep to float rounding. The CPU state changes only once the whole step
   * succeeded: a step that throws (a lost device) can run again with trainStep(batch).
   * Returns { step, loss, lr, tokens, backend: 'webgpu' }.
   */
  async trainStepAsync(batch, gpu) {
    if (this.backend !== 'mha-wasm') throw new Error('trainStepAsync: this trainer\'s attention is the JavaScript reference (no WebGPU step)');
    const { batchSize: B, seqLen: S, dModel: E, numLayers, clipGradNorm } = this.settings;
    if (!this.#gpuLayers?.isOn(gpu)) {
      this.#dropGpuLayers();
      this.#gpuLayers = new GpuLayers(gpu, { params: this.params, optimizer: this.optimizer, ablated: new Set(this.ablated),
        shapes: parameterShapes(this.V, E, numLayers), numLayers, dModel: E, numHeads: this.settings.numHeads });
    }
    const layers = this.#gpuLayers;
    const gpuGrads = {};
    try {
      const T = S - 1, N = B * T;
      const inputs = new Int32Array(N);
      const targets = new Int32Array(N);
      for (let b = 0; b < B; b++) {
        inputs.set(batch.ids.subarray(b * S, b * S + T), b * T);
        targets.set(batch.ids.subarray(b * S + 1, (b + 1) * S), b * T);
      }
      let x = embed(inputs, this.params['tok_embed.weight'], this.#positions, batch.offsets, B, T, E);
      const saved = [];
      for (let l = 0; l < numLayers; l++) {
        const r = await layers.forward(l, x, B, T);
        saved.push(r);
        const next = r.output.data;
        for (let i = 0; i < x.length; i++) next[i] += x[i];
        x = next;
      }
      const logits = unembed(x, this.params['unembed.weight'], this.params['unembed.bias'], N, this.V, E, this.#mha);
      const { loss, dLogits } = softmaxCrossEntropy(logits, targets, N, this.V, { gradient: true });
      // The CPU's parameters' gradients (embedding, unembedding); the layers' stay on the GPU.
      const grads = {};
      for (const k of ['tok_embed.weight', 'unembed.weight', 'unembed.bias']) grads[k] = new Float32Array(this.params[k].length);
      const dx = unembedBackward(dLogits, x, this.params['unembed.weight'],
        { weight: grads['unembed.weight'], bias: grads['unembed.bias'] }, N, this.V, E, this.#mha);
      for (let l = numLayers - 1; l >= 0; l--) {
        const dInput = await layers.backward(l, saved[l], dx, B, T, gpuGrads);
        for (let i = 0; i < dx.length; i++) dx[i] += dInput[i];
      }
      embedBackward(inputs, dx, grads['tok_embed.weight'], N, E);
      // The global-norm clip over both sides (clipGradients' rule), the GPU's part scaled in its AdamW.
      const factor = clipFactor(squaredNorm(grads) + await layers.squaredNorm(gpuGrads), clipGradNorm);
      if (factor < 1) for (const g of Object.values(grads)) for (let i = 0; i < g.length; i++) g[i] *= factor;
      const { lr, beta1 } = this.schedule();
      await layers.step(gpuGrads, { lr, beta1, gradScale: Math.min(1, factor) });
      const mirror = await layers.mirror();
      // The whole step succeeded: the CPU state takes it (the GPU's part mirrored, the CPU's updated).
      for (const [name, values] of Object.entries(mirror.params)) {
        this.params[name].set(values);
        this.optimizer.firstMoment[name].set(mirror.firstMoment[name]);
        this.optimizer.secondMoment[name].set(mirror.secondMoment[name]);
      }
      this.optimizer.step(grads, lr, beta1, Object.keys(grads));
      this.step += 1;
      this.#layersStale = true;
      return { step: this.step, loss, lr, tokens: N, backend: 'webgpu' };
    } catch (error) {
      for (const t of Object.values(gpuGrads)) t.dispose();
      this.#dropGpuLayers();  // (its GPU state may be half a step ahead: made again from the CPU state)
      throw error;
    }
  }

  #dropGpuLayers() {
    this.#gpuLayers?.dispose();
    this.#gpuLayers = null;
  }

  /**
   * Held-out loss and every head's scores (head-scores.js) on the fixed held-out sets, with the
   * current ablations: { heldOutLoss, headScores: [{ layer, head, previousToken, induction, bracket, bos }] }.
   */
  evaluate() {
    const { seqLen: S, numHeads: H } = this.settings;
    const { ids, texts } = this.#heldOut.text;
    const B = texts.length;
    const text = this.lossAndGradients(ids, B, S, new Array(B).fill(0), { gradient: false, needWeights: true });
    const pairs = bracketPairs(texts, S - 1);
    const I = INDUCTION_SEQUENCES;
    const L = this.#heldOut.induction.length / I;  // <bos> + block + block, all run
    const induction = this.#forward(this.#heldOut.induction, I, L, new Array(I).fill(0), { needWeights: true });
    const headScores = [];
    for (let l = 0; l < this.numLayers; l++) {
      const t = textScores(text.layers[l].weights, B, H, S - 1, pairs);
      const ind = inductionScores(induction.layers[l].weights, I, H, L);
      for (let h = 0; h < H; h++) {
        headScores.push({ layer: l, head: h, previousToken: t.previousToken[h], induction: ind[h], bracket: t.bracket[h], bos: t.bos[h] });
      }
    }
    return { heldOutLoss: text.loss, headScores };
  }

  /**
   * The model on one text's ids (a probe for the views): per layer { weights [H, L, L], output [L, E],
   * input, captured (its steps, for the Steps view) } and logits [L, V].
   */
  probe(ids) {
    const L = ids.length;
    const E = this.settings.dModel;
    const { x, layers } = this.#forward(Int32Array.from(ids), 1, L, [0], { needWeights: true, capture: true });
    return { layers, logits: unembed(x, this.params['unembed.weight'], this.params['unembed.bias'], L, this.V, E, this.#mha) };
  }

  /** The weights as a PyTorch-style state dict (copies), with the metadata web/model.js reads. */
  stateDict() {
    return Object.fromEntries(Object.entries(this.params).map(([k, v]) => [k, v.slice()]));
  }

  metadata() {
    const s = this.settings;
    return {
      dModel: String(s.dModel), numHeads: String(s.numHeads), numLayers: String(s.numLayers), positions: 'sinusoidal',
      trainedSeqLen: String(s.seqLen), trainedPositions: String(s.positionOffsets ? s.maxPosition : s.seqLen),
      trainedSteps: String(this.step), seed: String(s.seed),
    };
  }

  dispose() {
    this.#dropGpuLayers();
    for (const layer of this.#layers) layer.dispose();
    this.#layers = [];
  }
}

/** The sum of the squares of every gradient (in float64). */
function squaredNorm(grads) {
  let sum = 0;
  for (const g of Object.values(grads)) for (let i = 0; i < g.length; i++) sum += g[i] * g[i];
  return sum;
}

/** PyTorch's clip_grad_norm_ factor for gradients whose squares sum to `sum`: maxNorm / (norm + 1e-6), or 1 (no clip). */
function clipFactor(sum, maxNorm) {
  const factor = maxNorm / (Math.sqrt(sum) + 1e-6);
  return maxNorm > 0 && factor < 1 ? factor : 1;
}

/**
 * Scales all gradients down so their global L2 norm is at most maxNorm (PyTorch's
 * clip_grad_norm_: factor maxNorm / (norm + 1e-6) when below 1). Returns the norm before.
 */
export function clipGradients(grads, maxNorm) {
  const sum = squaredNorm(grads);
  const factor = clipFactor(sum, maxNorm);
  if (factor < 1) for (const g of Object.values(grads)) for (let i = 0; i < g.length; i++) g[i] *= factor;
  return Math.sqrt(sum);
}
