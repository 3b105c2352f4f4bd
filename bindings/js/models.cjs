// CommonJS entry of mha-wasm/models: `const { loadModel } = require('mha-wasm/models')` in Node 20.
// The package is ES modules, so everything is reached through a dynamic import; the functions
// here are the ES module's, asynchronous where those are not.
'use strict';

function load() {
  return import('./models/index.js');
}

/** The same as the ES module's loadModel(mha, files, options). */
async function loadModel(mha, files, options) {
  return (await load()).loadModel(mha, files, options);
}

/** The same as the ES module's estimateModelMemory(files, options). */
async function estimateModelMemory(files, options) {
  return (await load()).estimateModelMemory(files, options);
}

/** The same as the ES module's loadModelFromFolder(mha, path, options). */
async function loadModelFromFolder(mha, path, options) {
  return (await load()).loadModelFromFolder(mha, path, options);
}

/** The same as the ES module's activationPatching(model, options). */
async function activationPatching(model, options) {
  return (await load()).activationPatching(model, options);
}

/** The same as the ES module's directLogitAttribution(model, cache, options) (asynchronous here). */
async function directLogitAttribution(model, cache, options) {
  return (await load()).directLogitAttribution(model, cache, options);
}

/** The same as the ES module's headScores(model, cache, kind) (asynchronous here). */
async function headScores(model, cache, kind) {
  return (await load()).headScores(model, cache, kind);
}

module.exports = { loadModel, estimateModelMemory, loadModelFromFolder, activationPatching, directLogitAttribution, headScores, load };
