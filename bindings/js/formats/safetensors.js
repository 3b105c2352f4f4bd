// The .safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header { name: { dtype, shape, data_offsets: [begin, end] },
// __metadata__?: { string: string } }, then the raw little-endian tensor bytes.
// The reader is strict, like the reference implementation: tensors must tile the data exactly
// (no overlap, no gap, no trailing bytes). Typed arrays are read in the host's byte order;
// every JavaScript engine with WebAssembly runs little-endian in practice.
import { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfToFloat } from './float16.js';
import { describe, withArticle } from '../api/validate.js';

/**
 * The typed array each dtype is returned as, a line per element size (its BYTES_PER_ELEMENT):
 * F16 and BF16 as their raw binary16 / bfloat16 bits, the 8-bit floats as raw bytes.
 */
const DTYPES = {
  BOOL: Uint8Array, U8: Uint8Array, I8: Int8Array, F8_E4M3: Uint8Array, F8_E5M2: Uint8Array,
  I16: Int16Array, U16: Uint16Array, F16: Uint16Array, BF16: Uint16Array,
  I32: Int32Array, U32: Uint32Array, F32: Float32Array,
  I64: BigInt64Array, U64: BigUint64Array, F64: Float64Array,
};
const KNOWN_DTYPES = Object.keys(DTYPES).join(', ');
const FLOAT_DTYPES = ['F32', 'F16', 'BF16', 'F64'];
/** The reference implementation refuses headers over 100 MB; so do we (a guard against bogus lengths). */
const MAX_HEADER_BYTES = 100_000_000;
const METADATA_KEY = '__metadata__';

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)
  && !ArrayBuffer.isView(value);

function asBytes(what, bytes) {
  // A plain view: Node's Buffer#slice shares memory instead of copying.
  if (bytes instanceof Uint8Array) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  throw new TypeError(`${what}: bytes must be a Uint8Array or an ArrayBuffer, got ${describe(bytes)}`);
}

/**
 * The header's length N from a file's first 8 bytes, checked against the file's size (a guard
 * against bogus lengths before N bytes are read).
 */
export function safetensorsHeaderLength(first, fileSize) {
  if (fileSize < 8 || first.length < 8) {
    throw new RangeError(`readSafetensors: the file is ${fileSize} bytes; it must start with an 8-byte header length`);
  }
  const headerLength = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
  if (headerLength > BigInt(fileSize - 8) || headerLength > BigInt(MAX_HEADER_BYTES)) {
    throw new RangeError(`readSafetensors: header length ${headerLength} exceeds the ${fileSize - 8} bytes `
      + `after the length field${headerLength > BigInt(MAX_HEADER_BYTES) ? ` (or the ${MAX_HEADER_BYTES}-byte limit)` : ''}`);
  }
  return Number(headerLength);
}

/** The header's JSON bytes parsed (an object, not yet checked). */
function parseHeaderJson(bytes) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new TypeError('readSafetensors: the header is not valid UTF-8');
  }
  if (!text.startsWith('{')) throw new TypeError('readSafetensors: the header must be a JSON object starting with "{"');
  let header;
  try {
    header = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`readSafetensors: the header is not valid JSON: ${error.message}`);
  }
  return header;
}

function readHeader(file) {
  const length = safetensorsHeaderLength(file, file.length);
  const end = 8 + length;
  return { header: parseHeaderJson(file.subarray(8, end)), data: file.subarray(end) };
}

function readMetadata(what, metadata) {
  if (metadata === undefined) return {};
  if (!isObject(metadata)) {
    throw new TypeError(`${what}: ${METADATA_KEY} must be an object of strings, got ${describe(metadata)}`);
  }
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string') {
      throw new TypeError(`${what}: ${METADATA_KEY}['${key}'] must be a string, got ${describe(value)}`);
    }
  }
  return Object.fromEntries(Object.entries(metadata));
}

function elementCount(what, shape) {
  if (!Array.isArray(shape)) throw new TypeError(`${what}: shape must be an array of integers, got ${describe(shape)}`);
  let count = 1;
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`${what}: shape must hold non-negative integers, got ${JSON.stringify(shape)}`);
    }
    count *= d;
  }
  if (!Number.isSafeInteger(count)) throw new RangeError(`${what}: shape ${JSON.stringify(shape)} is too large`);
  return count;
}

