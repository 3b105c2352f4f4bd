// The forward planner other backends ask for shapes and validation (the WebGPU backend): a
// weightless LayerHandle of a layer's resolved config, whose checkForward / plannedOutputShape /
// plannedWeightsShape are the wasm layer's own (one source of truth, the C++ plan_forward).
// planForward is checkForward without the wasm-memory budget, for buffers outside the wasm heap.
// Reached through a symbol on the loaded module object, so it is no public API.
export const PLANNER = Symbol('mha-wasm forward planner');

/** (config) => LayerHandle of the embind `module`; the caller deletes it with .delete(). */
export const forwardPlanner = (module) => (config) => new module.LayerHandle(config);
