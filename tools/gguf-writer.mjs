// A GGUF file (llama.cpp's format; docs/gguf.md in ggml) of a Hugging Face checkpoint's tensors, so
// that llama.cpp's wasm build (wllama) runs the same weights as mha-wasm in bench/whole-model-peers.mjs.
// Version 3, little-endian: the header, the metadata key/values, the tensor infos, then the data
// aligned to general.alignment (32). Tensors as F32, F16, Q8_0 or Q4_0 (ggml-common.h's blocks:
// Q8_0 = an f16 scale and 32 int8, d = amax / 127; Q4_0 = an f16 scale and 16 bytes of nibbles,
// element j low and j + 16 high, d = the largest-magnitude value / -8, q = min(15, trunc(x / d + 8.5))).
// Norms and biases stay F32, as convert_hf_to_gguf.py writes them. GGUF's dims are PyTorch's
// reversed: a Linear [out, in] is ne = [in, out], the same bytes.
//   writeGguf({ metadata: [[key, type, value], ...], tensors: [{ name, shape, data: Float32Array, type }] }) -> Uint8Array
import { floatToHalf } from '../bindings/js/formats/float16.js';

export const GGUF_TYPES = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12 };
export const TENSOR_TYPES = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 };
const BLOCK = 32;
const ALIGNMENT = 32;

/** A growable little-endian byte writer. */
class Bytes {
  #buffer = new Uint8Array(1 << 16);
  #view = new DataView(this.#buffer.buffer);
  length = 0;

