// A mutation fuzzer for the .safetensors reader (bindings/js/formats/safetensors.js).
//
// Starts from valid files (written here with writeSafetensors, plus tests/fuzz/corpus/safetensors/)
// and feeds readSafetensors / stateDictFromSafetensors with mutants: flipped bytes, truncations,
// appended bytes, absurd header lengths, header entries with wrong dtypes, shapes and offsets
// (out of range, overlapping, swapped), non-object headers, spliced files and random bytes.
// The reader must only ever throw its own TypeError/RangeError, and whatever it accepts must be
// consistent with the file (checked against an independent parse below). A hang is caught by the
// stage's `timeout`. On a failure the input is saved to build/fuzz/ and the process exits 1.
//
//   node tests/fuzz/safetensors_fuzz.mjs [--seconds 30] [--seed N]
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { readSafetensors, stateDictFromSafetensors, writeSafetensors } from '../../bindings/js/formats/safetensors.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '30' }, seed: { type: 'string' } } });
const seed = Number(args.seed ?? Date.now() % 2 ** 31);
const CORPUS = new URL('./corpus/safetensors/', import.meta.url);
const OUT = new URL('../../build/fuzz/', import.meta.url);

// ---- a seeded random source (mulberry32) ----
let state = seed >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
}
const int = (n) => Math.floor(random() * n);
const pick = (list) => list[int(list.length)];

// ---- seeds ----
const BYTES = { BOOL: 1, U8: 1, I8: 1, F8_E4M3: 1, F8_E5M2: 1, I16: 2, U16: 2, F16: 2, BF16: 2, I32: 4, U32: 4, F32: 4, I64: 8, U64: 8, F64: 8 };
const ARRAYS = { BOOL: Uint8Array, U8: Uint8Array, I8: Int8Array, F8_E4M3: Uint8Array, F8_E5M2: Uint8Array, I16: Int16Array,
  U16: Uint16Array, F16: Uint16Array, BF16: Uint16Array, I32: Int32Array, U32: Uint32Array, F32: Float32Array,
  I64: BigInt64Array, U64: BigUint64Array, F64: Float64Array };

function generatedSeeds() {
  const f32 = (n) => Float32Array.from({ length: n }, (_, i) => Math.sin(i));
  return [
    writeSafetensors({ in_proj_weight: { data: f32(24), shape: [6, 4] }, in_proj_bias: { data: f32(6), shape: [6] } }),
    writeSafetensors({ w: { data: f32(8), shape: [2, 4], dtype: 'F16' }, b: { data: f32(2), shape: [2], dtype: 'BF16' } },
      { metadata: { format: 'pt' } }),
    writeSafetensors({ scalar: { data: new Float64Array([1.5]), shape: [] }, empty: { data: new Float32Array(0), shape: [0, 3] } }),
    writeSafetensors({ ids: { data: new BigInt64Array([1n, -2n]), shape: [2] }, mask: { data: new Uint8Array([1, 0, 1]), shape: [3], dtype: 'BOOL' },
      i: { data: new Int32Array([7]), shape: [1, 1] } }),
    writeSafetensors({}),
  ];
}

function corpusSeeds() {
  try {
    return readdirSync(CORPUS).sort().map((name) => new Uint8Array(readFileSync(new URL(name, CORPUS))));
  } catch {
    return [];
  }
}

// ---- an independent parse, to check what the reader accepts ----
function splitFile(file) {
  const n = Number(new DataView(file.buffer, file.byteOffset, file.byteLength).getBigUint64(0, true));
  return { header: JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + n))), data: file.subarray(8 + n) };
}

function checkAccepted(file, result) {
  const { header, data } = splitFile(file); // must not throw: the reader accepted this file
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  if (names.join('\n') !== Object.keys(result.tensors).join('\n')) throw new Error('tensor names differ from the header');
  if (JSON.stringify(result.metadata) !== JSON.stringify(header.__metadata__ ?? {})) throw new Error('metadata differs from the header');
  const spans = [];
  for (const name of names) {
    const { dtype, shape, data_offsets: [begin, end] } = header[name];
    const tensor = result.tensors[name];
    const count = shape.reduce((a, b) => a * b, 1);
    if (tensor.dtype !== dtype || JSON.stringify(tensor.shape) !== JSON.stringify(shape)) throw new Error(`${name}: dtype/shape differ`);
    if (!(tensor.data instanceof ARRAYS[dtype]) || tensor.data.length !== count) throw new Error(`${name}: data is not ${count} × ${dtype}`);
    if (end - begin !== count * BYTES[dtype]) throw new Error(`${name}: offsets do not match dtype × shape`);
    const bytes = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
    if (tensor.data.buffer === file.buffer) throw new Error(`${name}: data shares memory with the input`);
    if (!bytes.every((b, i) => b === data[begin + i])) throw new Error(`${name}: data differs from the file's bytes`);
    spans.push([begin, end]);
  }
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let covered = 0;
  for (const [begin, end] of spans) {
    if (begin !== covered) throw new Error(`accepted a gap or an overlap at byte ${begin}`);
    covered = end;
  }
  if (covered !== data.length) throw new Error('accepted a data section the tensors do not cover');
}

function checkStateDict(file, stateDict) {
  const { header } = splitFile(file);
  for (const [name, array] of Object.entries(stateDict)) {
    const count = header[name].shape.reduce((a, b) => a * b, 1);
    if (!(array instanceof Float32Array) || array.length !== count) throw new Error(`state dict '${name}' is not ${count} floats`);
  }
}

