// Trains the demo's attention-only model headless, with the same trainer as the page's Train mode
// (web/training/trainer.js), and prints the loss, the held-out loss and the head scores every N
// steps. The same seed and settings give the same numbers as the page.
//   node examples/train-tiny.mjs [--steps 1000] [--every 100] [--seed 1] [--lr 0.01] [--batch 16]
//                                [--seq-len 64] [--schedule constant|onecycle] [--javascript] [--json]
// --javascript trains with the JavaScript reference attention instead of mha-wasm's backward.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { init } from 'mha-wasm';
import { Trainer } from '../web/training/trainer.js';

const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '1000' },
    every: { type: 'string', default: '100' },
    seed: { type: 'string', default: '1' },
    lr: { type: 'string' },
    batch: { type: 'string' },
    'seq-len': { type: 'string' },
    schedule: { type: 'string' },
    javascript: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const number = (value) => (value === undefined ? undefined : Number(value));
const steps = Number(args.steps);
const every = Number(args.every);

const vocab = JSON.parse(await readFile(new URL('../web/model/vocab.json', import.meta.url), 'utf8'));
const mha = args.javascript ? null : await init({ threads: 1 });
const trainer = new Trainer({
  mha,
  vocab,
  settings: {
    seed: Number(args.seed), steps, learningRate: number(args.lr), batchSize: number(args.batch),
    seqLen: number(args['seq-len']), schedule: args.schedule,
  },
});
const { batchSize, seqLen } = trainer.settings;
const log = [];
if (!args.json) {
  console.log(`attention forward/backward in ${trainer.backend}; ${batchSize} x ${seqLen} tokens per step, seed ${trainer.settings.seed}`);
  console.log('  step   loss  held-out  L1 induction (best head)  L0 prev-token (best)   s    tokens/s');
}
let trainingMs = 0;
let tokens = 0;
for (let step = 1; step <= steps; step++) {
  const started = performance.now();
  const r = trainer.trainStep();
  trainingMs += performance.now() - started;
  tokens += r.tokens;
  if (step % every === 0 || step === 1 || step === steps) {
    const { heldOutLoss, headScores } = trainer.evaluate();
    const best = (layer, score) => headScores.filter((h) => h.layer === layer).reduce((a, h) => (h[score] > a[score] ? h : a));
    const induction = best(Math.min(1, trainer.numLayers - 1), 'induction');
    const previous = best(0, 'previousToken');
    const entry = { step, loss: r.loss, heldOutLoss, trainingSeconds: trainingMs / 1000, tokensPerSecond: tokens / (trainingMs / 1000), headScores };
    log.push(entry);
    if (!args.json) {
      console.log(`${String(step).padStart(6)} ${r.loss.toFixed(3)}  ${heldOutLoss.toFixed(3)}    `
        + `${induction.induction.toFixed(3)} (head ${induction.head})             ${previous.previousToken.toFixed(3)} (head ${previous.head})     `
        + `${(trainingMs / 1000).toFixed(1).padStart(6)}  ${Math.round(entry.tokensPerSecond)}`);
    }
  }
}
if (args.json) console.log(JSON.stringify({ settings: trainer.settings, backend: trainer.backend, log }));
trainer.dispose();
