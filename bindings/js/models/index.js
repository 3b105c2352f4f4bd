// mha-wasm/models: a user's own Hugging Face checkpoint as a library for studying it. loadModel()
// gives a HookedModel (forward, runWithCache, runWithHooks under TransformerLens' hook names,
// generate); the workflows interpretability is made of read its runs and caches. docs/models.md.
export { estimateModelMemory, loadModel } from './hooked-model.js';
export { loadModelFromFolder } from './folder.js';
export { activationPatching } from './patching.js';
export { directLogitAttribution } from './attribution.js';
export { headScores } from './head-scores.js';
