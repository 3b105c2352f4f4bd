// Instantiates one wasm build: finds its files (defaults next to dist/'s JS, or the caller's
// wasmUrl / locateFile), hands Node the bytes, and wraps the embind module in the core layer API
// (index.js adds the Keras layer on top: core does not depend on keras/).
import { factoryArgs, readWasmFile, workerScriptUrl } from '#platform';
import { defineAttentionFunction } from './attention-function.js';
import { chooseKernels, forceKernels, kernelSpec, readKernelChoice } from './kernel-choice.js';
import { defineMultiHeadAttention } from './layer.js';
import { forwardPlanner, PLANNER } from './planner.js';
import { defineMlpActivation, MLP_ACTIVATION } from './mlp-activation.js';
import { defineRowNorm, ROW_NORM } from './row-norm.js';
import { defineLinear } from './linear.js';
import { defineLinearLayer } from './linear-layer.js';
import { threadsStarted } from './thread-start.js';
import { VARIANTS } from './variants.js';

/**
 * The URL of each file a build needs: wasmUrl (for the .wasm), else locateFile(name, default), else
 * the default. Relative URLs are relative to the page in a browser, to dist/ in Node (no page there).
 */
function fileUrls(name, { wasmUrl, locateFile }) {
  const urls = {};
  for (const [kind, [fileName, defaultUrl]] of Object.entries(VARIANTS[name].files)) {
    const located = kind === 'wasm' && wasmUrl !== undefined ? wasmUrl : locateFile?.(fileName, defaultUrl().href);
    urls[kind] = located === undefined || located === null ? defaultUrl() : new URL(located, globalThis.location?.href ?? defaultUrl());
  }
  return urls;
}

/** The loaded module's way to force variants later (init's `kernels` on a module already loaded). */
export const FORCE_KERNELS = Symbol('forceKernels');

/** Loads build `name` with `numThreads` threads; resolves to the core module object (not frozen). */
export async function instantiate(name, numThreads, options) {
  const urls = fileUrls(name, options);
  let module, worker, report;
  const startupMessages = [];
  try {
    const { default: createMhaModule } = await VARIANTS[name].factory(urls);
    const wasmBinary = await readWasmFile(urls.wasm);
    let workerFailed;
    const workerFailure = new Promise((resolve, reject) => { workerFailed = reject; });
    worker = urls.worker && await workerScriptUrl(urls.worker, workerFailed);
    const platformArgs = factoryArgs(numThreads);
    report = platformArgs.printErr ?? ((text) => console.warn(text));
    const moduleArgs = {
      ...platformArgs,
      // Emscripten logs a failed instantiation before rejecting; the Error below says it once.
      printErr: (text) => (module ? report(text) : startupMessages.push(text)),
      locateFile: (path) => (path.endsWith('.wasm') ? urls.wasm.href : path.endsWith('.worker.js') ? worker.href : path),
      ...(wasmBinary ? { wasmBinary } : {}),
      ...(urls.script ? { mainScriptUrlOrBlob: urls.script.href } : {}),
    };
    module = await Promise.race([createMhaModule(moduleArgs), workerFailure]);
    for (const text of startupMessages) report(text);
  } catch (cause) {
    // Emscripten wraps a failed instantiation as "Aborted(<reason>). Build with -s ASSERTIONS=1 ...".
    const reason = String(cause?.message ?? cause).replace(/^Aborted\((.*)\)\. Build with -s ASSERTIONS=1 for more info\.$/s, '$1');
    throw new Error(`mha-wasm: could not load the ${name} build from ${urls.wasm.href}: ${reason}`, { cause });
  } finally {
    worker?.stopListening();
  }
  if (VARIANTS[name].threads) {
    module.setNumThreads(numThreads);
    await threadsStarted(module);
  }
  await chooseKernels(module, name, options.kernels);  // (before the warm-up's first GEMM)
  const memory = () => module.wasmMemory?.buffer ?? module.HEAP8.buffer;
  const MultiHeadAttention = defineMultiHeadAttention(module);
  warmUp(MultiHeadAttention);
  return {
    MultiHeadAttention,
    ...defineLinear(module),
    Linear: defineLinearLayer(module),
    ...defineAttentionFunction(module),
    heapAllocatedBytes: () => module.heapAllocatedBytes(),
    heapLimitBytes: () => module.heapLimitBytes(),
    [PLANNER]: forwardPlanner(module),
    [MLP_ACTIVATION]: defineMlpActivation(module),
    [ROW_NORM]: defineRowNorm(module),
    memoryBytes: () => memory().byteLength,
    kernelChoice: () => readKernelChoice(module),
    [FORCE_KERNELS]: (kernels) => forceKernels(module, kernelSpec(kernels)),
    build: Object.freeze({
      name,
      simd: VARIANTS[name].simd,
      relaxedSimd: VARIANTS[name].relaxedSimd,
      threads: VARIANTS[name].threads,
      numThreads: VARIANTS[name].threads ? module.numThreads() : 1,
    }),
  };
}

/**
 * A few small forward passes right after loading. Engines first run wasm from a quick baseline
 * compile and swap in optimized code for a function only on a later call, so a user's first
 * (or only, long) call would otherwise run mostly unoptimized: 1.5-3x slower.
 */
function warmUp(MultiHeadAttention) {
  const layer = new MultiHeadAttention({ embedDim: 64, numHeads: 2 });
  try {
    const shapes = layer.stateDictShapes();
    layer.loadStateDict(Object.fromEntries(Object.entries(shapes).map(([key, shape]) => [key, new Float32Array(shape.reduce((n, d) => n * d, 1))])));
    const query = { data: new Float32Array(128 * 64), shape: [128, 64] };
    for (let i = 0; i < 4; i++) layer.forward(query);
    for (let i = 0; i < 4; i++) layer.forward({ data: query.data.subarray(0, 64), shape: [1, 64] });  // the decode path
  } finally {
    layer.dispose();
  }
}
