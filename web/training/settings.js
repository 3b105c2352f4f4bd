// A training run's settings: defaults from tools/train_demo_model.py, limits that keep a step
// within a second or so in the browser, and checks with messages naming the setting.
import { checkMix, DEFAULT_MIX } from './tasks.js';

export const DEFAULT_SETTINGS = Object.freeze({
  seed: 1,
  // train_demo_model.py's peak rate is 3e-3 (OneCycleLR); at a constant 1e-2 the induction head
  // forms after ~850 steps instead of ~1200 (measured in PyTorch and here; docs/demo-training.md).
  learningRate: 1e-2,
  weightDecay: 0.01,
  clipGradNorm: 1,        // the gradients' global norm is scaled down to this (0: off); keeps 1e-2 stable through the phase change
  schedule: 'constant',   // 'constant' (linear warm-up, then flat) or 'onecycle' (train_demo_model.py's OneCycleLR over `steps`)
  warmupSteps: 50,
  batchSize: 16,
  seqLen: 64,             // tokens per training sequence, <bos> included
  steps: 3000,
  dModel: 64,
  numHeads: 4,
  numLayers: 2,
  positionOffsets: true,  // every second batch sits at a random place in the first maxPosition positions
  maxPosition: 1024,
  mix: DEFAULT_MIX,
  text: null,             // the user's own text: train on windows of it instead of the generated tasks
  evalEvery: 25,          // steps between held-out evaluations (loss and head scores)
});

const INTEGER_LIMITS = {
  seed: [0, 2 ** 31 - 1],
  warmupSteps: [0, 100000],
  batchSize: [1, 128],
  seqLen: [8, 256],
  steps: [1, 1000000],
  dModel: [8, 256],
  numHeads: [1, 16],
  numLayers: [1, 4],
  maxPosition: [8, 4096],
  evalEvery: [1, 100000],
};

/** The full settings: `settings` (any subset) over the defaults, checked. */
export function checkSettings(settings = {}) {
  if (settings === null || typeof settings !== 'object') throw new TypeError(`settings must be an object, got ${settings}`);
  for (const key of Object.keys(settings)) {
    if (!(key in DEFAULT_SETTINGS)) throw new TypeError(`settings: unknown setting '${key}'; expected one of ${Object.keys(DEFAULT_SETTINGS).join(', ')}`);
  }
  const full = { ...DEFAULT_SETTINGS, ...Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)) };
  for (const [key, [low, high]] of Object.entries(INTEGER_LIMITS)) {
    const value = full[key];
    if (!Number.isInteger(value) || value < low || value > high) {
      throw new RangeError(`settings.${key} must be an integer in [${low}, ${high}], got ${value}`);
    }
  }
  if (typeof full.clipGradNorm !== 'number' || !(full.clipGradNorm >= 0)) {
    throw new RangeError(`settings.clipGradNorm must be a number >= 0 (0: off), got ${full.clipGradNorm}`);
  }
  for (const key of ['learningRate', 'weightDecay']) {
    if (typeof full[key] !== 'number' || !(full[key] >= 0) || full[key] > 1) {
      throw new RangeError(`settings.${key} must be a number in [0, 1], got ${full[key]}`);
    }
  }
  if (!['constant', 'onecycle'].includes(full.schedule)) {
    throw new TypeError(`settings.schedule must be 'constant' or 'onecycle', got ${full.schedule}`);
  }
  if (full.dModel % full.numHeads !== 0 || full.dModel % 2 !== 0) {
    throw new RangeError(`settings.dModel (${full.dModel}) must be even and a multiple of numHeads (${full.numHeads})`);
  }
  if (full.positionOffsets && full.maxPosition <= full.seqLen) {
    throw new RangeError(`settings.maxPosition (${full.maxPosition}) must exceed seqLen (${full.seqLen}) with positionOffsets`);
  }
  if (typeof full.positionOffsets !== 'boolean') throw new TypeError(`settings.positionOffsets must be a boolean, got ${full.positionOffsets}`);
  full.mix = checkMix(full.mix);
  return full;
}
