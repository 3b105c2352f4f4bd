// The option schema (bindings/js/api/options.js) against what it describes: the layers' key
// lists (their "unknown option" messages), the config each key round-trips through embind's
// config() for each dtype that takes it, the core's float64 refusals, the Keras layers' argument
// names, the types (core/types.d.ts) and docs/api.md's tables.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  CONFIG_OPTIONS, configKeys, FORWARD_OPTIONS, forwardOptionKeys, REFUSED_BY_CORE,
} from '../../bindings/js/api/options.js';
import { init } from '../../bindings/js/index.js';
import { API_DOC, withFreshTable } from '../../tools/option-table.mjs';
import { CONFIG_SENTINELS, knownOptions } from './option-walk.js';

const mha = await init({ threads: 1 });
const BASE = { embedDim: 8, numHeads: 2 };
const x = { data: new Float32Array(8), shape: [1, 8] };

test("the wasm layer's key lists are the schema's", () => {
  assert.deepEqual(knownOptions(() => new mha.MultiHeadAttention({ ...BASE, notAnOption: 1 })), configKeys('wasm'));
  const layer = new mha.MultiHeadAttention(BASE).initialize();
  assert.deepEqual(knownOptions(() => layer.forward(x, null, null, { notAnOption: 1 })), forwardOptionKeys('wasm'));
  layer.dispose();
  // The WebGPU layer takes the same config and, after the shared forward options, its own.
  assert.deepEqual(configKeys('webgpu'), configKeys('wasm'));
  assert.deepEqual(forwardOptionKeys('webgpu'), [...forwardOptionKeys('wasm'), 'outputLocation']);
});

/** The config a layer resolves, or the error it throws. */
function resolved(config) {
  try {
    const layer = new mha.MultiHeadAttention(config);
    const c = layer.config;
    layer.dispose();
    return c;
  } catch (error) {
    return error;
  }
}

for (const dtype of ['float32', 'float64']) {
  test(`every config key a ${dtype} layer takes round-trips through config(), and the others are refused by name`, () => {
    const base = dtype === 'float64' ? { ...BASE, dtype } : BASE;
    const plain = resolved(base);
    assert.ok(!(plain instanceof Error), String(plain));
    for (const o of CONFIG_OPTIONS) {
      const config = { ...base, ...CONFIG_SENTINELS[o.name] };
      if (o.name === 'dtype') config.dtype = dtype;  // (its sentinel is 'float64': here each dtype's own)
      const c = resolved(config);
      if (dtype === 'float64' && o.float64 !== true) {
        assert.equal(o.float64, REFUSED_BY_CORE, o.name);
        assert.ok(c instanceof TypeError && c.message.startsWith(`MultiHeadAttention: ${o.name}: not with dtype 'float64'`),
          `${o.name}: ${c.message ?? 'accepted'}`);
        continue;
      }
      assert.ok(!(c instanceof Error), `${o.name}: ${c.message}`);
      // config() gives back a config that resolves to itself: every key it shows is taken again.
      assert.deepEqual(resolved(c), c, o.name);
      // The sentinel shows in the resolved config (seed is the JavaScript layer's, never shown;
      // dtype 'float32' and alibi's slopes show as their resolved form).
      if (o.name === 'seed' || (o.name === 'dtype' && dtype === 'float32')) {
        assert.deepEqual(c, plain, o.name);
      } else if (o.name === 'alibi') {
        assert.equal(c.alibiSlopes.length, BASE.numHeads);
      } else {
        const given = config[o.name];
        const shown = c[o.name];
        if (typeof given === 'object') {
          for (const [k, v] of Object.entries(given)) assert.deepEqual(shown[k], v, `${o.name}.${k}`);
        } else {
          // (A float32 layer keeps its scale as a float32.)
          assert.equal(shown, o.name === 'scale' && dtype === 'float32' ? Math.fround(given) : given, o.name);
        }
      }
    }
  });
}

test("a float64 layer refuses the forward options the schema says, in the schema's words", () => {
  const layer = new mha.MultiHeadAttention({ ...BASE, dtype: 'float64' }).initialize();
  const x64 = { data: new Float64Array(8), shape: [1, 8] };
  for (const o of FORWARD_OPTIONS.filter((f) => f.backends.wasm && typeof f.float64 === 'string')) {
    assert.throws(() => layer.forward(x64, null, null, { [o.name]: {} }),
      { name: 'TypeError', message: `forward: ${o.name}: not with dtype 'float64' (${o.float64})` });
  }
  layer.dispose();
});

test("the Keras layers' arguments named by the schema are theirs", () => {
  const kerasConfig = knownOptions(() => new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 4, notAnOption: 1 }));
  for (const o of CONFIG_OPTIONS.filter((c) => c.backends.keras)) assert.ok(kerasConfig.includes(o.backends.keras), o.name);
  const layer = new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 4, queryDim: 8 });
  const q = { data: new Float32Array(8), shape: [1, 1, 8] };
  const kerasCall = knownOptions(() => layer.call(q, q, null, { notAnOption: 1 }));
  for (const o of FORWARD_OPTIONS.filter((f) => f.backends.keras)) assert.ok(kerasCall.includes(o.backends.keras), o.name);
  layer.dispose();
});

/** The member names of `interface name` in a .d.ts. */
function interfaceKeys(file, name) {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  const body = text.slice(text.indexOf(`export interface ${name} {`)).split('\n}')[0];
  return [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]);
}

test('the types declare exactly the schema\'s keys', () => {
  const types = '../../bindings/js/core/types.d.ts';
  assert.deepEqual(interfaceKeys(types, 'AttentionConfig').sort(), configKeys('wasm').slice().sort());
  assert.deepEqual(interfaceKeys(types, 'ForwardOptions').sort(), forwardOptionKeys('wasm').slice().sort());
});

test("docs/api.md's option table is fresh, and its Configuration table names every config key", () => {
  const doc = readFileSync(API_DOC, 'utf8');
  assert.equal(doc, withFreshTable(doc), 'run node tools/option-table.mjs');
  const section = doc.slice(doc.indexOf('## Configuration'), doc.indexOf('### Which backends take each option'));
  const named = [...section.matchAll(/^\| ([^|]+) \|/gm)].slice(1)
    .flatMap((m) => [...m[1].matchAll(/`(\w+)`/g)].map((k) => k[1]));
  assert.deepEqual(named.slice().sort(), configKeys('wasm').slice().sort());
});
