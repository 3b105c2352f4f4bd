// init(): which build it loads, single-flight caching, file overrides, failures and retries,
// and that every build gives PyTorch's numbers.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { relaxedSimd } from 'wasm-feature-detect';

import { init } from '../../bindings/js/index.js';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));
const { tolerance, cases } = loadFixtures();
const RELAXED = await relaxedSimd();  // (Node 22+; Node 20 without V8's flag: false)

/** Calls fn with console.warn captured; returns [result, warnings]. */
async function withWarnings(fn) {
  const warnings = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    return [await fn(), warnings];
  } finally {
    console.warn = original;
  }
}

function assertMatchesTorch(mha, names = ['self_basic', 'kdim_vdim', 'masks_combined', 'gqa', 'large']) {
  for (const name of names) {
    const c = cases.find((x) => x.name === name);
    const layer = new mha.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
    const { output } = runCase(layer, c);
    layer.dispose();
    const e = worstError(output.data, c.tensors.output.data, tolerance);
    assert.ok(e.ratio <= 1, `${mha.build.name} ${name}: output[${e.index}] off by ${e.absolute}`);
  }
}

describe('choosing a build', () => {
  test('default in Node: SIMD (relaxed where the engine has it) with threads on every core', async () => {
    const mha = await init();
    const cores = availableParallelism();
    const { numThreads, ...kind } = mha.build;
    const simd = `mha-${RELAXED ? 'relaxed-' : ''}simd`;
    assert.deepEqual(kind, cores > 1 ? { name: `${simd}-threads`, simd: true, relaxedSimd: RELAXED, threads: true }
      : { name: simd, simd: true, relaxedSimd: RELAXED, threads: false });
    // One per core, up to what the build's worker pool holds (16 on big machines).
    assert.ok(cores > 1 ? numThreads >= 2 && numThreads <= cores : numThreads === 1, `${numThreads} threads on ${cores} cores`);
    assertMatchesTorch(mha);
  });

  test('threads: 1 loads the single-thread SIMD build', async () => {
    const mha = await init({ threads: 1, relaxedSimd: false });
    assert.deepEqual({ ...mha.build }, { name: 'mha-simd', simd: true, relaxedSimd: false, threads: false, numThreads: 1 });
    assertMatchesTorch(mha);
  });

  test('simd: false loads the scalar build, which gives the same numbers', async () => {
    const mha = await init({ simd: false, threads: 1 });
    assert.deepEqual({ ...mha.build }, { name: 'mha-scalar', simd: false, relaxedSimd: false, threads: false, numThreads: 1 });
    assertMatchesTorch(mha);
  });

  test('relaxedSimd: refused by type, without SIMD, and (true) where the engine lacks it', async () => {
    await assert.rejects(init({ relaxedSimd: 'yes' }), { name: 'TypeError', message: 'init: relaxedSimd must be a boolean, got string' });
    await assert.rejects(init({ simd: false, relaxedSimd: true }),
      { name: 'TypeError', message: 'init: relaxedSimd: true needs SIMD, but simd: false was given' });
    if (RELAXED) {
      assert.equal((await init({ relaxedSimd: true, threads: 1 })).build.name, 'mha-relaxed-simd');
    } else {
      await assert.rejects(init({ relaxedSimd: true, threads: 1 }), {
        name: 'Error', message: 'init: relaxedSimd: true, but this engine has no WebAssembly relaxed SIMD (Chrome 114+, Node 22+, Firefox 145+)' });
    }
  });

  test('threads: 3 runs the threaded build, with the same numbers', async () => {
    const mha = await init({ threads: 3 });
    assert.equal(mha.build.name, 'mha-simd-threads');
    assert.equal(mha.build.threads, true);
    // The build keeps the count it was first loaded with (the default test above: every core).
    assert.ok(mha.build.numThreads >= 2, `${mha.build.numThreads} threads`);
    assertMatchesTorch(mha);
  });

  test('threads with simd: false warn and fall back to one thread', async () => {
    const [mha, warnings] = await withWarnings(() => init({ simd: false, threads: 4 }));
    assert.equal(mha.build.name, 'mha-scalar');
    assert.deepEqual(warnings, ['mha-wasm: 4 threads were requested, but the threaded build needs WebAssembly SIMD '
      + '(simd: false was chosen or SIMD is missing); using one thread']);
  });

  const BAD = [
    [null, TypeError, /init: options must be an object, got null/],
    [{ thread: 2 }, TypeError, /init: unknown option 'thread'; known options: wasmUrl, locateFile, simd, relaxedSimd, threads/],
    [{ threads: 0 }, RangeError, /init: threads must be an integer from 1 to 1024, got 0/],
    [{ threads: '2' }, TypeError, /init: threads must be a number, got string/],
    [{ simd: 'no' }, TypeError, /init: simd must be a boolean, got string/],
    [{ wasmUrl: 42 }, TypeError, /init: wasmUrl must be a string or a URL, got number/],
    [{ locateFile: 'x' }, TypeError, /init: locateFile must be a function, got string/],
  ];
  for (const [options, ErrorClass, pattern] of BAD) {
    test(`rejects options ${JSON.stringify(options)}`, async () => {
      await assert.rejects(init(options), (e) => e.constructor === ErrorClass && pattern.test(e.message));
    });
  }
});

