// The demo page's Generate mode in Debian's Chromium, as a person runs it: greedy generation of
// N tokens after the page's default text, with the KV cache and without (the whole text again
// for every token). Prints tokens per second and ms per token, the whole step and the attention
// layers alone, as the page's header shows them (the worker's step times; drawing excluded).
// Then the input delay of mouse events while the page generates without the cache: from the
// moment the browser has an event to the moment a handler runs.
//   node bench/demo-generate.mjs [counts, default 200,1000]
import { startDemo } from '../tests/browser/browser.js';

const counts = (process.argv[2] ?? '200,1000').split(',').map(Number);
const { page, close } = await startDemo();
let defaultText;

/** One greedy run of `count` tokens after the default text, through the page's controls. */
async function generate(count, useCache) {
  await page.evaluate((text) => window.__mhaDemo.setText(text), defaultText);
  await page.locator('#gen-count').fill(String(count));
  await page.locator('#gen-sampling').selectOption('greedy');
  await page.locator('#gen-no-cache').setChecked(!useCache);
  await page.locator('#gen-start').click();
  await page.evaluate(() => window.__mhaDemo.generationDone());
  const g = (await page.evaluate(() => window.__mhaDemo.getState())).generation;
  if (g.generated !== count) throw new Error(`generated ${g.generated} of ${count}`);
  return g;
}

/** Worst and median delay of 30 mouse moves over the grid while a slow (uncached) run goes on. */
async function inputDelay() {
  await page.evaluate((text) => window.__mhaDemo.setText(text), defaultText);
  await page.locator('#gen-count').fill('2000');
  await page.locator('#gen-sampling').selectOption('greedy');
  await page.locator('#gen-no-cache').setChecked(true);
  await page.locator('#gen-start').click();
  await page.waitForFunction(() => window.__mhaDemo.getState().generation.generated >= 150, null, { timeout: 120_000 });
  await page.evaluate(() => {
    window.inputDelays = [];
    addEventListener('mousemove', (event) => window.inputDelays.push(performance.now() - event.timeStamp), { capture: true });
  });
  const box = await page.locator('#grid').boundingBox();
  for (let k = 0; k < 30; k++) {
    await page.mouse.move(box.x + 10 + 10 * k, box.y + 20 + (k % 5));
    await new Promise((resolve) => { setTimeout(resolve, 30); });
  }
  const delays = (await page.evaluate(() => window.inputDelays)).sort((a, b) => a - b);
  await page.locator('#gen-stop').click();
  return { worst: delays.at(-1), median: delays[Math.floor(delays.length / 2)], count: delays.length };
}

try {
  defaultText = await page.locator('#text').evaluate((box) => box.defaultValue);
  const build = await page.evaluate(() => window.__mhaDemo.getState().build);
  console.log(`demo page, ${build.name} (${build.threads ? `${build.numThreads} threads` : '1 thread'}), prompt ${defaultText.length + 1} tokens, greedy`);
  console.log('| new tokens | KV cache | tokens/s | ms per token | attention ms per token | wall s | cache / no cache |');
  console.log('|---:|---|---:|---:|---:|---:|---:|');
  // Warm-up (not printed): the first run of each kind pays for the JIT.
  for (const [count, useCache] of [[100, true], [100, false], ...counts.map((c) => [c, true]), ...counts.map((c) => [c, true])]) {
    await generate(count, useCache);
  }
  for (const count of counts) {
    const rates = {};
    for (const useCache of [true, false]) {
      const g = await generate(count, useCache);
      rates[useCache] = g.tokensPerSecond;
      console.log(`| ${count} | ${useCache ? 'yes' : 'no'} | ${g.tokensPerSecond.toFixed(0)} | ${g.msPerToken.toFixed(3)} | `
        + `${g.attentionMsPerToken.toFixed(3)} | ${(g.wallMs / 1000).toFixed(1)} | ${useCache ? '' : `${(rates.true / rates.false).toFixed(1)}x`} |`);
    }
  }
  const delay = await inputDelay();
  console.log(`input delay while generating without the cache: worst ${delay.worst.toFixed(1)} ms, `
    + `median ${delay.median.toFixed(1)} ms over ${delay.count} mouse events`);
} finally {
  await close();
}
