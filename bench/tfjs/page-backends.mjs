#!/usr/bin/env node
// Which tfjs backend the demo page should train the Sentiment classifier on: the page's own
// "Train in this browser" run (web/sentiment-train/worker.js: tfjs for the other layers, mha-wasm's
// layer for attention, the fast kernels registered) in Debian's Chromium, on tfjs' wasm and cpu
// backends in turn, through the page's test hook. Wall time of each epoch, as the page measures it.
//
//   node bench/tfjs/page-backends.mjs [--epochs=2] [--samples=2400] [--rounds=1] [--backends=wasm,cpu]
// Prints one JSON line per run: { backend, threads, seconds_per_epoch: [...] }, then { median: { backend: s } }
// (the median over every epoch but each run's first, which includes tfjs' warm-up).
import { startDemo } from '../../tests/browser/browser.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const epochs = Number(args.epochs ?? 2), samples = Number(args.samples ?? 2400), rounds = Number(args.rounds ?? 1);
const backends = (args.backends ?? 'wasm,cpu').split(',');
const demo = await startDemo();
const later = Object.fromEntries(backends.map((b) => [b, []]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const backend of backends) {
      await demo.page.evaluate((s) => window.__mhaDemo.startSentimentTraining(s), { backend, epochs, samples });
      const done = await demo.page.evaluate(() => window.__mhaDemo.sentimentTrainingDone());
      if (done.error) throw new Error(`${backend}: ${done.error}`);
      const seconds = done.history.seconds.map((s) => Number(s.toFixed(2)));
      later[backend].push(...seconds.slice(1));
      console.log(JSON.stringify({ backend: done.backend, threads: done.threads, samples, seconds_per_epoch: seconds }));
    }
  }
  const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : null; };
  console.log(JSON.stringify({ median: Object.fromEntries(backends.map((b) => [b, median(later[b])])) }));
  if (demo.problems.length) console.log(JSON.stringify({ problems: demo.problems }));
} finally {
  await demo.close();
}
