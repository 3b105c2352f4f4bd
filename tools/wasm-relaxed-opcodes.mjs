#!/usr/bin/env node
// Renumbers the relaxed-SIMD fused multiply-add in a module built by Emscripten 3.1.6 (clang 14)
// from the relaxed-SIMD proposal's prototype opcode to the standard one, in place:
//   clang 14: f32x4.fma          0xfd 0xaf 0x01 (LEB128 0xaf), no engine ships it
//   standard: f32x4.relaxed_madd 0xfd 0x85 0x02 (LEB128 0x105), Chrome 114+, Node 22+, Firefox 145+
// Both take their three operands in the same order, and the standard one computes a * b + c,
// which is how src/mha/kernels/simd.hpp's fmadd() calls the builtin.
//
// Only the code section is scanned. Its bytes also hold immediates (constants, offsets, shuffle
// lanes) where the three bytes could appear by chance, so the count is checked against
// binaryen's own disassembly (wasm-dis, which decodes every instruction): the patch must hit
// exactly the fma instructions it lists, and the module must hold no other relaxed instruction.
// Then the patched module must validate with relaxed SIMD on.
//
//   node tools/wasm-relaxed-opcodes.mjs dist/mha-relaxed-simd.wasm
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import v8 from 'node:v8';

const PROTOTYPE_FMA = [0xfd, 0xaf, 0x01];
const RELAXED_MADD = [0xfd, 0x85, 0x02];
const CODE_SECTION = 10;

function readLeb(bytes, at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return { value, next: at };
}

/** [start, end) of the code section's payload. */
function codeSection(bytes) {
  let at = 8;  // magic + version
  while (at < bytes.length) {
    const id = bytes[at];
    const { value: size, next } = readLeb(bytes, at + 1);
    if (id === CODE_SECTION) return [next, next + size];
    at = next + size;
  }
  throw new Error('wasm-relaxed-opcodes: the module has no code section');
}

/** How many relaxed instructions binaryen finds, by name. */
function relaxedInstructions(file) {
  const text = execFileSync('wasm-dis', ['--enable-simd', '--enable-relaxed-simd', '--all-features', file],
    { maxBuffer: 1 << 30, encoding: 'utf8' });
  const counts = {};
  for (const [name] of text.matchAll(/\b[fi](?:32x4|64x2|16x8|8x16)\.relaxed_\w+/g)) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

const file = process.argv[2];
if (!file) throw new Error('usage: node tools/wasm-relaxed-opcodes.mjs <module.wasm>');
const bytes = readFileSync(file);
const listed = relaxedInstructions(file);
const others = Object.keys(listed).filter((name) => name !== 'f32x4.relaxed_fma');
if (others.length) throw new Error(`wasm-relaxed-opcodes: ${file} holds relaxed instructions this tool cannot renumber: ${others.join(', ')}`);

const [start, end] = codeSection(bytes);
let patched = 0;
for (let i = start; i + 2 < end; ++i) {
  if (bytes[i] === PROTOTYPE_FMA[0] && bytes[i + 1] === PROTOTYPE_FMA[1] && bytes[i + 2] === PROTOTYPE_FMA[2]) {
    bytes.set(RELAXED_MADD, i);
    patched += 1;
    i += 2;
  }
}
const expected = listed['f32x4.relaxed_fma'] ?? 0;
if (patched !== expected || expected === 0) {
  throw new Error(`wasm-relaxed-opcodes: ${file}: ${patched} byte matches, but binaryen lists ${expected} fma instructions`);
}
v8.setFlagsFromString('--experimental-wasm-relaxed-simd');  // Node 20; Node 22+ has it on already
if (!WebAssembly.validate(bytes)) throw new Error(`wasm-relaxed-opcodes: ${file} does not validate after renumbering`);
writeFileSync(file, bytes);
console.log(`wasm-relaxed-opcodes: ${file}: ${patched} f32x4.relaxed_madd`);
