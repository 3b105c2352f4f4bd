// The wasm builds in dist/ (same embind API, see tools/build-wasm.sh) and how one is chosen.
// Every path is a literal `import()` or `new URL(..., import.meta.url)` so bundlers (Vite,
// webpack, Rollup, esbuild) find and emit the files.
import { simd as simdSupported, threads as threadsSupported } from 'wasm-feature-detect';
import { coreCount, threadsBlocker } from '#platform';

/** Each build: its features, how to import its JS (given its file URLs), and its files as kind: [file name, default URL]. */
export const VARIANTS = {
  'mha-simd': {
    simd: true,
    threads: false,
    factory: () => import('../../../dist/mha-simd.mjs'),
    files: { wasm: ['mha-simd.wasm', () => new URL('../../../dist/mha-simd.wasm', import.meta.url)] },
  },
  'mha-scalar': {
    simd: false,
    threads: false,
    factory: () => import('../../../dist/mha-scalar.mjs'),
    files: { wasm: ['mha-scalar.wasm', () => new URL('../../../dist/mha-scalar.wasm', import.meta.url)] },
  },
  'mha-simd-threads': {
    simd: true,
    threads: true,
    // Loaded from its URL, not bundled: the pthread workers import that same file by URL, and
    // bundlers must not try to bundle Emscripten's classic worker script (Vite cannot).
    factory: (urls) => import(/* @vite-ignore */ /* webpackIgnore: true */ urls.script.href),
    files: {
      wasm: ['mha-simd-threads.wasm', () => new URL('../../../dist/mha-simd-threads.wasm', import.meta.url)],
      // Emscripten's pthread workers load this script, which then imports the module's JS itself.
      worker: ['mha-simd-threads.worker.js', () => new URL('../../../dist/mha-simd-threads.worker.js', import.meta.url)],
      script: ['mha-simd-threads.mjs', () => new URL('../../../dist/mha-simd-threads.mjs', import.meta.url)],
    },
  },
};

function checkThreadsOption(threads) {
  if (threads === undefined) return;
  if (typeof threads !== 'number') throw new TypeError(`init: threads must be a number, got ${typeof threads}`);
  if (!Number.isInteger(threads) || threads < 1 || threads > 1024) {
    throw new RangeError(`init: threads must be an integer from 1 to 1024, got ${threads}`);
  }
}

/**
 * Picks the build for init()'s `simd` and `threads` options:
 * simd: undefined = detect, false = scalar, true = SIMD (fails to load where unsupported);
 * threads: undefined = every core where threads work, 1 = a single-thread build, N = N threads.
 * Returns { name, numThreads, warning }; warning says why requested threads are not used.
 */
export async function chooseVariant({ simd, threads } = {}) {
  if (simd !== undefined && typeof simd !== 'boolean') {
    throw new TypeError(`init: simd must be a boolean, got ${typeof simd}`);
  }
  checkThreadsOption(threads);
  const useSimd = simd ?? await simdSupported();
  const wanted = threads ?? coreCount();
  if (wanted === 1) return { name: useSimd ? 'mha-simd' : 'mha-scalar', numThreads: 1, warning: null };

  let blocker = threadsBlocker();
  if (!blocker && !useSimd) blocker = 'the threaded build needs WebAssembly SIMD (simd: false was chosen or SIMD is missing)';
  if (!blocker && !await threadsSupported()) blocker = 'this engine has no WebAssembly threads';
  if (blocker) {
    // Only an explicit request deserves a warning; the default quietly uses one thread.
    const warning = threads === undefined ? null
      : `mha-wasm: ${threads} threads were requested, but ${blocker}; using one thread`;
    return { name: useSimd ? 'mha-simd' : 'mha-scalar', numThreads: 1, warning };
  }
  return { name: 'mha-simd-threads', numThreads: wanted, warning: null };
}
