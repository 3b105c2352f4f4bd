// The mha-wasm/tfjs entry as a package user meets it: reachable through the package's exports (ES
// module and CommonJS), absent from the main entry's module graph (which never loads tfjs), and a
// clear Error naming @tensorflow/tfjs when tfjs is not installed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Every module file statically imported from `entry` (relative imports followed; packages listed). */
function moduleGraph(entry) {
  const files = new Set(), packages = new Set(), queue = [entry];
  while (queue.length) {
    const file = queue.pop();
    if (files.has(file)) continue;
    files.add(file);
    const source = readFileSync(file, 'utf8');
    for (const [, specifier] of source.matchAll(/(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)) {
      if (!specifier) continue;
      if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
      else packages.add(specifier);
    }
  }
  return { files, packages };
}

test('the main entry never loads tfjs; mha-wasm/tfjs is a separate entry', () => {
  const main = moduleGraph(join(ROOT, 'bindings/js/index.js'));
  assert.ok(main.files.size > 5, 'the graph was followed');
  const tfjsFiles = [...main.files].filter((f) => /tfjs/.test(f.slice(ROOT.length)));
  assert.deepEqual(tfjsFiles, []);
  assert.ok(![...main.packages].some((p) => p.startsWith('@tensorflow')));
  const tfjsEntry = moduleGraph(join(ROOT, 'bindings/js/tfjs.js'));
  assert.ok([...tfjsEntry.files].some((f) => f.endsWith('tfjs/layer.js')));
});

test('import and require of mha-wasm/tfjs resolve through the exports map', () => {
  const script = `
    const esm = await import('mha-wasm/tfjs');
    const cjs = req('mha-wasm/tfjs');
    const tf = await import('@tensorflow/tfjs');
    console.log = () => {};
    const api = await cjs.mhaTfjs(tf);
    const refused = await cjs.tfjsToGpu(tf, null).catch((e) => e.message);
    process.stdout.write(JSON.stringify([typeof esm.mhaTfjs, typeof esm.registerFastGradients, typeof cjs.load,
      api.MultiHeadAttention === (await esm.mhaTfjs(tf)).MultiHeadAttention, api.MultiHeadAttention.className,
      typeof cjs.tfjsToGpu, typeof cjs.gpuToTfjs, refused]));`;
  // A file inside the package (self-reference by name), not node -e: tfjs evaluates `require` in
  // its caller's scope, which an -e module lacks.
  const dir = mkdtempSync(join(ROOT, 'build', 'exports-'));
  let out;
  try {
    writeFileSync(join(dir, 'check.mjs'), `import { createRequire } from 'node:module'; const req = createRequire('${ROOT}package.json'); ${script}`);
    out = execFileSync(process.execPath, [join(dir, 'check.mjs')], { cwd: ROOT, encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(JSON.parse(out), ['function', 'function', 'function', true, 'MultiHeadAttention', 'function', 'function',
    "tfjsToGpu: tfjs' backend is 'cpu'; GPU tensors pass between tfjs and mha-wasm only on tfjs' 'webgpu' backend "
    + "(await tf.setBackend('webgpu'), then init({ backend: 'webgpu', device: tf.backend().device }))"]);
});

test('without @tensorflow/tfjs installed, mhaTfjs() names the package to install', () => {
  // A copy of the package whose node_modules holds only its runtime dependency.
  const dir = mkdtempSync(join(tmpdir(), 'mha-wasm-no-tfjs-'));
  try {
    cpSync(join(ROOT, 'bindings'), join(dir, 'bindings'), { recursive: true });
    cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), readFileSync(join(ROOT, 'package.json')));
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(ROOT, 'node_modules/wasm-feature-detect'), join(dir, 'node_modules/wasm-feature-detect'));
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `
      const { mhaTfjs } = await import(${JSON.stringify(join(dir, 'bindings/js/tfjs.js'))});
      try { await mhaTfjs(); } catch (e) { process.stdout.write(e.constructor.name + ': ' + e.message); }`], { encoding: 'utf8' });
    assert.match(out, /^Error: mhaTfjs: @tensorflow\/tfjs is not installed; mha-wasm\/tfjs needs it \(npm install @tensorflow\/tfjs\), or pass your tfjs namespace: mhaTfjs\(tf\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('mhaTfjs with something that is not tfjs is a TypeError naming the package', async () => {
  const { mhaTfjs } = await import('../../bindings/js/tfjs.js');
  await assert.rejects(mhaTfjs({ layers: {} }), { name: 'TypeError', message: /^mhaTfjs: tf must be the @tensorflow\/tfjs namespace \(import \* as tf from '@tensorflow\/tfjs'\), got object$/ });
});
