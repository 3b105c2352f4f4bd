// The demo page's Train mode, measured: (1) training throughput (tokens per second: forward,
// backward and update) of the page's trainer in Node with mha-wasm and in Debian's Chromium,
// against PyTorch on the same model and settings (tools/bench_training_torch.py, one thread,
// Debian's BLAS alternative, e.g. OpenBLAS), in the same run; (2) the page's responsiveness while
// training (frame gaps, and the delay from a key press in the probe box to the next frame);
// (3) with --phase-change, per seed: the wall time and step from pressing Train until layer 1's
// best induction score on held-out repeated blocks passes 0.3.
// --screenshot=FILE saves the page (curves, heads) just after the first seed's phase change.
// --clock=cpu times Node's and PyTorch's steps in CPU time of their process (a shared machine);
// --rounds=N alternates N Node and N PyTorch runs and reports each and the medians. Chromium's
// figures are the page header's (wall clock, as a user sees it).
//   node bench/demo-train.mjs [--steps=150] [--rounds=1] [--clock=cpu] [--seeds=1,2,3] [--phase-change] [--limit=300] [--screenshot=docs/train-screenshot.png] [--no-browser]
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';

import { init } from '../bindings/js/index.js';
import { Trainer } from '../web/training/trainer.js';
import { startDemo } from '../tests/browser/browser.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const STEPS = Number(args.steps ?? 150);
const SEEDS = (args.seeds ?? '1,2,3').split(',').map(Number);
const LIMIT_S = Number(args.limit ?? 300);
const ROUNDS = Number(args.rounds ?? 1);
const CPU_CLOCK = args.clock === 'cpu';
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const ROOT = new URL('..', import.meta.url);
const vocab = JSON.parse(await readFile(new URL('web/model/vocab.json', ROOT), 'utf8'));

/** Tokens per second of `steps` training steps (after 10 warm-up steps) of the page's trainer in Node. */
function nodeThroughput(mha) {
  const trainer = new Trainer({ mha, vocab, settings: { seed: 1 } });
  try {
    for (let i = 0; i < 10; i++) trainer.trainStep();
    // As tools/bench_training_torch.py times its steps: the batches are made outside the clock.
    let tokens = 0;
    let seconds = 0;
    for (let i = 0; i < STEPS; i++) {
      const batch = trainer.nextBatch();
      const started = performance.now();
      const cpuStarted = process.cpuUsage();
      tokens += trainer.trainStep(batch).tokens;
      const cpu = process.cpuUsage(cpuStarted);
      seconds += CPU_CLOCK ? (cpu.user + cpu.system) / 1e6 : (performance.now() - started) / 1000;
    }
    return { backend: trainer.backend, tokensPerSecond: tokens / seconds, msPerStep: (1000 * seconds) / STEPS };
  } finally {
    trainer.dispose();
  }
}

function torchThroughput() {
  // One thread: torch's own (set_num_threads(1) in the script) and OpenBLAS' pool.
  const env = { ...process.env, OPENBLAS_NUM_THREADS: '1', ...(CPU_CLOCK ? { BENCH_CLOCK: 'cpu' } : {}) };
  const out = execFileSync('/usr/bin/python3', [new URL('tools/bench_training_torch.py', ROOT).pathname, String(STEPS + 10)], { encoding: 'utf8', env });
  return JSON.parse(out.trim().split('\n').at(-1));
}

const bestInduction = (training) => Math.max(...training.headScores.filter((h) => h.layer === 1).map((h) => h.induction));

/** Frame gaps for `ms` and the key-press-to-next-frame delay of 20 key presses, in the page while it trains. */
async function responsiveness(page) {
  const frames = await page.evaluate((ms) => new Promise((resolve) => {
    const gaps = [];
    let last = performance.now();
    const end = last + ms;
    const frame = (now) => {
      gaps.push(now - last);
      last = now;
      if (now < end) requestAnimationFrame(frame);
      else resolve(gaps);
    };
    requestAnimationFrame(frame);
  }), 5000);
  await page.evaluate(() => {
    window.__keyDelays = [];
    document.getElementById('train-probe').addEventListener('keydown', (event) => {
      requestAnimationFrame(() => window.__keyDelays.push(performance.now() - event.timeStamp));
    });
  });
  await page.locator('#train-probe').focus();
  for (let i = 0; i < 20; i++) {
    await page.keyboard.press('End');
    await new Promise((resolve) => { setTimeout(resolve, 100); });
  }
  const keys = await page.evaluate(() => window.__keyDelays);
  const stats = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { median: sorted[Math.floor(sorted.length / 2)], p95: sorted[Math.floor(sorted.length * 0.95)], max: sorted.at(-1), count: sorted.length };
  };
  return { frameGapMs: stats(frames), keyToFrameMs: stats(keys) };
}

