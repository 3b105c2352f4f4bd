// CommonJS entry of mha-wasm/tfjs: `const { mhaTfjs } = require('mha-wasm/tfjs')` in Node 20.
// The package is ES modules, so everything is reached through a dynamic import.
'use strict';

function load() {
  return import('./tfjs.js');
}

/** The same as the ES module's mhaTfjs(tf, initOptions). */
async function mhaTfjs(tf, initOptions) {
  return (await load()).mhaTfjs(tf, initOptions);
}

/** The same as the ES module's registerFastGradients(tf, options) (asynchronous here). */
async function registerFastGradients(tf, options) {
  return (await load()).registerFastGradients(tf, options);
}

/** The same as the ES module's tfjsToGpu(tf, tensor) (asynchronous here). */
async function tfjsToGpu(tf, tensor) {
  return (await load()).tfjsToGpu(tf, tensor);
}

/** The same as the ES module's gpuToTfjs(tf, gpuTensor, options) (asynchronous here). */
async function gpuToTfjs(tf, gpuTensor, options) {
  return (await load()).gpuToTfjs(tf, gpuTensor, options);
}

module.exports = { mhaTfjs, registerFastGradients, tfjsToGpu, gpuToTfjs, load };