/** Calls `f`; its own TypeError/RangeError is fine, anything else is a finding. Returns the result or null. */
function expectCleanFailure(what, f) {
  try {
    return { value: f() };
  } catch (error) {
    const own = (error instanceof TypeError || error instanceof RangeError) && error.constructor !== Error
      && /^(readSafetensors|stateDictFromSafetensors): /.test(error.message);
    if (!own) throw new Error(`${what} threw ${error?.constructor?.name}: ${error?.message}`);
    return null;
  }
}

// ---- mutations ----
const SHAPES = [[], [0], [-1], [1.5], [2 ** 53], [2 ** 31, 2 ** 31], '3', [[2]], null, [1e300], [3, 4, 5]];
const OFFSETS = (n) => [[0, n + 1], [n, 0], [-4, 0], [0.5, 4], [0, 2 ** 60], [0], [0, 4, 8], '0,4', null, [0, 0], [4, 4 + int(32)]];
const DTYPES = [...Object.keys(BYTES), 'F128', 'f32', '', 5, null];

function withHeader(header, data, padding = 0) {
  const json = new TextEncoder().encode((typeof header === 'string' ? header : JSON.stringify(header)) + ' '.repeat(padding));
  const file = new Uint8Array(8 + json.length + data.length);
  new DataView(file.buffer).setBigUint64(0, BigInt(json.length), true);
  file.set(json, 8);
  file.set(data, 8 + json.length);
  return file;
}

function mutateHeader(file) {
  const { header, data } = splitFile(file);
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const name = names.length ? pick(names) : 'x';
  const entry = header[name] ?? (header[name] = { dtype: 'F32', shape: [1], data_offsets: [0, 4] });
  switch (int(10)) {
    case 0: entry.dtype = pick(DTYPES); break;
    case 1: entry.shape = pick(SHAPES); break;
    case 2: entry.data_offsets = pick(OFFSETS(data.length)); break;
    case 3: { // overlap another tensor
      const other = header[pick(names.length ? names : [name])];
      if (other?.data_offsets) entry.data_offsets = [other.data_offsets[0], other.data_offsets[0] + (entry.data_offsets?.[1] - entry.data_offsets?.[0] || 4)];
      break;
    }
    case 4: delete entry[pick(['dtype', 'shape', 'data_offsets'])]; break;
    case 5: header.__metadata__ = pick([{ a: 1 }, 'meta', [], { format: 'pt' }, null]); break;
    case 6: header[pick(['__proto__', 'constructor', 'toString', ''])] = { ...entry }; break;
    case 7: return withHeader(pick(['[]', '1', '"x"', 'null', '{', '{"a":', JSON.stringify(header).slice(0, -1)]), data);
    case 8: header[name] = pick([1, 'x', [], null]); break;
    default: entry.data_offsets = [entry.data_offsets?.[0] ?? 0, (entry.data_offsets?.[1] ?? 0) + pick([-1, 1, 8, -8])]; break;
  }
  return withHeader(header, data.subarray(0, int(4) === 0 ? int(data.length + 1) : data.length), int(3) === 0 ? int(16) : 0);
}

function mutate(seeds) {
  const file = pick(seeds).slice();
  const view = new DataView(file.buffer);
  switch (int(8)) {
    case 0: for (let n = 1 + int(8); n > 0 && file.length; n--) file[int(file.length)] ^= 1 << int(8); return file;
    case 1: return file.subarray(0, int(file.length + 1));
    case 2: { const out = new Uint8Array(file.length + 1 + int(32)); out.set(file); for (let i = file.length; i < out.length; i++) out[i] = int(256); return out; }
    case 3: if (file.length >= 8) view.setBigUint64(0, pick([2n ** 63n, 2n ** 64n - 1n, 100000001n, 0n, BigInt(file.length), BigInt(int(2 ** 31))]), true); return file;
    case 4: if (file.length >= 8) view.setBigUint64(0, view.getBigUint64(0, true) + BigInt(pick([-1, 1, -8, 8])) & (2n ** 64n - 1n), true); return file;
    case 5: { // header of one seed, data of another
      const other = pick(seeds);
      try { return withHeader(splitFile(file).header, splitFile(other).data); } catch { return other; }
    }
    case 6: return Uint8Array.from({ length: int(80) }, () => int(256));
    default:
      try { return mutateHeader(file); } catch { return file; }
  }
}

// ---- the loop ----
const seeds = [...generatedSeeds(), ...corpusSeeds()];
const deadline = Date.now() + Number(args.seconds) * 1000;
let executions = 0, accepted = 0, rejected = 0;
while (Date.now() < deadline) {
  for (let batch = 0; batch < 200; batch++) {
    let input = mutate(seeds);
    if (int(4) === 0) input = mutate([input]); // stack two mutations
    try {
      const read = expectCleanFailure('readSafetensors', () => readSafetensors(input));
      if (read) checkAccepted(input, read.value);
      const sd = expectCleanFailure('stateDictFromSafetensors', () => stateDictFromSafetensors(input));
      if (sd) checkStateDict(input, sd.value);
      if (read) accepted++; else rejected++;
    } catch (finding) {
      mkdirSync(OUT, { recursive: true });
      const path = fileURLToPath(new URL(`safetensors-finding-${seed}-${executions}.bin`, OUT));
      writeFileSync(path, input);
      console.error(`safetensors_fuzz: ${finding.message}\n  input saved to ${path} (seed ${seed})`);
      process.exit(1);
    }
    executions++;
  }
}
console.log(`safetensors_fuzz: ${executions} executions (${accepted} accepted and checked, ${rejected} rejected with `
  + `TypeError/RangeError), ${seeds.length} seeds, random seed ${seed}`);