/** One header entry, checked against the dtype table and the size of the data section. */
function readEntry(name, info, dataLength) {
  const what = `readSafetensors: tensor '${name}'`;
  if (!isObject(info)) {
    throw new TypeError(`${what}: header entry must be { dtype, shape, data_offsets }, got ${describe(info)}`);
  }
  const { dtype, shape, data_offsets: offsets } = info;
  if (typeof dtype !== 'string' || !Object.hasOwn(DTYPES, dtype)) {
    throw new TypeError(`${what}: unknown dtype ${JSON.stringify(dtype)}; known dtypes: ${KNOWN_DTYPES}`);
  }
  const count = elementCount(what, shape);
  if (!Array.isArray(offsets) || offsets.length !== 2) {
    throw new TypeError(`${what}: data_offsets must be [begin, end], got ${JSON.stringify(offsets) ?? 'undefined'}`);
  }
  const [begin, end] = offsets;
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end < begin || end > dataLength) {
    throw new RangeError(`${what}: data_offsets ${JSON.stringify(offsets)} must satisfy 0 <= begin <= end <= ${dataLength} `
      + '(the size of the data section)');
  }
  const bytes = count * DTYPES[dtype].BYTES_PER_ELEMENT;
  if (end - begin !== bytes) {
    throw new RangeError(`${what}: dtype ${dtype} and shape ${JSON.stringify(shape)} need ${bytes} bytes, `
      + `but data_offsets ${JSON.stringify(offsets)} span ${end - begin}`);
  }
  return { name, dtype, shape: [...shape], begin, end };
}

/** The tensors must cover the data section exactly once, as the reference implementation requires. */
function checkTiling(entries, dataLength) {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let covered = 0, previous = null;
  for (const entry of sorted) {
    if (entry.begin < covered) {
      throw new RangeError(`readSafetensors: tensor '${entry.name}' (bytes ${entry.begin}..${entry.end}) overlaps `
        + `tensor '${previous.name}' (bytes ${previous.begin}..${previous.end})`);
    }
    if (entry.begin > covered) {
      throw new RangeError(`readSafetensors: data bytes ${covered}..${entry.begin} belong to no tensor `
        + `(before tensor '${entry.name}')`);
    }
    covered = entry.end;
    previous = entry;
  }
  if (covered !== dataLength) {
    throw new RangeError(`readSafetensors: the tensors cover ${covered} bytes, but the data section has ${dataLength}`);
  }
}

/**
 * Parses a .safetensors file. Each tensor's data is a fresh copy in the typed array of its dtype
 * (F16/BF16: raw bit patterns in a Uint16Array).
 */
export function readSafetensors(bytes) {
  const { header, data } = readHeader(asBytes('readSafetensors', bytes));
  if (!isObject(header)) throw new TypeError('readSafetensors: the header must be a JSON object');
  const metadata = readMetadata('readSafetensors', header[METADATA_KEY]);
  const entries = Object.entries(header).filter(([name]) => name !== METADATA_KEY)
    .map(([name, info]) => readEntry(name, info, data.length));
  checkTiling(entries, data.length);
  // Object.fromEntries defines own properties, so a tensor named "__proto__" stays a tensor.
  const tensors = Object.fromEntries(entries.map(({ name, dtype, shape, begin, end }) => {
    const Array = DTYPES[dtype];
    return [name, { dtype, shape, data: new Array(data.slice(begin, end).buffer) }];
  }));
  return { tensors, metadata };
}

/**
 * The tensors a .safetensors file of `fileSize` bytes holds, from its header alone (`headerBytes`:
 * the N bytes after the length field): { entries: [{ name, dtype, shape, begin, end }] with
 * begin / end offsets in the file, metadata }, checked as readSafetensors checks them. For reading
 * the tensors one at a time (mha-wasm/models' streaming load) without holding the file.
 */
export function readSafetensorsHeader(headerBytes, fileSize) {
  const header = parseHeaderJson(asBytes('readSafetensorsHeader', headerBytes));
  if (!isObject(header)) throw new TypeError('readSafetensors: the header must be a JSON object');
  const metadata = readMetadata('readSafetensors', header[METADATA_KEY]);
  const dataStart = 8 + headerBytes.byteLength;
  const entries = Object.entries(header).filter(([name]) => name !== METADATA_KEY)
    .map(([name, info]) => readEntry(name, info, fileSize - dataStart));
  checkTiling(entries, fileSize - dataStart);
  return { entries: entries.map((e) => ({ ...e, begin: dataStart + e.begin, end: dataStart + e.end })), metadata };
}

/** A tensor's bytes (a fresh, aligned copy or a buffer of its own) as the typed array of its dtype. */
export function typedTensorData(dtype, bytes) {
  const Array = DTYPES[dtype];
  const own = bytes.byteOffset % Array.BYTES_PER_ELEMENT === 0 ? bytes : bytes.slice();
  return new Array(own.buffer, own.byteOffset, own.byteLength / Array.BYTES_PER_ELEMENT);
}

/** A float tensor's data as `Float` (Float32Array, or a float64 layer's Float64Array). */
function toFloats(name, { dtype, data }, Float) {
  switch (dtype) {
    case 'F32': return Float === Float32Array ? data : Float.from(data);
    case 'F64': return Float === Float64Array ? data : Float.from(data);
    case 'F16': return Float.from(data, halfToFloat);
    case 'BF16': return Float.from(data, bfloat16ToFloat);
    default:
      throw new TypeError(`stateDictFromSafetensors: tensor '${name}' has dtype ${dtype}; `
        + `weights must be one of ${FLOAT_DTYPES.join(', ')}`);
  }
}

