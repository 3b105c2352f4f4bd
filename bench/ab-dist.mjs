// Two wasm builds' forward pass, alternating in one process, for A/B timing on a noisy machine:
//   node --no-liftoff bench/ab-dist.mjs <dist A> <dist B> [--shapes=0,1,3] [--rounds=9] [--build=mha-simd]
// Each dist/ folder holds a build (e.g. a copy of main's dist/ and this checkout's); both run the
// same weights and inputs (bench/shapes.mjs) through this checkout's JS layer, A and B taking
// turns call by call (who goes first alternating by round). Prints each side's median ms, B / A,
// and the GEMM variant each build's calibration picked (none: a build without variants).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { defineMultiHeadAttention } from '../bindings/js/core/layer.js';
import { benchWeights, label, randomArray, SHAPES } from './shapes.mjs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const args = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const build = args.build ?? 'mha-simd';
const shapes = (args.shapes ?? '0,1,3').split(',').map((i) => SHAPES[Number(i)]);
const ROUNDS = Number(args.rounds ?? 9);

async function load(dist) {
  const dir = path.resolve(dist);
  const { default: create } = await import(pathToFileURL(path.join(dir, `${build}.mjs`)).href);
  const module = await create({ wasmBinary: await readFile(path.join(dir, `${build}.wasm`)) });
  return { module, MultiHeadAttention: defineMultiHeadAttention(module) };
}

const sides = await Promise.all(positional.slice(0, 2).map(load));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`A: ${positional[0]}\nB: ${positional[1]} (${build}, 1 thread, ${ROUNDS} rounds, alternating)\n`);
console.log('| shape | A ms | B ms | B / A |\n| --- | ---: | ---: | ---: |');
for (const s of shapes) {
  const layers = sides.map(({ MultiHeadAttention }) => {
    const layer = new MultiHeadAttention({ embedDim: s.E, numHeads: s.H });
    layer.loadStateDict(benchWeights(s.E));
    return layer;
  });
  const q = { data: randomArray(s.B * s.L * s.E, 11), shape: [s.B, s.L, s.E] };
  const k = { data: randomArray(s.B * s.S * s.E, 12), shape: [s.B, s.S, s.E] };
  const call = (layer) => (s.S === s.L ? layer.forward(q) : layer.forward(q, k, k));
  for (const layer of layers) for (let i = 0; i < 3; i++) call(layer);  // warm-up (and each build's calibration)
  const times = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 ? [1, 0] : [0, 1]) {
      const t0 = performance.now();
      call(layers[side]);
      times[side].push(performance.now() - t0);
    }
  }
  const [a, b] = times.map(median);
  console.log(`| ${label(s)} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(3)} |`);
  for (const layer of layers) layer.dispose();
}
const variant = ({ module }) => (module.kernelChoice ? JSON.parse(module.kernelChoice()).gemm.variant : 'none');
console.log(`\nGEMM variant: A ${variant(sides[0])}, B ${variant(sides[1])}`);
