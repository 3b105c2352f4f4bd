// llama.cpp's wasm build (npm @wllama/wllama, bench/package.json) in Debian's Chromium: loads a
// GGUF file from a folder served by a small cross-origin isolated server (wllama's threads need
// it), on the CPU (n_gpu_layers 0), and runs one greedy completion of a prompt, as its users do
// (createCompletion: temperature 0, ignore_eos, no prompt cache). Returns its text, llama-server's
// timings (prompt_n, prompt_ms, predicted_n, predicted_ms) and whether it ran multithreaded.
// ../shared/WHOLE-MODEL-PEERS.md §1.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from '../../tests/browser/browser.js';

const WLLAMA = fileURLToPath(new URL('../node_modules/@wllama/wllama/esm/', import.meta.url));
const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

/** Serves / (an empty page), /wllama/* (its ESM build) and /files/<name> (`folder`'s files), isolated. */
function serve(folder) {
  const server = createServer(async (request, response) => {
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' };
    const path = decodeURIComponent(new URL(request.url, 'http://x').pathname);
    if (path === '/') {
      response.writeHead(200, { ...headers, 'Content-Type': 'text/html' });
      return response.end('<!doctype html><meta charset="utf-8"><title>wllama</title>');
    }
    const [, root, rest] = path.match(/^\/(wllama|files)\/(.+)$/) ?? [];
    const file = root === 'wllama' && !rest.includes('..') ? join(WLLAMA, rest) : root === 'files' ? join(folder, basename(rest)) : null;
    const info = file && await stat(file).catch(() => null);
    if (!info?.isFile()) { response.writeHead(404, headers); return response.end(); }
    const type = TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream';
    response.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': info.size });
    createReadStream(file).pipe(response);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` })));
}

/** One browser and server for several runs over `folder`'s GGUF files; close() ends both. */
export async function openWllama(folder) {
  const { server, url } = await serve(folder);
  const browser = await launchBrowser();
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  if (process.env.WLLAMA_LOG) page.on('console', (m) => console.error('[wllama]', m.text()));
  await page.goto(url);
  return {
    /** `gguf`: a file name in the folder; `threads`: wllama's n_threads. */
    async run({ gguf, prompt, maxTokens, threads, context = 1024 }) {
      if (process.env.WLLAMA_LOG) await page.evaluate(() => { globalThis.__wllamaLogs = true; });
      return page.evaluate(async ({ gguf, prompt, maxTokens, threads, context }) => {
        const { Wllama } = await import('/wllama/index.js');
        const w = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { suppressNativeLog: !globalThis.__wllamaLogs });
        w.setCompat(null);  // (its fallback build comes from a CDN, which is not reachable here)
        const blob = await (await fetch('/files/' + gguf)).blob();
        const loadStart = performance.now();
        await w.loadModel([blob], { n_ctx: context, n_threads: threads, n_gpu_layers: 0, seed: 1 });
        const loadMs = performance.now() - loadStart;
        const r = await w.createCompletion({ prompt, max_tokens: maxTokens, temperature: 0, top_k: 1, ignore_eos: true, cache_prompt: false });
        const multithread = w.isMultithread();
        await w.exit();
        return { text: r.choices[0].text, timings: r.timings, loadMs, multithread };
      }, { gguf, prompt, maxTokens, threads, context });
    },
    errors,
    async close() {
      await browser.close();
      server.close();
    },
  };
}
