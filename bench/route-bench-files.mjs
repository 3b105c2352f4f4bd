// The browser benches' pages (bench/webgpu.mjs, bench/ort-interop.mjs) load the bench's own files
// and onnxruntime-web from bench/, beside the package's server: this serves them, cross-origin
// isolated as the package's pages are, plus a blank page to start from.
import { readFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' };

/**
 * Routes `${url}bench/**` of a Playwright browser context: /bench/blank.html, the bytes of
 * `extra` (a Map of path -> bytes, read at request time), else the file under bench/.
 */
export function routeBenchFiles(context, url, extra = new Map()) {
  return context.route(`${url}bench/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/bench/blank.html') return route.fulfill({ body: '<!doctype html><title>bench</title>', headers: { ...ISOLATION, 'Content-Type': 'text/html' } });
    if (extra.has(path)) return route.fulfill({ body: extra.get(path), headers: { ...ISOLATION, 'Content-Type': 'application/octet-stream' } });
    const file = join(ROOT, path);
    if (!file.startsWith(join(ROOT, 'bench') + '/')) return route.fulfill({ status: 403 });
    try {
      return route.fulfill({ body: await readFile(file), headers: { ...ISOLATION, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' } });
    } catch {
      return route.fulfill({ status: 404 });
    }
  });
}