describe('single-flight loading', () => {
  test('concurrent and repeated calls with the same options share one module', async () => {
    const all = await Promise.all([init({ threads: 1 }), init({ threads: 1 }), init({ threads: 1, simd: true })]);
    assert.equal(all[0], all[1]);
    assert.equal(all[0], all[2]);
    assert.equal(await init({ threads: 1 }), all[0]);
  });

  test('different builds are different modules; layers of one do not mix with the other', async () => {
    const simd = await init({ threads: 1 });
    const scalar = await init({ simd: false, threads: 1 });
    assert.notEqual(simd, scalar);
    assert.notEqual(simd.MultiHeadAttention, scalar.MultiHeadAttention);
  });

  test('a second threads count for the loaded threaded build warns and keeps the first', async () => {
    const first = await init({ threads: 3 });
    const other = first.build.numThreads + 1;
    const [second, warnings] = await withWarnings(() => init({ threads: other }));
    assert.equal(second, first);
    assert.deepEqual(warnings, [`mha-wasm: the threaded build is already loaded with ${first.build.numThreads} threads; `
      + `ignoring threads: ${other}`]);
  });
});

describe('where the files come from', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mha-loader-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a missing wasmUrl rejects with an Error naming the build and URL, and nothing is cached', async () => {
    const missing = join(dir, 'nowhere.wasm');
    await assert.rejects(init({ wasmUrl: missing, simd: false, threads: 1 }), (e) => {
      assert.equal(e.constructor, Error);
      assert.match(e.message, new RegExp(`^mha-wasm: could not load the mha-scalar build from ${pathToFileURL(missing).href}: ENOENT`));
      assert.ok(e.cause);
      return true;
    });
    // Retrying after the file appears works: the failure was not cached.
    copyFileSync(join(DIST, 'mha-scalar.wasm'), missing);
    const mha = await init({ wasmUrl: missing, simd: false, threads: 1 });
    assert.equal(mha.build.name, 'mha-scalar');
    assertMatchesTorch(mha, ['self_basic']);
  });

  test('a corrupt .wasm rejects with a clear Error, and logs nothing besides', async (t) => {
    const bad = join(dir, 'bad.wasm');
    copyFileSync(fileURLToPath(import.meta.url), bad);
    const warn = t.mock.method(console, 'warn', () => {});
    const error = t.mock.method(console, 'error', () => {});
    await assert.rejects(init({ wasmUrl: pathToFileURL(bad), threads: 1 }),
      { name: 'Error', message: /^mha-wasm: could not load the mha-simd build from file:.*bad\.wasm: CompileError: .*magic word/ });
    assert.equal(warn.mock.callCount() + error.mock.callCount(), 0);
  });

  test('a missing pthread worker script rejects instead of crashing or hanging', async () => {
    const locateFile = (file) => (file.endsWith('.worker.js') ? join(dir, 'no-such-worker.js') : undefined);
    await assert.rejects(init({ threads: 2, locateFile }),
      { name: 'Error', message: /^mha-wasm: could not load the mha-simd-threads build from .*: ENOENT.*no-such-worker\.js/ });
  });

  test('locateFile is asked for the build\'s files and its answer is used', async () => {
    copyFileSync(join(DIST, 'mha-simd.wasm'), join(dir, 'moved.wasm'));
    const asked = [];
    const locateFile = (fileName, defaultUrl) => {
      asked.push([fileName, defaultUrl]);
      return fileName.endsWith('.wasm') ? pathToFileURL(join(dir, 'moved.wasm')) : undefined;
    };
    const mha = await init({ locateFile, threads: 1 });
    assert.deepEqual(asked, [['mha-simd.wasm', new URL('../../dist/mha-simd.wasm', import.meta.url).href]]);
    assert.notEqual(mha, await init({ threads: 1 }));
    assertMatchesTorch(mha, ['self_basic']);
    assert.equal(await init({ locateFile, threads: 1 }), mha);
  });
});
