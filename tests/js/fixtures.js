// Loads the parity fixtures (tests/fixtures/index.json + fixtures.bin) as typed arrays.
import { readFileSync } from 'node:fs';

const DIR = new URL('../fixtures/', import.meta.url);

export function loadFixtures() {
  const index = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8'));
  const bin = readFileSync(new URL(index.binary, DIR));
  const buffer = bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.byteLength);
  const Kinds = { float32: Float32Array, uint8: Uint8Array, int32: Int32Array };
  const read = ({ dtype, shape, offset, length }) => ({ data: new Kinds[dtype](buffer, offset, length).slice(), shape });
  const cases = index.cases.map((c) => ({
    ...c,
    tensors: Object.fromEntries(Object.entries(c.tensors).map(([k, v]) => [k, read(v)])),
    stateDict: Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, read(v).data])),
  }));
  return { tolerance: index.tolerance, cases };
}

/** The config object the JS API takes, from a fixture case. */
export function layerConfig(c) {
  return { ...c.config };  // index.json writes the config exactly as the JS API takes it
}

/** Runs one fixture case through a layer. */
export function runCase(layer, c) {
  const t = c.tensors;
  return layer.forward(t.query, t.key ?? null, t.value ?? null, {
    ...c.options,
    ...(t.keyPaddingMask ? { keyPaddingMask: t.keyPaddingMask } : {}),
    ...(t.attnMask ? { attnMask: t.attnMask } : {}),
    ...(t.positions ? { positions: t.positions } : {}),
  });
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