/** One fresh page per seed: the time and step at which layer 1's best induction score passes 0.3. */
async function phaseChange(seed) {
  const demo = await startDemo();
  try {
    const { page } = demo;
    const started = Date.now();
    await page.evaluate((s) => window.__mhaDemo.startTraining({ seed: s }), seed);
    for (;;) {
      const t = await page.evaluate(() => window.__mhaDemo.getState().training);
      const seconds = (Date.now() - started) / 1000;
      if (t.headScores.length && bestInduction(t) > 0.3) {
        if (args.screenshot && seed === SEEDS[0]) {
          // A few more evaluations onto the curves, then the picture (training keeps running).
          await page.waitForFunction((step) => window.__mhaDemo.getState().training.evaluatedAt >= step, t.evaluatedAt + 100, { timeout: 0, polling: 250 });
          await page.evaluate(() => window.__mhaDemo.nextRender());
          await page.screenshot({ path: args.screenshot, fullPage: false });
        }
        return { seed, seconds, step: t.evaluatedAt, induction: bestInduction(t), heldOutLoss: t.heldOutLoss, backend: t.backend, tokensPerSecond: t.tokensPerSecond };
      }
      if (seconds > LIMIT_S) return { seed, seconds: null, step: t.step, induction: bestInduction(t), heldOutLoss: t.heldOutLoss, backend: t.backend, tokensPerSecond: t.tokensPerSecond, note: `not reached in ${LIMIT_S} s` };
      await new Promise((resolve) => { setTimeout(resolve, 250); });
    }
  } finally {
    await demo.close();
  }
}

const mha = await init({ threads: 1 });
const report = {
  steps: STEPS, rounds: ROUNDS, clock: CPU_CLOCK ? 'cpu' : 'wall', load: os.loadavg(), date: new Date().toISOString(),
  settings: 'the page defaults: batch 16 x 64 tokens, d_model 64, 4 heads, 2 layers, AdamW',
  nodeRounds: [], torchRounds: [],
};
for (let round = 1; round <= ROUNDS; round++) {  // alternating, so both see the same spells of load
  const node = nodeThroughput(mha);
  const torch = torchThroughput();
  report.nodeRounds.push(node);
  report.torchRounds.push(torch);
  console.log(`round ${round} (${report.clock} clock): Node, page trainer (${node.backend}) ${node.tokensPerSecond.toFixed(0)} tokens/s, ${node.msPerStep.toFixed(1)} ms/step; `
    + `PyTorch ${torch.torch}, 1 thread, BLAS ${torch.blas} ${torch.tokensPerSecond.toFixed(0)} tokens/s, ${torch.msPerStep.toFixed(1)} ms/step; `
    + `ratio ${(node.tokensPerSecond / torch.tokensPerSecond).toFixed(2)}x`);
}
report.node = { ...report.nodeRounds[0], tokensPerSecond: median(report.nodeRounds.map((r) => r.tokensPerSecond)), msPerStep: median(report.nodeRounds.map((r) => r.msPerStep)) };
report.torch = { ...report.torchRounds[0], tokensPerSecond: median(report.torchRounds.map((r) => r.tokensPerSecond)), msPerStep: median(report.torchRounds.map((r) => r.msPerStep)) };
report.nodeOverTorch = report.node.tokensPerSecond / report.torch.tokensPerSecond;
console.log(`median of ${ROUNDS}: Node ${report.node.tokensPerSecond.toFixed(0)} tokens/s (${report.node.msPerStep.toFixed(1)} ms/step), `
  + `PyTorch ${report.torch.tokensPerSecond.toFixed(0)} tokens/s (${report.torch.msPerStep.toFixed(1)} ms/step): ratio ${report.nodeOverTorch.toFixed(2)}x`);
if ('no-browser' in args) {
  console.log(JSON.stringify(report));
  process.exit(0);
}

// Chromium: throughput as the page's header shows it, and responsiveness, while training.
const demo = await startDemo();
try {
  const { page } = demo;
  await page.evaluate(() => window.__mhaDemo.startTraining({ seed: 1 }));
  await new Promise((resolve) => { setTimeout(resolve, 5000); });
  report.chromium = { ...(await responsiveness(page)) };
  const t = await page.evaluate(() => window.__mhaDemo.getState().training);
  Object.assign(report.chromium, { backend: t.backend, tokensPerSecond: t.tokensPerSecond, stepsPerSecond: t.stepsPerSecond, step: t.step });
  await page.evaluate(() => window.__mhaDemo.pauseTraining());
} finally {
  await demo.close();
}
report.chromiumOverTorch = report.chromium.tokensPerSecond / report.torch.tokensPerSecond;  // (wall clock against the chosen clock)
const c = report.chromium;
console.log(`Chromium, page (${c.backend}): ${c.tokensPerSecond.toFixed(0)} tokens/s (${c.stepsPerSecond.toFixed(1)} steps/s), ${report.chromiumOverTorch.toFixed(2)}x PyTorch`);
console.log(`  while training: frame gap median ${c.frameGapMs.median.toFixed(1)} ms, p95 ${c.frameGapMs.p95.toFixed(1)}, max ${c.frameGapMs.max.toFixed(1)}; `
  + `key press -> next frame median ${c.keyToFrameMs.median.toFixed(1)} ms, max ${c.keyToFrameMs.max.toFixed(1)}`);

if ('phase-change' in args) {
  report.phaseChange = [];
  for (const seed of SEEDS) {
    const r = await phaseChange(seed);
    report.phaseChange.push(r);
    console.log(`seed ${seed}: layer 1 induction > 0.3 ${r.seconds === null ? r.note : `after ${r.seconds.toFixed(1)} s, step ${r.step}`} `
      + `(score ${r.induction.toFixed(3)}, held-out loss ${r.heldOutLoss.toFixed(3)}, ${r.backend}, ${r.tokensPerSecond.toFixed(0)} tokens/s)`);
  }
}
console.log(JSON.stringify(report));
