// Loads the parity fixtures (tests/fixtures/index.json + fixtures.bin) as typed arrays.
import { readFileSync } from 'node:fs';

const DIR = new URL('../fixtures/', import.meta.url);

export function loadFixtures() {
  const index = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8'));
  const bin = readFileSync(new URL(index.binary, DIR));
  const buffer = bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.byteLength);
  const Kinds = { float32: Float32Array, uint8: Uint8Array, int32: Int32Array };
  const read = ({ dtype, shape, offset, length }) => ({ data: new Kinds[dtype](buffer, offset, length).slice(), shape });
  const tensors = (entries) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, read(v)]));
  const arrays = (entries) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, read(v).data]));
  const readCase = (c) => ({
    ...c,
    tensors: tensors(c.tensors),
    stateDict: arrays(c.stateDict),
    // Gradient cases: dLoss/d(query, key, value) as tensors, dLoss/d(parameters) flat, keyed as the state dict.
    ...(c.gradients ? { gradients: tensors(c.gradients), paramGradients: arrays(c.paramGradients) } : {}),
  });
  return {
    tolerance: index.tolerance,
    cases: index.cases.map(readCase),
    gradientTolerance: index.gradientTolerance,
    gradientCases: index.gradientCases.map(readCase),
  };
}

/** The config object the JS API takes, from a fixture case. */
export function layerConfig(c) {
  return { ...c.config };  // index.json writes the config exactly as the JS API takes it
}

/** The forward options of one fixture case (its masks and positions included), plus `extra`. */
export function caseOptions(c, extra = {}) {
  const t = c.tensors;
  return {
    ...c.options,
    ...(t.keyPaddingMask ? { keyPaddingMask: t.keyPaddingMask } : {}),
    ...(t.attnMask ? { attnMask: t.attnMask } : {}),
    ...(t.positions ? { positions: t.positions } : {}),
    ...extra,
  };
}

/** Runs one fixture case through a layer. */
export function runCase(layer, c, extraOptions = {}) {
  const t = c.tensors;
  return layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c, extraOptions));
}

/** Largest |got - want| / (abs + rel * |want|); <= 1 means within tolerance. */
export function worstError(got, want, { absolute, relative }) {
  let worst = 0, worstAbs = 0, at = -1;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    const ratio = Number.isNaN(d) ? Infinity : d / (absolute + relative * Math.abs(want[i]));
    if (ratio > worst) { worst = ratio; at = i; }
    if (d > worstAbs) worstAbs = d;
  }
  return { ratio: worst, absolute: worstAbs, index: at };
}

/**
 * worstError for a gradient (index.json's gradientTolerance): relative to each element, with an
 * absolute floor of floorUlps * 2^-23 * sqrt(K) * max|want|, K the case's reductionLength (its
 * longest float32 sum), for elements that cancel to near zero.
 */
export function worstGradientError(got, want, { relative, floorUlps }, reductionLength) {
  const largest = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  const absolute = floorUlps * 2 ** -23 * Math.sqrt(reductionLength) * largest;
  return { ...worstError(got, want, { absolute, relative }), bound: absolute };
}