/**
 * A state dict (name -> Float32Array) from a .safetensors file: F32 as stored, F16/BF16/F64 converted.
 * With `prefix`, keeps only tensors whose names start with it and strips it
 * (e.g. 'encoder.layers.0.self_attn.'). With `dtype: 'float64'`, a float64 layer's: Float64Arrays
 * (F64 as stored, the others widened).
 */
export function stateDictFromSafetensors(bytes, { prefix = '', dtype = 'float32' } = {}) {
  if (typeof prefix !== 'string') {
    throw new TypeError(`stateDictFromSafetensors: prefix must be a string, got ${describe(prefix)}`);
  }
  if (dtype !== 'float32' && dtype !== 'float64') {
    throw new TypeError(`stateDictFromSafetensors: dtype must be 'float32' or 'float64' (the layer's), got ${describe(dtype)}`);
  }
  const Float = dtype === 'float64' ? Float64Array : Float32Array;
  const { tensors } = readSafetensors(bytes);
  const picked = Object.entries(tensors).filter(([name]) => name.startsWith(prefix));
  if (prefix && picked.length === 0) {
    throw new TypeError(`stateDictFromSafetensors: no tensor name starts with '${prefix}'; names: `
      + Object.keys(tensors).slice(0, 10).join(', '));
  }
  return Object.fromEntries(picked.map(([name, tensor]) => [name.slice(prefix.length), toFloats(name, tensor, Float)]));
}

/** The dtype a typed array is written as when none is given (Uint16Array is ambiguous: F16, BF16 or U16). */
const DEFAULT_DTYPES = new Map([
  [Float32Array, 'F32'], [Float64Array, 'F64'], [Int8Array, 'I8'], [Uint8Array, 'U8'], [Int16Array, 'I16'],
  [Int32Array, 'I32'], [Uint32Array, 'U32'], [BigInt64Array, 'I64'], [BigUint64Array, 'U64'],
]);

/** The bytes one tensor is written as; Float32Array data given as F16/BF16 is rounded to it. */
function tensorBytes(name, tensor) {
  const what = `writeSafetensors: tensor '${name}'`;
  if (!isObject(tensor) || !ArrayBuffer.isView(tensor.data)) {
    throw new TypeError(`${what} must be { data: TypedArray, shape: number[], dtype? }, got ${describe(tensor)}`);
  }
  let { data } = tensor;
  const dtype = tensor.dtype ?? DEFAULT_DTYPES.get(data.constructor);
  if (typeof dtype !== 'string' || !Object.hasOwn(DTYPES, dtype)) {
    throw new TypeError(`${what}: ${tensor.dtype === undefined ? `give a dtype for ${describe(data)}`
      : `unknown dtype ${JSON.stringify(tensor.dtype)}`}; known dtypes: ${KNOWN_DTYPES}`);
  }
  if ((dtype === 'F16' || dtype === 'BF16') && data instanceof Float32Array) {
    data = Uint16Array.from(data, dtype === 'F16' ? floatToHalf : floatToBfloat16);
  }
  if (!(data instanceof DTYPES[dtype])) {
    throw new TypeError(`${what}: dtype ${dtype} needs ${withArticle(DTYPES[dtype].name)}, got ${describe(data)}`);
  }
  const count = elementCount(what, tensor.shape);
  if (count !== data.length) {
    throw new RangeError(`${what}: shape ${JSON.stringify(tensor.shape)} needs ${count} elements, but data has ${data.length}`);
  }
  return { dtype, shape: [...tensor.shape], bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/**
 * Serializes tensors ({ data, shape, dtype? } by name, in a plain object or a Map) to .safetensors bytes.
 * `metadata` (string values) goes into the header's __metadata__.
 */
export function writeSafetensors(tensors, { metadata } = {}) {
  const entries = tensors instanceof Map ? [...tensors.entries()] : isObject(tensors) ? Object.entries(tensors) : null;
  if (!entries) throw new TypeError(`writeSafetensors: tensors must be an object or a Map, got ${describe(tensors)}`);
  const header = {};
  if (metadata !== undefined) {
    Object.defineProperty(header, METADATA_KEY, { value: readMetadata('writeSafetensors', metadata), enumerable: true });
  }
  const parts = [];
  let offset = 0;
  for (const [name, tensor] of entries) {
    if (typeof name !== 'string' || name === METADATA_KEY) {
      throw new TypeError(`writeSafetensors: ${JSON.stringify(name)} cannot be a tensor name`);
    }
    const { dtype, shape, bytes } = tensorBytes(name, tensor);
    Object.defineProperty(header, name, {
      value: { dtype, shape, data_offsets: [offset, offset + bytes.length] }, enumerable: true,
    });
    parts.push(bytes);
    offset += bytes.length;
  }
  // Pad the header with spaces to a multiple of 8 so the data section starts aligned, as the reference does.
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.fill(0x20, 8, 8 + padded);
  out.set(json, 8);
  let at = 8 + padded;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
