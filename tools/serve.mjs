#!/usr/bin/env node
// The demo's static server: serves the page (web/), the package (bindings/js/, dist/), the one
// runtime dependency the loader may import (wasm-feature-detect), the charts (uplot) and tfjs for the
// Sentiment tab's training (and tfjs' WebGPU backend for the tfjs tests), and nothing else, on 127.0.0.1 only.
// COOP/COEP headers make the page cross-origin isolated, which browsers require for wasm threads.
//
//   node tools/serve.mjs [port]        (or PORT=8080; port 0 picks a free one)
import { createReadStream, readFileSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const HOST = '127.0.0.1';

/** URL prefix -> directory. Only these directories are ever served. */
export const MOUNTS = [
  ['/bindings/js/', join(ROOT, 'bindings', 'js')],
  ['/dist/', join(ROOT, 'dist')],
  ['/node_modules/wasm-feature-detect/', join(ROOT, 'node_modules', 'wasm-feature-detect')],
  ['/node_modules/uplot/dist/', join(ROOT, 'node_modules', 'uplot', 'dist')],  // the Train mode's charts
  // The Your model mode's tokenizer.json (bindings/js/models/tokenizer.js).
  ['/node_modules/@huggingface/tokenizers/dist/', join(ROOT, 'node_modules', '@huggingface', 'tokenizers', 'dist')],
  // The Sentiment tab's training worker (loaded when the user presses Train): tfjs and its wasm backend.
  ['/node_modules/@tensorflow/tfjs/dist/', join(ROOT, 'node_modules', '@tensorflow', 'tfjs', 'dist')],
  ['/node_modules/@tensorflow/tfjs-backend-wasm/dist/', join(ROOT, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'dist')],
  // tfjs' WebGPU backend, for tests/browser/tfjs-backends.test.js and bench/tfjs/backends.mjs.
  ['/node_modules/@tensorflow/tfjs-backend-webgpu/dist/', join(ROOT, 'node_modules', '@tensorflow', 'tfjs-backend-webgpu', 'dist')],
  ['/', join(ROOT, 'web')],
];

const MIME_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.safetensors': 'application/octet-stream',
  '.npy': 'application/octet-stream',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
};

/**
 * Bare import specifiers the package uses, and where they are served. Browsers resolve bare
 * names only through an import map, and module workers (the demo computes in one) get none,
 * so JavaScript is served with these names replaced by their URLs.
 */
export const BARE_IMPORTS = {
  'wasm-feature-detect': '/node_modules/wasm-feature-detect/dist/esm/index.js',
  uplot: '/node_modules/uplot/dist/uPlot.esm.js',
  '@huggingface/tokenizers': '/node_modules/@huggingface/tokenizers/dist/tokenizers.min.mjs',
  // The package's own subpath imports (package.json "imports", e.g. "#platform"): their browser target.
  ...Object.fromEntries(Object.entries(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).imports ?? {})
    .map(([name, target]) => [name, (typeof target === 'string' ? target : target.browser ?? target.default).replace(/^\./, '')])),
};

/** Replaces `from 'name'` and `import('name')` for the names in BARE_IMPORTS. */
export function rewriteBareImports(source) {
  return source.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\2/g,
    (match, before, quote, name) => (Object.hasOwn(BARE_IMPORTS, name) ? `${before}${quote}${BARE_IMPORTS[name]}${quote}` : match));
}

const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
};

/**
 * Maps a request path to a file inside one of MOUNTS, or returns null. Rejects anything that could
 * leave the mount: encoded or plain "..", backslashes, NUL bytes, and symlinks pointing outside.
 */
export async function resolveRequestPath(urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null; // malformed percent-encoding
  }
  if (decoded.includes('\0') || decoded.includes('\\') || decoded.split('/').includes('..')) return null;
  if (decoded.endsWith('/')) decoded += 'index.html';
  const mount = MOUNTS.find(([prefix]) => decoded.startsWith(prefix));
  if (!mount) return null;
  const [prefix, directory] = mount;
  const candidate = resolve(directory, decoded.slice(prefix.length));
  if (!candidate.startsWith(directory + sep)) return null;
  try {
    const [real, realDirectory] = await Promise.all([realpath(candidate), realpath(directory)]);
    if (!real.startsWith(realDirectory + sep)) return null;
    return (await stat(real)).isFile() ? real : null;
  } catch {
    return null; // does not exist
  }
}

async function handle(request, response) {
  const send = (status, text) => {
    response.writeHead(status, { ...ISOLATION_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
    response.end(text);
  };
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(405, 'method not allowed\n');
  const rawPath = request.url.split('?')[0].split('#')[0];
  if (!rawPath.startsWith('/')) return send(400, 'bad request\n');
  // Refuse traversal outright (403) rather than letting it look like a missing file.
  if (/(^|\/|\\)(\.|%2e){2}(\/|\\|%2f|%5c|$)/i.test(rawPath) || /%2f|%5c|%00/i.test(rawPath)) {
    return send(403, 'forbidden\n');
  }
  const file = await resolveRequestPath(rawPath);
  if (!file) return send(404, 'not found\n');
  const extension = extname(file).toLowerCase();
  const headers = { ...ISOLATION_HEADERS, 'Content-Type': MIME_TYPES[extension] ?? 'application/octet-stream', 'Cache-Control': 'no-cache' };
  if (extension === '.js' || extension === '.mjs') {
    const body = Buffer.from(rewriteBareImports(await readFile(file, 'utf8')));
    response.writeHead(200, { ...headers, 'Content-Length': body.length });
    return response.end(request.method === 'HEAD' ? undefined : body);
  }
  const { size } = await stat(file);
  response.writeHead(200, { ...headers, 'Content-Length': size });
  if (request.method === 'HEAD') return response.end();
  createReadStream(file).on('error', () => response.destroy()).pipe(response);
}

/** Starts the server; resolves with { server, url } once it listens. */
export function startServer({ port = 8080 } = {}) {
  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500, ISOLATION_HEADERS);
      response.end();
    });
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      const { port: actual } = server.address();
      resolvePromise({ server, url: `http://${HOST}:${actual}/` });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve: port must be an integer 0-65535, got ${process.argv[2] ?? process.env.PORT}`);
    process.exit(2);
  }
  startServer({ port }).then(({ url }) => {
    console.log(`mha-wasm demo: ${url}  (Ctrl+C to stop)`);
  }, (error) => {
    console.error(`serve: cannot listen on ${HOST}:${port}: ${error.message}`);
    process.exit(1);
  });
}
