// In a project that installed the packed tarball: import mha-wasm as an ES module, run fixture cases
// with every build the options can pick, and check the other public exports exist.
import { readFileSync } from 'node:fs';

import { init, readSafetensors, stateDictFromKeras, stateDictFromOnnxAttention, stateDictFromSafetensors, writeSafetensors } from 'mha-wasm';
import { assertAllPass, runCases } from './run-cases.js';

const cases = JSON.parse(readFileSync(new URL('./cases.json', import.meta.url), 'utf8'));
for (const fn of [readSafetensors, stateDictFromKeras, stateDictFromOnnxAttention, stateDictFromSafetensors, writeSafetensors]) {
  if (typeof fn !== 'function') throw new Error('a named export is missing');
}
for (const options of [{}, { threads: 1 }, { simd: false, threads: 1 }]) {
  const mha = await init(options);
  console.log(assertAllPass(`node ESM ${mha.build.name} (${mha.build.numThreads} thread(s))`, runCases(mha, cases)));
}
