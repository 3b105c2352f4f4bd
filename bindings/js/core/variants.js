// The wasm builds in dist/ (same embind API, see tools/build-wasm.sh) and how one is chosen.
// Every path is a literal `import()` or `new URL(..., import.meta.url)` so bundlers (Vite,
// webpack, Rollup, esbuild) find and emit the files.
import { relaxedSimd as relaxedSimdSupported, simd as simdSupported, threads as threadsSupported } from 'wasm-feature-detect';
import { coreCount, threadsBlocker } from '#platform';

/** Each build: its features, how to import its JS (given its file URLs), and its files as kind: [file name, default URL]. */
export const VARIANTS = {
  'mha-simd': {
    simd: true,
    relaxedSimd: false,
    threads: false,
    factory: () => import('../../../dist/mha-simd.mjs'),
    files: { wasm: ['mha-simd.wasm', () => new URL('../../../dist/mha-simd.wasm', import.meta.url)] },
  },
  'mha-scalar': {
    simd: false,
    relaxedSimd: false,
    threads: false,
    factory: () => import('../../../dist/mha-scalar.mjs'),
    files: { wasm: ['mha-scalar.wasm', () => new URL('../../../dist/mha-scalar.wasm', import.meta.url)] },
  },
  'mha-simd-threads': {
    simd: true,
    relaxedSimd: false,
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
  // The two SIMD builds again with relaxed SIMD's fused multiply-add (tools/build-wasm.sh).
  'mha-relaxed-simd': {
    simd: true,
    relaxedSimd: true,
    threads: false,
    factory: () => import('../../../dist/mha-relaxed-simd.mjs'),
    files: { wasm: ['mha-relaxed-simd.wasm', () => new URL('../../../dist/mha-relaxed-simd.wasm', import.meta.url)] },
  },
  'mha-relaxed-simd-threads': {
    simd: true,
    relaxedSimd: true,
    threads: true,
    factory: (urls) => import(/* @vite-ignore */ /* webpackIgnore: true */ urls.script.href),
    files: {
      wasm: ['mha-relaxed-simd-threads.wasm', () => new URL('../../../dist/mha-relaxed-simd-threads.wasm', import.meta.url)],
      worker: ['mha-relaxed-simd-threads.worker.js', () => new URL('../../../dist/mha-relaxed-simd-threads.worker.js', import.meta.url)],
      script: ['mha-relaxed-simd-threads.mjs', () => new URL('../../../dist/mha-relaxed-simd-threads.mjs', import.meta.url)],
    },
  },
};

/** The build with these features. */
function variantName({ simd, relaxedSimd, threads }) {
  if (!simd) return 'mha-scalar';
  return `mha-${relaxedSimd ? 'relaxed-' : ''}simd${threads ? '-threads' : ''}`;
}

function checkThreadsOption(threads) {
  if (threads === undefined) return;
  if (typeof threads !== 'number') throw new TypeError(`init: threads must be a number, got ${typeof threads}`);
  if (!Number.isInteger(threads) || threads < 1 || threads > 1024) {
    throw new RangeError(`init: threads must be an integer from 1 to 1024, got ${threads}`);
  }
}

/**
 * Picks the build for init()'s `simd`, `relaxedSimd` and `threads` options:
 * simd: undefined = detect, false = scalar, true = SIMD (fails to load where unsupported);
 * relaxedSimd: undefined = where the engine has relaxed SIMD, false = plain SIMD128, true = relaxed
 * SIMD (fails to load where unsupported; needs SIMD);
 * threads: undefined = every core where threads work, 1 = a single-thread build, N = N threads.
 * Returns { name, numThreads, warning }; warning says why requested threads are not used.
 */
export async function chooseVariant({ simd, relaxedSimd, threads } = {}) {
  for (const [key, value] of [['simd', simd], ['relaxedSimd', relaxedSimd]]) {
    if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`init: ${key} must be a boolean, got ${typeof value}`);
  }
  if (simd === false && relaxedSimd === true) throw new TypeError('init: relaxedSimd: true needs SIMD, but simd: false was given');
  checkThreadsOption(threads);
  const useSimd = simd ?? await simdSupported();
  const relaxedHere = useSimd && await relaxedSimdSupported();
  if (relaxedSimd === true && !relaxedHere) {
    throw new Error('init: relaxedSimd: true, but this engine has no WebAssembly relaxed SIMD (Chrome 114+, Node 22+, Firefox 145+)');
  }
  const useRelaxed = relaxedSimd ?? relaxedHere;
  const wanted = threads ?? coreCount();
  const single = variantName({ simd: useSimd, relaxedSimd: useRelaxed, threads: false });
  if (wanted === 1) return { name: single, numThreads: 1, warning: null };

  let blocker = threadsBlocker();
  if (!blocker && !useSimd) blocker = 'the threaded build needs WebAssembly SIMD (simd: false was chosen or SIMD is missing)';
  if (!blocker && !await threadsSupported()) blocker = 'this engine has no WebAssembly threads';
  if (blocker) {
    // Only an explicit request deserves a warning; the default quietly uses one thread.
    const warning = threads === undefined ? null
      : `mha-wasm: ${threads} threads were requested, but ${blocker}; using one thread`;
    return { name: single, numThreads: 1, warning };
  }
  return { name: variantName({ simd: true, relaxedSimd: useRelaxed, threads: true }), numThreads: wanted, warning: null };
}
