// Which variant of each hot kernel the wasm module runs (src/mha/kernels/kernel_choice.hpp: every
// variant gives the reference's results; they differ in speed, by CPU). At load, in this order:
// forced by init's `kernels` option or, in Node, MHA_KERNELS=gemm=NAME,flash=NAME,gemv_f16=NAME; else the calibration an
// earlier process saved on this machine (the platform's kernelChoiceStore: localStorage in a
// page, a file under the OS's cache folder in Node); else measured now, once per module, and saved.
import { kernelChoiceStore } from '#platform';

/**
 * The kernels that have variants, as the core's table names them (kernel_choice.cpp, in its order):
 * the GEMM, the decode GEMV of f16 and of q4 weights, the flash attention's tiles and its exp.
 */
export const KERNELS = ['gemm', 'gemv_f16', 'gemv_q4', 'flash', 'exp'];
// 3: a record holds every kernel of KERNELS (1 held the GEMM's only, 2 the GEMM's and the GEMVs').
// 4: the GEMM's calibration problem writes rows a layer's width apart (gemm_calibration.cpp); the
// choices of version 3 were timed on narrow rows, so they are measured again.
const RECORD_VERSION = 4;

/** init's `kernels` option ({ gemm: '4x8' }) as the core's spec ("gemm=4x8"), checked for shape. */
export function kernelSpec(kernels) {
  if (kernels === undefined) return undefined;
  if (kernels === null || typeof kernels !== 'object' || Array.isArray(kernels)) {
    throw new TypeError(`init: kernels must be an object such as { gemm: '4x8' }, got ${kernels === null ? 'null' : Array.isArray(kernels) ? 'an array' : typeof kernels}`);
  }
  for (const [kernel, variant] of Object.entries(kernels)) {
    if (!KERNELS.includes(kernel)) throw new TypeError(`init: kernels: unknown kernel '${kernel}'; known kernels: ${KERNELS.join(', ')}`);
    if (typeof variant !== 'string') throw new TypeError(`init: kernels.${kernel} must be a variant name (a string), got ${typeof variant}`);
  }
  return Object.entries(kernels).map(([kernel, variant]) => `${kernel}=${variant}`).join(',');
}

/** Forces `spec` on the loaded module; a TypeError naming an unknown kernel or variant. */
export function forceKernels(module, spec, what = 'init: kernels') {
  const error = module.forceKernels(spec, false);
  if (error) throw new TypeError(`${what}: ${error}`);
}

/** mha.kernelChoice(): what each kernel runs, how it was chosen, and the calibration's rates. */
export function readKernelChoice(module) {
  const raw = JSON.parse(module.kernelChoice());
  const choice = {};
  for (const kernel of KERNELS) {
    const { variant, source, variants, gflops, calibrationMs } = raw[kernel];
    choice[kernel] = Object.freeze({
      variant,
      source,
      variants: Object.freeze(variants),
      gflops: gflops.length ? Object.freeze(Object.fromEntries(variants.map((name, i) => [name, gflops[i]]))) : null,
      calibrationMs: gflops.length ? calibrationMs : null,
    });
  }
  return Object.freeze(choice);
}

/**
 * Chooses every kernel's variant of a freshly loaded module `buildName`, before its first call:
 * forced, else saved, else calibrated now (and saved for the next process).
 */
export async function chooseKernels(module, buildName, kernels) {
  const spec = kernelSpec(kernels);
  if (spec !== undefined) return forceKernels(module, spec);
  const fromEnvironment = kernelChoiceStore.forced();
  if (fromEnvironment) return forceKernels(module, fromEnvironment, 'MHA_KERNELS');
  const key = `${buildName} | ${kernelChoiceStore.machine()}`;
  const record = await kernelChoiceStore.read();
  const saved = record?.version === RECORD_VERSION ? record.choices?.[key] : undefined;
  if (saved && KERNELS.every((kernel) => typeof saved[kernel] === 'string')) {
    // A choice saved by a build with other variants fails here and is measured again.
    if (!module.forceKernels(KERNELS.map((kernel) => `${kernel}=${saved[kernel]}`).join(','), true)) return undefined;
  }
  const choice = readKernelChoice(module);  // (calibrates)
  // A calibration cut off while the engine was still optimizing the variants is used, not kept.
  if (!KERNELS.every((kernel) => JSON.parse(module.kernelChoice())[kernel].settled)) return undefined;
  const fresh = record?.version === RECORD_VERSION && record.choices && typeof record.choices === 'object' ? record : { version: RECORD_VERSION, choices: {} };
  fresh.choices[key] = {
    ...Object.fromEntries(KERNELS.map((kernel) => [kernel, choice[kernel].variant])),
    gflops: Object.fromEntries(KERNELS.map((kernel) => [kernel, choice[kernel].gflops])),
    savedAt: new Date().toISOString(),
  };
  await kernelChoiceStore.write(fresh);
  return undefined;
}