  #room(n) {
    if (this.length + n <= this.#buffer.length) return;
    let size = this.#buffer.length;
    while (size < this.length + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#buffer.subarray(0, this.length));
    this.#buffer = grown;
    this.#view = new DataView(grown.buffer);
  }

  u8(x) { this.#room(1); this.#view.setUint8(this.length, x); this.length += 1; }
  i8(x) { this.#room(1); this.#view.setInt8(this.length, x); this.length += 1; }
  u16(x) { this.#room(2); this.#view.setUint16(this.length, x, true); this.length += 2; }
  i16(x) { this.#room(2); this.#view.setInt16(this.length, x, true); this.length += 2; }
  u32(x) { this.#room(4); this.#view.setUint32(this.length, x, true); this.length += 4; }
  i32(x) { this.#room(4); this.#view.setInt32(this.length, x, true); this.length += 4; }
  f32(x) { this.#room(4); this.#view.setFloat32(this.length, x, true); this.length += 4; }
  f64(x) { this.#room(8); this.#view.setFloat64(this.length, x, true); this.length += 8; }
  u64(x) { this.#room(8); this.#view.setBigUint64(this.length, BigInt(x), true); this.length += 8; }
  i64(x) { this.#room(8); this.#view.setBigInt64(this.length, BigInt(x), true); this.length += 8; }
  bool(x) { this.u8(x ? 1 : 0); }
  string(s) { const b = new TextEncoder().encode(s); this.u64(b.length); this.raw(b); }
  raw(bytes) { this.#room(bytes.length); this.#buffer.set(bytes, this.length); this.length += bytes.length; }
  pad(alignment) { while (this.length % alignment) this.u8(0); }
  bytes() { return this.#buffer.slice(0, this.length); }
}

/** One metadata value of `type` ('u32', 'string', ['array', 'string'], ...). */
function writeValue(out, type, value) {
  if (Array.isArray(type)) {  // ['array', itemType]
    out.u32(GGUF_TYPES.array);
    out.u32(GGUF_TYPES[type[1]]);
    out.u64(value.length);
    for (const item of value) out[type[1]](item);
    return;
  }
  if (!(type in GGUF_TYPES) || type === 'array') throw new TypeError(`gguf: unknown metadata type '${type}'`);
  out.u32(GGUF_TYPES[type]);
  out[type](value);
}

/** Q8_0 blocks of one row (its length a multiple of 32): 34 bytes a block. */
export function quantizeQ8_0(row) {
  const out = new Uint8Array(row.length / BLOCK * 34);
  const view = new DataView(out.buffer);
  for (let b = 0; b < row.length / BLOCK; b++) {
    let amax = 0;
    for (let i = 0; i < BLOCK; i++) amax = Math.max(amax, Math.abs(row[b * BLOCK + i]));
    const d = Math.fround(amax / 127), inverse = d ? Math.fround(1 / d) : 0;
    view.setUint16(b * 34, floatToHalf(d), true);
    // (C's roundf: halves away from zero)
    for (let i = 0; i < BLOCK; i++) {
      const x = Math.fround(row[b * BLOCK + i] * inverse);
      view.setInt8(b * 34 + 2 + i, Math.sign(x) * Math.round(Math.abs(x)));
    }
  }
  return out;
}

/** Q4_0 blocks of one row: 18 bytes a block (ggml-quants.c quantize_row_q4_0_ref). */
export function quantizeQ4_0(row) {
  const out = new Uint8Array(row.length / BLOCK * 18);
  const view = new DataView(out.buffer);
  for (let b = 0; b < row.length / BLOCK; b++) {
    let amax = 0, max = 0;
    for (let i = 0; i < BLOCK; i++) {
      const v = row[b * BLOCK + i];
      if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; }
    }
    const d = Math.fround(max / -8), inverse = d ? Math.fround(1 / d) : 0;
    view.setUint16(b * 18, floatToHalf(d), true);
    for (let j = 0; j < BLOCK / 2; j++) {
      const q0 = Math.min(15, Math.trunc(Math.fround(Math.fround(row[b * BLOCK + j] * inverse) + 8.5)));
      const q1 = Math.min(15, Math.trunc(Math.fround(Math.fround(row[b * BLOCK + j + BLOCK / 2] * inverse) + 8.5)));
      out[b * 18 + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

/** A tensor's data bytes in `type` (rows of its last dim for the block types). */
export function tensorBytes({ shape, data }, type) {
  if (type === 'F32') return new Uint8Array(Float32Array.from(data).buffer);
  if (type === 'F16') return new Uint8Array(Uint16Array.from(data, floatToHalf).buffer);
  const cols = shape.at(-1);
  if (cols % BLOCK) throw new RangeError(`gguf: ${type} needs rows of a multiple of ${BLOCK} values, got ${cols}`);
  const quantize = type === 'Q8_0' ? quantizeQ8_0 : type === 'Q4_0' ? quantizeQ4_0 : null;
  if (!quantize) throw new TypeError(`gguf: unknown tensor type '${type}' (F32, F16, Q8_0, Q4_0)`);
  const rows = data.length / cols, parts = [];
  for (let r = 0; r < rows; r++) parts.push(quantize(data.subarray(r * cols, (r + 1) * cols)));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** The file's bytes. `metadata`: [key, type, value] (general.alignment is added); `tensors`: { name, shape (PyTorch's), data, type }. */
export function writeGguf({ metadata, tensors }) {
  const out = new Bytes();
  const quantized = tensors.some((t) => t.type === 'Q8_0' || t.type === 'Q4_0');
  const kvs = [...metadata, ['general.alignment', 'u32', ALIGNMENT], ...(quantized ? [['general.quantization_version', 'u32', 2]] : [])];
  out.raw(new TextEncoder().encode('GGUF'));
  out.u32(3);
  out.u64(tensors.length);
  out.u64(kvs.length);
  for (const [key, type, value] of kvs) {
    out.string(key);
    writeValue(out, type, value);
  }
  const datas = tensors.map((t) => tensorBytes(t, t.type));
  let offset = 0;
  tensors.forEach((t, i) => {
    if (new TextEncoder().encode(t.name).length > 64) throw new RangeError(`gguf: tensor name '${t.name}' is longer than 64 bytes`);
    out.string(t.name);
    out.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) out.u64(d);
    out.u32(TENSOR_TYPES[t.type]);
    out.u64(offset);
    offset += Math.ceil(datas[i].length / ALIGNMENT) * ALIGNMENT;
  });
  out.pad(ALIGNMENT);
  for (const data of datas) {
    out.raw(data);
    out.pad(ALIGNMENT);
  }
  return out.bytes();
}
