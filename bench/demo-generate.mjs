// The demo page's Generate mode in Debian's Chromium, as a person runs it: greedy generation of
// N tokens after the page's default text, with the KV cache and without (the whole text again
// for every token). Prints tokens per second and ms per token, the whole step and the attention
// layers alone, as the page's header shows them (the worker's step times; drawing excluded).
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
} finally {
  await close();
}
