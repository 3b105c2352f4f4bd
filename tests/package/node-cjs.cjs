// In a project that installed the packed tarball: require() mha-wasm from CommonJS and run fixture cases.
const { readFileSync } = require('node:fs');
const path = require('node:path');

const { init, load } = require('mha-wasm');

(async () => {
  const { assertAllPass, runCases } = await import('./run-cases.js');
  const cases = JSON.parse(readFileSync(path.join(__dirname, 'cases.json'), 'utf8'));
  const mha = await init();
  console.log(assertAllPass(`node CJS ${mha.build.name} (${mha.build.numThreads} thread(s))`, runCases(mha, cases)));
  const esm = await load();
  if (typeof esm.readSafetensors !== 'function' || (await esm.init()) !== mha) {
    throw new Error('require("mha-wasm").load() must give the ES module with the same cached init()');
  }
})().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
