// tools/serve.mjs, the demo's static server: 127.0.0.1 only, its own files only (no traversal),
// the right MIME types, and the COOP/COEP headers that let the page use wasm threads.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { rewriteBareImports, startServer } from '../../tools/serve.mjs';

let server;
let port;

before(async () => {
  ({ server } = await startServer({ port: 0 }));
  port = server.address().port;
});
after(() => server.close());

/** A raw GET: the path is sent exactly as given (fetch would normalise "/../"). */
function get(path, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('binds to 127.0.0.1 only', () => {
  assert.equal(server.address().address, '127.0.0.1');
});

test('serves the page, the package and the wasm with their MIME types and isolation headers', async () => {
  const cases = [
    ['/', 'text/html; charset=utf-8'],
    ['/main.js', 'text/javascript; charset=utf-8'],
    ['/style.css', 'text/css; charset=utf-8'],
    ['/model/vocab.json', 'application/json; charset=utf-8'],
    ['/bindings/js/index.js', 'text/javascript; charset=utf-8'],
    ['/dist/mha-simd.wasm', 'application/wasm'],
    ['/node_modules/wasm-feature-detect/dist/esm/index.js', 'text/javascript; charset=utf-8'],
  ];
  for (const [path, type] of cases) {
    const response = await get(path);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers['content-type'], type, path);
    assert.equal(response.headers['cross-origin-opener-policy'], 'same-origin');
    assert.equal(response.headers['cross-origin-embedder-policy'], 'require-corp');
    assert.equal(Number(response.headers['content-length']), response.body.length);
  }
  const wasm = await get('/dist/mha-simd.wasm');
  assert.deepEqual([...wasm.body.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d]);
});

test('refuses path traversal and anything outside web/, bindings/js/, dist/', async () => {
  const refused = [
    '/../package.json', '/%2e%2e/package.json', '/%2E%2E/%2E%2E/etc/passwd', '/..%2fpackage.json',
    '/bindings/js/../../package.json', '/dist/..%2F..%2Fpackage.json', '/%2e%2e%5cpackage.json',
    '/model/..%00/vocab.json', '/package.json', '/tools/serve.mjs', '/src/mha/plan/errors.hpp', '/.git/HEAD',
    '/node_modules/playwright-core/package.json', '/bindings/embind/module.cpp', '/%zz',
  ];
  for (const path of refused) {
    const { status, body } = await get(path);
    assert.ok(status === 403 || status === 404 || status === 400, `${path} gave ${status}`);
    assert.ok(!body.toString().includes('"name": "mha-wasm"'), `${path} leaked package.json`);
  }
  assert.equal((await get('/../package.json')).status, 403);
  assert.equal((await get('/%2e%2e/package.json')).status, 403);
  assert.equal((await get('/package.json')).status, 404);
});

test('only GET and HEAD', async () => {
  assert.equal((await get('/', 'POST')).status, 405);
  const head = await get('/', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
});

test('the command line prints the URL and listens on the given port', async () => {
  const child = spawn(process.execPath, [new URL('../../tools/serve.mjs', import.meta.url).pathname, '0']);
  try {
    const line = await new Promise((resolve, reject) => {
      child.stdout.once('data', (d) => resolve(d.toString()));
      child.once('exit', (code) => reject(new Error(`serve.mjs exited with ${code}`)));
    });
    assert.match(line, /^mha-wasm demo: http:\/\/127\.0\.0\.1:\d+\//);
  } finally {
    child.kill();
  }
});

test('a bad port is refused with a message', async () => {
  const child = spawn(process.execPath, [new URL('../../tools/serve.mjs', import.meta.url).pathname, 'eighty']);
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(code, 2);
  assert.match(stderr, /port must be an integer 0-65535, got eighty/);
});

test('JavaScript is served with the package\'s bare imports pointing at their served files', async () => {
  assert.equal(rewriteBareImports("import { simd, threads } from 'wasm-feature-detect';"),
    "import { simd, threads } from '/node_modules/wasm-feature-detect/dist/esm/index.js';");
  assert.equal(rewriteBareImports('const f = await import("wasm-feature-detect");'),
    'const f = await import("/node_modules/wasm-feature-detect/dist/esm/index.js");');
  assert.equal(rewriteBareImports("import { coreCount } from '#platform';"), "import { coreCount } from '/bindings/js/platform.browser.js';");
  assert.equal(rewriteBareImports("import x from './layer.js'; import 'other-package';"), "import x from './layer.js'; import 'other-package';");
  // Files without such imports are served byte for byte.
  const { readFile } = await import('node:fs/promises');
  const served = await get('/bindings/js/core/layer.js');
  assert.deepEqual(served.body, await readFile(new URL('../../bindings/js/core/layer.js', import.meta.url)));
});
