// The fixtures of PyTorch's own MHA tests (tools/make_pytorch_mha_fixtures.py ->
// tests/fixtures/pytorch-mha/), read for tests/js/pytorch-mha.test.js (Node) and
// tests/browser/pytorch-mha-float16.test.js (its float16 cases, run in Chromium).
import { readFileSync } from 'node:fs';

import { floatToHalf, halfToFloat } from '../../bindings/js/formats/float16.js';
import { seededFloats } from './seeded.js';

const DIR = new URL('../fixtures/pytorch-mha/', import.meta.url);
export const index = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8'));
const blob = readFileSync(new URL(index.binary, DIR));
const KINDS = { float32: Float32Array, float64: Float64Array, uint8: Uint8Array };
export const count = (shape) => shape.reduce((n, d) => n * d, 1);

/**
 * A fixture tensor { data, shape }: read from cases.bin, or regenerated (seededFloats) where the
 * generator says: a float64 case's those float32 values widened to Float64Array, a float16 case's
 * rounded to half (a Float32Array of half values: Float16Array.from keeps them exactly).
 */
export function tensor(entry) {
  if ('seeded' in entry) {
    const data = seededFloats(count(entry.shape), entry.seeded, entry.scale);
    if (entry.dtype === 'float64') return { data: Float64Array.from(data), shape: entry.shape };
    if (entry.dtype === 'float16') return { data: data.map((x) => halfToFloat(floatToHalf(x))), shape: entry.shape };
    return { data, shape: entry.shape };
  }
  const Kind = KINDS[entry.dtype];
  const bytes = blob.subarray(entry.offset, entry.offset + entry.length * Kind.BYTES_PER_ELEMENT);
  return { data: new Kind(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), shape: entry.shape };
}
export const tensors = (entries = {}) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, tensor(v)]));
export const arrays = (entries = {}) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, tensor(v).data]));

/** The cases of one source file of PyTorch's (the index's `source`). */
export const casesOf = (source) => index.cases.filter((c) => c.source === source);
