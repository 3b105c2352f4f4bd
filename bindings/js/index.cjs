// CommonJS entry: `const { init } = require('mha-wasm')` in Node 20. The package is ES modules
// (Node 20.0-20.18 cannot require() them), so everything is reached through a dynamic import.
'use strict';

/** Resolves to the ES module's namespace: init, readSafetensors, stateDictFromKeras, ... */
function load() {
  return import('./index.js');
}

/** The same as the ES module's init(): loads the WebAssembly module once. */
async function init(options) {
  return (await load()).init(options);
}

module.exports = { init, load };
