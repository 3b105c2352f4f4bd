// Serves the test project on 127.0.0.1 and runs its pages in headless Chromium (playwright-core,
// Debian's /usr/bin/chromium): the Vite-built page (dist/) cross-origin isolated (threads possible),
// not isolated (threads requested: expect one thread and a warning), and with simd: false; the same
// page built by webpack (webpack-dist/); the bundler-free page (plain-page.html, an import map
// over node_modules/), isolated and not; and the Vite page from Vite's dev server (with the
// optimizeDeps exclude docs/browsers-and-bundlers.md asks for), threads included.
// Usage: node browser-check.mjs <project dir>
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';

import { chromium } from 'playwright-core';
import { createServer as createViteServer } from 'vite';

import { assertAllPass } from './run-cases.js';

const root = process.argv[2];
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// /isolated/... and /plain/... serve the same files, with and without the COOP/COEP headers.
const server = createServer(async (request, response) => {
  const [, mode, ...rest] = new URL(request.url, 'http://x').pathname.split('/');
  const file = normalize(join(root, rest.join('/') || 'index.html'));
  try {
    if (!file.startsWith(normalize(root))) throw new Error('outside the root');
    const body = await readFile(file);
    response.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream', ...(mode === 'isolated' ? ISOLATION : {}) });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const viteDev = await createViteServer({
  root, configFile: false, logLevel: 'warn', optimizeDeps: { exclude: ['mha-wasm'] },
  server: { host: '127.0.0.1', port: 0, headers: ISOLATION, hmr: false },
});
await viteDev.listen();
const devBase = `http://127.0.0.1:${viteDev.httpServer.address().port}`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
// Chromium has relaxed SIMD, so the default is a relaxed-SIMD build; ?relaxedSimd=0 the plain one.
const RUNS = [
  { path: '/isolated/dist/index.html?threads=2', expect: { name: 'mha-relaxed-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/isolated/dist/index.html?threads=2&relaxedSimd=0', expect: { name: 'mha-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/plain/dist/index.html?threads=4', expect: { name: 'mha-relaxed-simd', threads: false, isolated: false, warns: true } },
  { path: '/plain/dist/index.html?relaxedSimd=0', expect: { name: 'mha-simd', threads: false, isolated: false, warns: false } },
  { path: '/plain/dist/index.html?simd=0&threads=1', expect: { name: 'mha-scalar', threads: false, isolated: false, warns: false } },
  { path: '/isolated/dist/index.html?threads=2&missingWorker',
    expectError: /^Error: mha-wasm: could not load the mha-relaxed-simd-threads build from .*: the pthread worker script .*no-such-worker\.js failed to load/ },
  { path: '/isolated/webpack-dist/index.html?threads=2', expect: { name: 'mha-relaxed-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/isolated/webpack-dist/index.html?threads=2&relaxedSimd=0', expect: { name: 'mha-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/plain/webpack-dist/index.html?threads=4', expect: { name: 'mha-relaxed-simd', threads: false, isolated: false, warns: true } },
  { path: '/isolated/plain-page.html?threads=2', expect: { name: 'mha-relaxed-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/plain/plain-page.html', expect: { name: 'mha-relaxed-simd', threads: false, isolated: false, warns: false } },
  { path: '/index.html?threads=2', dev: true, expect: { name: 'mha-relaxed-simd-threads', threads: true, isolated: true, warns: false } },
  { path: '/index.html?simd=0&threads=1', dev: true, expect: { name: 'mha-scalar', threads: false, isolated: true, warns: false } },
];
let failed = false;
try {
  for (const { path, dev, expect, expectError } of RUNS) {
    const label = dev ? `vite dev ${path}` : path;
    const page = await browser.newPage();
    const errors = [], log = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => log.push(`${message.type()}: ${message.text()}`));
    page.on('requestfailed', (request) => log.push(`request failed: ${request.url()} (${request.failure()?.errorText})`));
    page.on('response', (response) => response.status() >= 400 && log.push(`HTTP ${response.status()}: ${response.url()}`));
    try {
      await page.goto((dev ? devBase : base) + path);
      await page.waitForFunction(() => window.__result, null, { timeout: 60_000 })
        .catch(() => { throw new Error(`no result within 60 s; page log:\n  ${log.join('\n  ')}`); });
      const result = await page.evaluate(() => window.__result);
      if (expectError) {
        if (!expectError.test(result.error ?? '')) throw new Error(`expected an error ${expectError}, got ${JSON.stringify(result).slice(0, 300)}`);
        console.log(`chromium ${label}: init() rejected as expected: ${result.error.split('\n')[0]}`);
        continue;
      }
      if (result.error) throw new Error(result.error);
      const { build, isolated, warnings } = result;
      const got = { name: build.name, threads: build.threads, isolated, warns: warnings.some((w) => /threads were requested, but/.test(w)) };
      if (JSON.stringify(got) !== JSON.stringify(expect)) throw new Error(`expected ${JSON.stringify(expect)}, got ${JSON.stringify(got)}`);
      console.log(assertAllPass(`chromium ${label} ${build.name} (${build.numThreads} thread(s))`, result.results));
      if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
    } catch (error) {
      failed = true;
      console.error(`FAIL chromium ${label}: ${error.message}`);
    } finally {
      await page.close();
    }
  }
} finally {
  await browser.close();
  server.close();
  await viteDev.close();
}
process.exitCode = failed ? 1 : 0;
