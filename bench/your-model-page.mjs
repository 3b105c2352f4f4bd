// The demo page's "Your model" mode at a real size, as a person runs it in Debian's Chromium: a
// random checkpoint of a real model's shape (bench/random-checkpoints.mjs: BF16, tied, Hugging
// Face's layout; default Llama-3.2-3B) with a byte-level tokenizer.json, written to a temporary
// folder a tensor at a time, picked with the page's file picker at a chosen precision (default q4),
// loaded with the page's progress and memory estimate, every head drawn, then N tokens generated.
// Prints what the page showed (the estimate, the summary line with the precision it runs at, the
// tiles drawn), the load, first-view and generation times, and the peak resident memory of
// Chromium's busiest process (the tab, whose worker holds the wasm heap) sampled every 0.5 s.
//   node bench/your-model-page.mjs [--shape=llama-3.2-3b] [--precision=q4] [--tokens=8] [--keep=DIR]
// Not a test (minutes and gigabytes): the figures go to docs/performance.md with command, machine and date.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemo } from '../tests/browser/browser.js';
import { byteLevelTokenizerJson, byteLevelVocab } from '../tools/gguf-from-checkpoint.mjs';
import { writeRandomCheckpoint } from './random-checkpoints.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const SHAPE = args.shape ?? 'llama-3.2-3b';
const PRECISION = args.precision ?? 'q4';
const TOKENS = Number(args.tokens ?? 8);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const gib = (bytes) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

/** The largest resident set among Chromium's processes now, and their sum (bytes). */
function chromiumMemory() {
  const rss = execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' })
    .split('\n').filter(Boolean).map((kb) => Number(kb) * 1024);
  return { largest: Math.max(0, ...rss), total: rss.reduce((a, b) => a + b, 0) };
}

const dir = args.keep ?? mkdtempSync(join(tmpdir(), 'mha-page-model-'));
const peak = { largest: 0, total: 0 };
const phases = {};  // the busiest process's peak RSS in each phase: loading, first view, generating
let phase = 'idle';
let demo;
try {
  let started = performance.now();
  if (!readdirSync(dir).includes('model.safetensors')) {
    const config = await writeRandomCheckpoint(SHAPE, dir);
    const eos = config.vocab_size - 1;  // (the byte-level vocabulary's last token)
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, bos_token_id: eos, eos_token_id: eos }));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(byteLevelTokenizerJson(byteLevelVocab(config.vocab_size))));
    console.log(`wrote a random ${SHAPE} checkpoint into ${dir} in ${seconds(performance.now() - started)}`);
  }
  const files = readdirSync(dir).map((name) => join(dir, name));
  const bytes = files.reduce((n, f) => n + statSync(f).size, 0);

  demo = await startDemo();
  const { page, problems } = demo;
  const sampler = setInterval(() => {
    const now = chromiumMemory();
    peak.largest = Math.max(peak.largest, now.largest);
    peak.total = Math.max(peak.total, now.total);
    phases[phase] = Math.max(phases[phase] ?? 0, now.largest);
  }, 500);
  const idle = chromiumMemory();
  // What a person does: the precision first, then the files through the picker.
  await page.evaluate((p) => { document.getElementById('model-precision').value = p; }, PRECISION);
  const shown = new Set();
  const watcher = setInterval(async () => {
    try { shown.add(await page.locator('#model-summary').textContent()); } catch { /* (closing) */ }
  }, 250);
  started = performance.now();
  phase = 'loading';
  await page.locator('#model-files').setInputFiles(files);
  await page.waitForFunction(() => window.__mhaDemo.getState().model !== null && document.getElementById('model-loading').hidden,
    null, { timeout: 30 * 60_000, polling: 500 });
  const loaded = performance.now() - started;
  phase = 'first view';
  await page.evaluate(() => window.__mhaDemo.nextRender());
  const firstView = performance.now() - started;
  clearInterval(watcher);
  const state = await page.evaluate(() => window.__mhaDemo.getState());
  const summary = await page.locator('#model-summary').textContent();
  const tiles = await page.locator('#grid canvas').count();
  started = performance.now();
  phase = 'generating';
  const generated = await page.evaluate((n) => window.__mhaDemo.generateModel(n), TOKENS);
  const generating = performance.now() - started;
  clearInterval(sampler);

  console.log(`\n${SHAPE} at ${PRECISION} in the demo page: ${files.length} files, ${(bytes / 1e9).toFixed(2)} GB on disk; ${cpus()[0].model}, ${cpus().length} cores, ${new Date().toISOString()}`);
  console.log('| what | figure |');
  console.log('| --- | --- |');
  console.log(`| the estimate the page showed | ${[...shown].find((t) => t?.includes('needs')) ?? '(not seen)'} |`);
  console.log(`| the summary line | ${summary} |`);
  console.log(`| model state | ${JSON.stringify(state.model)} |`);
  console.log(`| head tiles drawn | ${tiles} (${state.numLayers} layers × ${state.model?.numHeads} heads) |`);
  console.log(`| load (picker to loaded) / first view | ${seconds(loaded)} / ${seconds(firstView)} |`);
  console.log(`| generate ${TOKENS} tokens | ${generated.generated} tokens in ${seconds(generating)}: ${generated.tokensPerSecond?.toFixed(2)} tokens/s |`);
  console.log(`| Chromium's busiest process, peak RSS (idle before: ${gib(idle.largest)}) | ${gib(peak.largest)} (${Object.entries(phases).map(([p, b]) => `${p} ${gib(b)}`).join(', ')}) |`);
  console.log(`| all Chromium processes, peak RSS sum | ${gib(peak.total)} |`);
  console.log(`| page errors | ${problems.length ? problems.join('; ') : 'none'} |`);
} finally {
  await demo?.close();
  if (!args.keep) rmSync(dir, { recursive: true, force: true });
}
