// The demo page on its two backends, side by side in one Chromium (WebGPU on the adapter the
// browser finds; here SwiftShader, a software one): per mode, the time from a keystroke (or the
// Run click) to the drawn heads (Generate: tokens/s; Train: training steps/s), and the page's
// input delay (a mouse move's wait for its handler) while each backend runs. Modes the WebGPU backend cannot run yet (web/backends.js WEBGPU_LACKS)
// are listed with the reason. Prints a Markdown table (docs/demo.md quotes it).
//   node bench/demo-gpu.mjs [repeats, default 7]
import { writeSafetensors } from '../bindings/js/index.js';
import { startDemo } from '../tests/browser/browser.js';

const repeats = Number(process.argv[2] ?? 7);
const { page, close } = await startDemo({ gpu: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * Types `char` at the end of the text box `id`; ms from its input event until the page has drawn
 * the heads of the new text (`drawn`: 'labels' for the model's tokens, 'sentiment' for Sentiment's).
 */
async function typedToDrawn(id, char, drawn) {
  const expected = `${await page.locator(`#${id}`).inputValue()}${char}`;
  await page.evaluate((boxId) => {
    const box = document.getElementById(boxId);
    box.addEventListener('input', (event) => { window.__typedAt = event.timeStamp; }, { once: true });
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }, id);
  await page.keyboard.type(char);
  return page.evaluate(async ({ text, drawn }) => {
    const demo = window.__mhaDemo;
    const shows = drawn === 'labels' ? (s) => s.labels?.slice(1).join('') === text.toLowerCase() : (s) => s.sentiment?.text === text;
    while (!shows(demo.getState())) await demo.nextRender();
    return performance.now() - window.__typedAt;
  }, { text: expected, drawn });
}

/** The default model: one character at the end of the text box. */
const keystroke = () => typedToDrawn('text', 'e', 'labels');
/** Sentiment: one character at the end of its sentence. */
const sentimentKeystroke = () => typedToDrawn('sentiment-text', 's', 'sentiment');

/** Your layer: ms from the Run click to the drawn heads. */
async function customRun() {
  await page.evaluate(() => {
    document.getElementById('byo-run').addEventListener('click', (event) => { window.__clickedAt = event.timeStamp; }, { once: true });
    window.__renders = window.__mhaDemo.getState().renders;
  });
  await page.locator('#byo-run').click();
  return page.evaluate(async () => {
    const demo = window.__mhaDemo;
    while (demo.getState().renders === window.__renders || demo.getState().source !== 'custom') await demo.nextRender();
    return performance.now() - window.__clickedAt;
  });
}

/** Worst and median delay of 30 mouse moves over the grid while `work()` keeps the backend busy. */
async function inputDelay(work) {
  await page.evaluate(() => {
    window.inputDelays = [];
    window.__delayListener = (event) => window.inputDelays.push(performance.now() - event.timeStamp);
    addEventListener('mousemove', window.__delayListener, { capture: true });
  });
  const box = await page.locator('#grid').boundingBox();
  const busy = work();
  for (let k = 0; k < 30; k++) {
    await page.mouse.move(box.x + 10 + 10 * k, box.y + 20 + (k % 5));
    await new Promise((resolve) => { setTimeout(resolve, 30); });
  }
  await busy;
  const delays = await page.evaluate(() => {
    removeEventListener('mousemove', window.__delayListener, { capture: true });
    return window.inputDelays;
  });
  return { worst: Math.max(...delays), median: median(delays) };
}

async function timeMode(run, backend) {
  await page.evaluate((b) => window.__mhaDemo.setBackend(b), backend);
  await run();  // warm-up: pipelines, weights upload, JIT
  const ms = [];
  for (let i = 0; i < repeats; i++) ms.push(await run());
  const ranOn = (await page.evaluate(() => window.__mhaDemo.getState())).ranOn;
  if (ranOn !== backend) throw new Error(`expected a run on ${backend}, got ${ranOn}`);
  const delay = await inputDelay(async () => { for (let i = 0; i < 4; i++) await run(); });
  return { ms: median(ms), delay };
}

try {
  const s0 = await page.evaluate(() => window.__mhaDemo.getState());
  if (!s0.backends.available) throw new Error(`no WebGPU adapter: ${s0.backends.note}`);
  const adapter = `${s0.adapter}${s0.backends.adapter.isFallbackAdapter ? ' (fallback/software adapter)' : ''}`;
  const wasm = `wasm ${s0.build.name}, ${s0.build.threads ? `${s0.build.numThreads} threads` : '1 thread'}`;
  console.log(`demo page, Chromium, WebGPU adapter: ${adapter}; ${wasm}; median of ${repeats} runs after a warm-up`);
  console.log('| mode | input | wasm: to drawn heads | WebGPU: to drawn heads | WebGPU / wasm | input delay on wasm (median / worst) | input delay on WebGPU (median / worst) |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  const row = (mode, input, a, b) => console.log(`| ${mode} | ${input} | ${a.ms.toFixed(1)} ms | ${b.ms.toFixed(1)} ms | ${(b.ms / a.ms).toFixed(1)}x | `
    + `${a.delay.median.toFixed(1)} / ${a.delay.worst.toFixed(1)} ms | ${b.delay.median.toFixed(1)} / ${b.delay.worst.toFixed(1)} ms |`);

  // Default model: the page's default text, one more character per keystroke.
  const text = await page.locator('#text').evaluate((box) => box.defaultValue);
  const reset = () => page.evaluate((t) => window.__mhaDemo.setText(t), text);
  const results = {};
  for (const backend of ['wasm', 'webgpu']) {
    await reset();
    results[backend] = await timeMode(keystroke, backend);
  }
  row('Default model (2 layers, E 64, 4 heads)', `keystroke, ~${text.length + 1 + repeats} tokens`, results.wasm, results.webgpu);

  // The Steps view open on the default model: each keystroke runs every layer's capture (docs/steps.md).
  await page.evaluate(() => window.__mhaDemo.showSteps({ layer: 1, head: 2 }));
  for (const backend of ['wasm', 'webgpu']) {
    await reset();
    results[backend] = await timeMode(keystroke, backend);
  }
  row('Steps view (the default model, every step captured)', `keystroke, ~${text.length + 1 + repeats} tokens`, results.wasm, results.webgpu);
  await page.locator('#view-heatmap').click();

  // Sentiment: the Keras classifier (32 tokens, E 100, 4 heads of 128).
  await page.locator('#source-sentiment').click();
  for (const backend of ['wasm', 'webgpu']) {
    await page.locator('#sentiment-text').fill('the film was good');
    results[backend] = await timeMode(sentimentKeystroke, backend);
  }
  row('Sentiment (Keras classifier: E 100, 4 heads of 128)', 'keystroke, 32 tokens', results.wasm, results.webgpu);

  // Your layer: a BERT-base-sized layer (E 768, 12 heads) over 128 tokens.
  const E = 768, L = 128;
  const fill = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7.3 + i * 0.37) * 0.05);
  const weights = Buffer.from(writeSafetensors({
    in_proj_weight: { data: fill(3 * E * E, 1), shape: [3 * E, E] }, in_proj_bias: { data: fill(3 * E, 2), shape: [3 * E] },
    'out_proj.weight': { data: fill(E * E, 3), shape: [E, E] }, 'out_proj.bias': { data: fill(E, 4), shape: [E] },
  }));
  const rows = Array.from({ length: L }, (_, i) => Array.from(fill(E, 10 + i)));
  await page.evaluate(() => window.__mhaDemo.setBackend('wasm'));
  await page.locator('#source-custom').click();
  await page.locator('#byo-embeddings').setInputFiles({ name: 'x.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(rows)) });
  await page.locator('#byo-weights').setInputFiles({ name: 'layer.safetensors', mimeType: 'application/octet-stream', buffer: weights });
  await page.locator('#byo-heads').fill('12');
  await customRun();
  for (const backend of ['wasm', 'webgpu']) results[backend] = await timeMode(customRun, backend);
  row(`Your layer (E ${E}, 12 heads)`, `Run click, ${L} tokens`, results.wasm, results.webgpu);

  // Generate: greedy tokens after the default text with the KV caches (on the GPU for WebGPU).
  await page.locator('#source-default').click();
  const generated = {};
  for (const backend of ['wasm', 'webgpu']) {
    await page.evaluate((b) => window.__mhaDemo.setBackend(b), backend);
    const rates = [];
    for (let i = 0; i < 3; i++) {
      await reset();
      await page.locator('#gen-count').fill('100');
      await page.locator('#gen-sampling').selectOption('greedy');
      await page.locator('#gen-start').click();
      await page.evaluate(() => window.__mhaDemo.generationDone());
      const s = await page.evaluate(() => window.__mhaDemo.getState());
      if (s.ranOn !== backend || s.generation.generated !== 100) throw new Error(`Generate: ${s.generation.generated} tokens on ${s.ranOn}`);
      rates.push(s.generation);
    }
    const g = rates.sort((x, y) => x.tokensPerSecond - y.tokensPerSecond)[1];
    generated[backend] = g;
  }
  console.log(`| Generate (KV caches) | 100 greedy tokens | ${generated.wasm.tokensPerSecond.toFixed(0)} tokens/s `
    + `(${generated.wasm.attentionMsPerToken.toFixed(2)} ms attention/token) | ${generated.webgpu.tokensPerSecond.toFixed(0)} tokens/s `
    + `(${generated.webgpu.attentionMsPerToken.toFixed(2)} ms attention/token) | `
    + `${(generated.wasm.tokensPerSecond / generated.webgpu.tokensPerSecond).toFixed(1)}x | | |`);

  // Train: training steps per second on each backend (the page's loop: the attention layers'
  // forward, backward and AdamW on the backend, embedding / unembedding / cross-entropy in the
  // worker's JavaScript and wasm), at the page's default size and at a tiny one, after a warm-up
  // step (pipelines, uploads), and the input delay while it trains.
  for (const [label, settings, steps] of [
    ['Train, the page\'s default (2 layers, E 64, 4 heads; batch 16 x 64 tokens)', {}, { wasm: 60, webgpu: 8 }],
    ['Train, tiny (2 layers, E 16, 2 heads; batch 2 x 12 tokens)', { dModel: 16, numHeads: 2, batchSize: 2, seqLen: 12 }, { wasm: 600, webgpu: 60 }],
  ]) {
    const trained = {};
    for (const backend of ['wasm', 'webgpu']) {
      await page.evaluate((b) => window.__mhaDemo.setBackend(b), backend);
      let rate = null;
      const delay = await inputDelay(async () => {
        await page.evaluate((s) => window.__mhaDemo.startTraining(s), { seed: 1, evalEvery: 100000, ...settings, steps: steps[backend] });
        // The worker's own clock: each status the page gets carries the step and the training
        // loop's seconds so far (web/training/session.js), so the rate between two of them is exact
        // whatever the page's polling; from the first status at step 2 or later to the last before
        // the final step (whose evaluation the loop's seconds include).
        rate = await page.evaluate(async (n) => {
          const demo = window.__mhaDemo;
          let a = null, b = null;
          for (;;) {
            const t = demo.getState().training;
            if (!a && t.step >= 2) a = t;
            if (a && t.step < n && t.step > a.step) b = t;
            if (!t.running && t.step === n) break;
            await new Promise((resolve) => { setTimeout(resolve, 5); });
          }
          const tokens = b.settings.batchSize * (b.settings.seqLen - 1);
          return { stepsPerSecond: (b.step - a.step) / (b.trainingSeconds - a.trainingSeconds), tokens, ranOn: demo.getState().training.ranOn };
        }, steps[backend]);
      });
      if (rate.ranOn !== backend) throw new Error(`Train: expected steps on ${backend}, got ${rate.ranOn}`);
      trained[backend] = { ...rate, delay };
    }
    const { wasm: a, webgpu: b } = trained;
    console.log(`| ${label} | ${steps.wasm} / ${steps.webgpu} steps | ${a.stepsPerSecond.toFixed(2)} steps/s (${Math.round(a.stepsPerSecond * a.tokens)} tokens/s) `
      + `| ${b.stepsPerSecond.toFixed(2)} steps/s (${Math.round(b.stepsPerSecond * b.tokens)} tokens/s) | ${(a.stepsPerSecond / b.stepsPerSecond).toFixed(1)}x `
      + `| ${a.delay.median.toFixed(1)} / ${a.delay.worst.toFixed(1)} ms | ${b.delay.median.toFixed(1)} / ${b.delay.worst.toFixed(1)} ms |`);
  }

  const modes = (await page.evaluate(() => window.__mhaDemo.getState())).backends.modes;
  for (const [mode, { why }] of Object.entries(modes)) {
    if (why) console.log(`| ${mode} | | wasm | stays on wasm: ${why} | | | |`);
  }
  console.log(`\n(node bench/demo-gpu.mjs ${repeats}; ${new Date().toISOString().slice(0, 10)})`);
} finally {
  await close();
}
