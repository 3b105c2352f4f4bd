// .safetensors: reading (strictly validated), writing, conversion to a state dict, and a forward
// pass with weights that went through a file.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init, readSafetensors, stateDictFromSafetensors, writeSafetensors } from '../../bindings/js/index.js';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';

/**
 * A file built by hand, independently of writeSafetensors: header object (or raw JSON text),
 * data bytes, and an optional lie about the header length.
 */
function rawFile(header, data = new Uint8Array(0), { headerLength } = {}) {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const file = new Uint8Array(8 + json.length + data.length);
  new DataView(file.buffer).setBigUint64(0, BigInt(headerLength ?? json.length), true);
  file.set(json, 8);
  file.set(data, 8 + json.length);
  return file;
}
const bytesOf = (array) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
const f32 = (...values) => bytesOf(new Float32Array(values));

describe('readSafetensors', () => {
  test('reads a hand-built file: dtypes, shapes, values, metadata', () => {
    const data = new Uint8Array([...f32(1, -2, 3.5, 0.25, 5, 6), ...bytesOf(new Uint16Array([0x3c00, 0xc000])), 1, 0]);
    const file = rawFile({
      __metadata__: { format: 'pt' },
      w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
      h: { dtype: 'F16', shape: [2], data_offsets: [24, 28] },
      m: { dtype: 'BOOL', shape: [2], data_offsets: [28, 30] },
    }, data);
    const { tensors, metadata } = readSafetensors(file);
    assert.deepEqual(metadata, { format: 'pt' });
    assert.deepEqual(Object.keys(tensors), ['w', 'h', 'm']);
    assert.deepEqual(tensors.w, { dtype: 'F32', shape: [2, 3], data: new Float32Array([1, -2, 3.5, 0.25, 5, 6]) });
    assert.deepEqual(tensors.h, { dtype: 'F16', shape: [2], data: new Uint16Array([0x3c00, 0xc000]) });
    assert.deepEqual(tensors.m, { dtype: 'BOOL', shape: [2], data: new Uint8Array([1, 0]) });
  });

  test('accepts an ArrayBuffer, a Node Buffer and a Uint8Array at an odd offset; returns copies', () => {
    const file = rawFile({ x: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32(7));
    const shifted = new Uint8Array(file.length + 1);
    shifted.set(file, 1);
    for (const bytes of [file.buffer, Buffer.from(file), shifted.subarray(1)]) {
      assert.deepEqual(readSafetensors(bytes).tensors.x.data, new Float32Array([7]));
    }
    const { tensors } = readSafetensors(file);
    tensors.x.data[0] = 0;
    assert.deepEqual(readSafetensors(file).tensors.x.data, new Float32Array([7]));
  });

  test('reads every dtype with the typed array it documents, and empty tensors', () => {
    const tensors = {
      f64: { data: new Float64Array([1.5, -2]), shape: [2] },
      i64: { data: new BigInt64Array([-3n]), shape: [1] },
      u64: { data: new BigUint64Array([3n]), shape: [1, 1] },
      i32: { data: new Int32Array([-7, 8]), shape: [2] },
      u32: { data: new Uint32Array([9]), shape: [1] },
      i16: { data: new Int16Array([-1]), shape: [1] },
      u16: { data: new Uint16Array([65535]), shape: [1], dtype: 'U16' },
      bf16: { data: new Uint16Array([0x3f80]), shape: [1], dtype: 'BF16' },
      i8: { data: new Int8Array([-128]), shape: [1] },
      u8: { data: new Uint8Array([255]), shape: [1] },
      f8: { data: new Uint8Array([0x38]), shape: [1], dtype: 'F8_E4M3' },
      scalar: { data: new Float32Array([4]), shape: [] },
      empty: { data: new Float32Array(0), shape: [0, 5] },
    };
    const read = readSafetensors(writeSafetensors(tensors)).tensors;
    for (const [name, t] of Object.entries(tensors)) {
      assert.deepEqual(read[name].data, t.data, name);
      assert.deepEqual(read[name].shape, t.shape, name);
    }
    assert.equal(read.f8.dtype, 'F8_E4M3');
    assert.equal(read.i64.dtype, 'I64');
  });

  test('a tensor named __proto__ is an ordinary entry', () => {
    const file = rawFile('{"__proto__":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32(2));
    const { tensors } = readSafetensors(file);
    assert.ok(Object.hasOwn(tensors, '__proto__'));
    assert.deepEqual(tensors.__proto__.data, new Float32Array([2]));
    assert.equal(Object.getPrototypeOf(tensors), Object.prototype);
  });

  const entry = (extra) => ({ dtype: 'F32', shape: [2], data_offsets: [0, 8], ...extra });
  // [description, bytes, error class, message pattern]
  const BAD = [
    ['not bytes', 'abc', TypeError, /readSafetensors: bytes must be a Uint8Array or an ArrayBuffer, got string abc/],
    ['a Float32Array', new Float32Array(4), TypeError, /must be a Uint8Array or an ArrayBuffer, got a Float32Array/],
    ['shorter than the length field', new Uint8Array(5), RangeError, /the file is 5 bytes; it must start with an 8-byte header length/],
    ['header length past the end', rawFile({}, new Uint8Array(0), { headerLength: 3 }).subarray(0, 9), RangeError,
      /header length 3 exceeds the 1 bytes after the length field/],
    ['header length 2^63', rawFile({}, new Uint8Array(0), { headerLength: 2 ** 63 }), RangeError, /header length 9223372036854775808 exceeds/],
    ['header not JSON', rawFile('{"a": '), TypeError, /the header is not valid JSON/],
    ['header a JSON array', rawFile('[1, 2]'), TypeError, /must be a JSON object starting with "\{"/],
    ['header with leading space', rawFile(' {}'), TypeError, /must be a JSON object starting with "\{"/],
    ['header not UTF-8', rawFile('{"\udc00": 1}').map((b, i) => (i === 10 ? 0xff : b)), TypeError, /the header is not valid UTF-8/],
    ['entry not an object', rawFile({ w: [1, 2] }), TypeError, /tensor 'w': header entry must be \{ dtype, shape, data_offsets \}, got an Array/],
    ['unknown dtype', rawFile({ w: entry({ dtype: 'F128' }) }, f32(1, 2)), TypeError, /tensor 'w': unknown dtype "F128"; known dtypes: BOOL, U8/],
    ['dtype missing', rawFile({ w: entry({ dtype: undefined }) }, f32(1, 2)), TypeError, /tensor 'w': unknown dtype undefined/],
    ['shape not an array', rawFile({ w: entry({ shape: 2 }) }, f32(1, 2)), TypeError, /tensor 'w': shape must be an array of integers, got number 2/],
    ['negative dimension', rawFile({ w: entry({ shape: [-2] }) }, f32(1, 2)), RangeError, /tensor 'w': shape must hold non-negative integers, got \[-2\]/],
    ['fractional dimension', rawFile({ w: entry({ shape: [1.5] }) }, f32(1, 2)), RangeError, /tensor 'w': shape must hold non-negative integers/],
    ['huge shape', rawFile({ w: entry({ shape: [2 ** 40, 2 ** 40] }) }, f32(1, 2)), RangeError, /tensor 'w': shape \[.*\] is too large/],
    ['data_offsets missing', rawFile({ w: entry({ data_offsets: undefined }) }, f32(1, 2)), TypeError, /tensor 'w': data_offsets must be \[begin, end\], got undefined/],
    ['data_offsets of three', rawFile({ w: entry({ data_offsets: [0, 4, 8] }) }, f32(1, 2)), TypeError, /tensor 'w': data_offsets must be \[begin, end\]/],
    ['data_offsets past the data', rawFile({ w: entry({ data_offsets: [4, 12] }) }, f32(1, 2)), RangeError,
      /tensor 'w': data_offsets \[4,12\] must satisfy 0 <= begin <= end <= 8/],
    ['data_offsets reversed', rawFile({ w: entry({ data_offsets: [8, 0] }) }, f32(1, 2)), RangeError, /tensor 'w': data_offsets \[8,0\] must satisfy/],
    ['data_offsets negative', rawFile({ w: entry({ data_offsets: [-8, 0] }) }, f32(1, 2)), RangeError, /tensor 'w': data_offsets \[-8,0\]/],
    ['size does not match dtype and shape', rawFile({ w: entry({ shape: [3] }) }, f32(1, 2)), RangeError,
      /tensor 'w': dtype F32 and shape \[3\] need 12 bytes, but data_offsets \[0,8\] span 8/],
    ['overlapping tensors', rawFile({ a: entry(), b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, f32(1, 2)), RangeError,
      /tensor 'b' \(bytes 4..8\) overlaps tensor 'a' \(bytes 0..8\)/],
    ['a gap between tensors', rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, f32(1, 2)), RangeError,
      /data bytes 0..4 belong to no tensor \(before tensor 'a'\)/],
    ['trailing bytes', rawFile({ w: entry() }, f32(1, 2, 3)), RangeError, /the tensors cover 8 bytes, but the data section has 12/],
    ['metadata not an object', rawFile({ __metadata__: 'x' }), TypeError, /__metadata__ must be an object of strings, got string x/],
    ['metadata value not a string', rawFile({ __metadata__: { epoch: 3 } }), TypeError, /__metadata__\['epoch'\] must be a string, got number 3/],
  ];
  for (const [description, bytes, ErrorClass, pattern] of BAD) {
    test(`rejects ${description}`, () => {
      assert.throws(() => readSafetensors(bytes), (error) => {
        assert.equal(error.constructor, ErrorClass, `${error.constructor.name}: ${error.message}`);
        assert.match(error.message, pattern);
        return true;
      });
    });
  }
});

describe('stateDictFromSafetensors', () => {
  test('keeps F32 and converts F16, BF16 and F64 to Float32Array exactly', () => {
    const file = rawFile({
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      // 1.5, -2, 65504 (largest half), 2^-24 (smallest subnormal), -Infinity, -0
      h: { dtype: 'F16', shape: [6], data_offsets: [8, 20] },
      // 1, -3.140625, 2^-126 * 0.5 (subnormal)
      b: { dtype: 'BF16', shape: [3], data_offsets: [20, 26] },
      d: { dtype: 'F64', shape: [2], data_offsets: [26, 42] },
    }, new Uint8Array([
      ...f32(0.1, -7),
      ...bytesOf(new Uint16Array([0x3e00, 0xc000, 0x7bff, 0x0001, 0xfc00, 0x8000])),
      ...bytesOf(new Uint16Array([0x3f80, 0xc049, 0x0040])),
      ...bytesOf(new Float64Array([0.1, 1e300])),
    ]));
    const sd = stateDictFromSafetensors(file);
    assert.deepEqual(sd.a, new Float32Array([0.1, -7]));
    assert.deepEqual(sd.h, new Float32Array([1.5, -2, 65504, 2 ** -24, -Infinity, -0]));
    assert.deepEqual(sd.b, new Float32Array([1, -3.140625, 2 ** -127]));
    assert.deepEqual(sd.d, new Float32Array([Math.fround(0.1), Infinity]));
    for (const value of Object.values(sd)) assert.ok(value instanceof Float32Array);
  });

  test('F16 NaN stays NaN', () => {
    const file = rawFile({ h: { dtype: 'F16', shape: [1], data_offsets: [0, 2] } }, bytesOf(new Uint16Array([0x7e00])));
    assert.ok(Number.isNaN(stateDictFromSafetensors(file).h[0]));
  });

  test('rejects integer tensors, naming them', () => {
    const file = writeSafetensors({ step: { data: new BigInt64Array([1n]), shape: [1] } });
    assert.throws(() => stateDictFromSafetensors(file),
      { name: 'TypeError', message: "stateDictFromSafetensors: tensor 'step' has dtype I64; weights must be one of F32, F16, BF16, F64" });
  });

  test('prefix picks one layer out of a bigger model and strips the prefix', () => {
    const file = writeSafetensors({
      'layers.0.attn.out_proj.bias': { data: new Float32Array([1]), shape: [1] },
      'layers.1.attn.out_proj.bias': { data: new Float32Array([2]), shape: [1] },
      'layers.1.norm.weight': { data: new BigInt64Array([1n]), shape: [1] },
    });
    assert.deepEqual(stateDictFromSafetensors(file, { prefix: 'layers.0.attn.' }), { 'out_proj.bias': new Float32Array([1]) });
    assert.throws(() => stateDictFromSafetensors(file, { prefix: 'decoder.' }),
      { name: 'TypeError', message: /no tensor name starts with 'decoder.'; names: layers.0.attn.out_proj.bias/ });
    assert.throws(() => stateDictFromSafetensors(file, { prefix: 3 }), { name: 'TypeError', message: /prefix must be a string, got number 3/ });
  });
});

describe('writeSafetensors', () => {
  test('writes the layout of the format: length, space-padded JSON header, aligned data in order', () => {
    const file = writeSafetensors({ w: { data: new Float32Array([1, 2]), shape: [1, 2] } }, { metadata: { format: 'pt' } });
    const headerLength = Number(new DataView(file.buffer).getBigUint64(0, true));
    assert.equal((8 + headerLength) % 8, 0);
    const header = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + headerLength)));
    assert.deepEqual(header, { __metadata__: { format: 'pt' }, w: { dtype: 'F32', shape: [1, 2], data_offsets: [0, 8] } });
    assert.deepEqual(new Float32Array(file.slice(8 + headerLength).buffer), new Float32Array([1, 2]));
    assert.equal(file.length, 8 + headerLength + 8);
  });

  test('rounds Float32Array data to F16 and BF16 when asked (nearest, ties to even)', () => {
    const values = new Float32Array([1, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65520, 2 ** -25, 2 ** -26, -0.5, 1 + 2 ** -8]);
    const { h, b } = readSafetensors(writeSafetensors({
      h: { data: values, shape: [8], dtype: 'F16' },
      b: { data: values, shape: [8], dtype: 'BF16' },
    })).tensors;
    assert.deepEqual(h.data, new Uint16Array([0x3c00, 0x3c00, 0x3c02, 0x7c00, 0x0000, 0x0000, 0xb800, 0x3c04]));
    assert.deepEqual(b.data, new Uint16Array([0x3f80, 0x3f80, 0x3f80, 0x4780, 0x3300, 0x3280, 0xbf00, 0x3f80]));
  });

  test('a Map works as input, and the original arrays are not changed', () => {
    const data = new Float32Array([3, 4]);
    const file = writeSafetensors(new Map([['x', { data, shape: [2] }]]));
    assert.deepEqual(stateDictFromSafetensors(file), { x: new Float32Array([3, 4]) });
    assert.deepEqual(data, new Float32Array([3, 4]));
  });

  const BAD = [
    ['tensors not an object', () => writeSafetensors(null), TypeError, /tensors must be an object or a Map, got null/],
    ['a bare Float32Array value', () => writeSafetensors({ w: new Float32Array(2) }), TypeError,
      /tensor 'w' must be \{ data: TypedArray, shape: number\[\], dtype\? \}, got a Float32Array/],
    ['Uint16Array without a dtype', () => writeSafetensors({ w: { data: new Uint16Array(1), shape: [1] } }), TypeError,
      /tensor 'w': give a dtype for a Uint16Array/],
    ['unknown dtype', () => writeSafetensors({ w: { data: new Float32Array(1), shape: [1], dtype: 'f32' } }), TypeError,
      /tensor 'w': unknown dtype "f32"/],
    ['dtype that does not fit the array', () => writeSafetensors({ w: { data: new Float32Array(1), shape: [1], dtype: 'I32' } }), TypeError,
      /tensor 'w': dtype I32 needs an Int32Array, got a Float32Array/],
    ['shape that does not fit the data', () => writeSafetensors({ w: { data: new Float32Array(3), shape: [2, 2] } }), RangeError,
      /tensor 'w': shape \[2,2\] needs 4 elements, but data has 3/],
    ['the reserved name', () => writeSafetensors({ __metadata__: { data: new Float32Array(1), shape: [1] } }), TypeError,
      /"__metadata__" cannot be a tensor name/],
    ['metadata that is not strings', () => writeSafetensors({}, { metadata: { epoch: 1 } }), TypeError,
      /writeSafetensors: __metadata__\['epoch'\] must be a string/],
  ];
  for (const [description, call, ErrorClass, pattern] of BAD) {
    test(`rejects ${description}`, () => {
      assert.throws(call, (error) => error.constructor === ErrorClass && pattern.test(error.message));
    });
  }
});

describe('weights through a .safetensors file', () => {
  test('a fixture state dict saved, read back and loaded gives PyTorch\'s output (F32 and F64 files)', async () => {
    const mha = await init();
    const { tolerance, cases } = loadFixtures();
    const c = cases.find((x) => x.name.includes('kdim')) ?? cases[0];
    for (const toArray of [(a) => a, (a) => Float64Array.from(a)]) {
      const shapes = new mha.MultiHeadAttention(layerConfig(c));
      const named = Object.fromEntries(Object.entries(shapes.stateDictShapes())
        .map(([name, shape]) => [name, { data: toArray(c.stateDict[name]), shape }]));
      shapes.dispose();
      const layer = new mha.MultiHeadAttention(layerConfig(c));
      layer.loadStateDict(stateDictFromSafetensors(writeSafetensors(named)));
      const { output } = runCase(layer, c);
      layer.dispose();
      const e = worstError(output.data, c.tensors.output.data, tolerance);
      assert.ok(e.ratio <= 1, `${c.name}: output[${e.index}] off by ${e.absolute}`);
    }
  });
});
