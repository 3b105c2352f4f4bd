// Prints (JSON, stdout) what a PyTorch run needs to repeat the first steps of a web/training run:
// the settings, the initial parameters and every step's batch (ids, position offsets), learning
// rate and beta1. Used by tools/make_training_fixture.py.
//   node tools/training-inputs.mjs '<settings JSON>' <steps>
import { readFile } from 'node:fs/promises';

import { Trainer } from '../web/training/trainer.js';

const settings = JSON.parse(process.argv[2] ?? '{}');
const steps = Number(process.argv[3] ?? 10);
const vocab = JSON.parse(await readFile(new URL('../web/model/vocab.json', import.meta.url), 'utf8'));
const trainer = new Trainer({ vocab, settings });  // no mha: only its parameters and batches are used
const params = Object.fromEntries(Object.entries(trainer.params).map(([k, v]) => [k, Array.from(v)]));
const batches = [];
for (let step = 1; step <= steps; step++) {
  const { ids, offsets } = trainer.nextBatch();
  batches.push({ ids: Array.from(ids), offsets, ...trainer.schedule(step) });
  trainer.step = step;  // nextBatch() alternates offsets by step; no update is needed to draw the batches
}
process.stdout.write(JSON.stringify({ settings: trainer.settings, vocabSize: vocab.tokens.length, params, batches }));
trainer.dispose();
