// The package's public types are exactly the committed snapshot (tools/public-types.mjs says what
// it holds): every exported name of 'mha-wasm' and 'mha-wasm/tfjs', import and require, with its
// documentation, declaration and resolved members. A deliberate change to the types updates the
// snapshot with node tools/public-types.mjs, and the diff shows the change.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { SNAPSHOT, readPublicTypes, typedEntries } from '../../tools/public-types.mjs';

const { snapshot, declarationFiles } = readPublicTypes();

/** The snapshot's blocks by their first line ('interface Tensor', '# mha-wasm (import): ...'). */
const blocks = (text) => new Map(text.trimEnd().split('\n\n').map((block) => [block.split('\n')[0], block]));

test('the public types are the committed snapshot (node tools/public-types.mjs after a deliberate change)', () => {
  const expected = blocks(readFileSync(SNAPSHOT, 'utf8'));
  const actual = blocks(snapshot);
  assert.deepEqual([...actual.keys()], [...expected.keys()], 'the exported names');
  for (const [name, block] of expected) assert.equal(actual.get(name), block, name);
});

test('the snapshot covers every typed entry point, import and require', () => {
  const entries = typedEntries();
  assert.deepEqual(entries.map(([label]) => label),
    ['mha-wasm (import)', 'mha-wasm (require)', 'mha-wasm/tfjs (import)', 'mha-wasm/tfjs (require)', 'mha-wasm/models (import)', 'mha-wasm/models (require)']);
  const headers = [...blocks(readFileSync(SNAPSHOT, 'utf8')).keys()].filter((key) => key.startsWith('# '));
  assert.deepEqual(headers.map((header) => header.slice(2, header.indexOf(':'))), entries.map(([label]) => label));
  assert.match(headers[0], /\bForwardOptions, ForwardResult\b.*\binit\b.*\breadSafetensors\b/);
});

test('npm pack ships every declaration file the entry points load (each room\'s types.d.ts)', () => {
  for (const room of ['core', 'keras', 'webgpu', 'formats']) assert.ok(declarationFiles.includes(`bindings/js/${room}/types.d.ts`), room);
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'],
    { cwd: new URL('../../', import.meta.url), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const shipped = new Set(packed.files.map((file) => file.path));
  assert.deepEqual(declarationFiles.filter((file) => !shipped.has(file)), []);
});
