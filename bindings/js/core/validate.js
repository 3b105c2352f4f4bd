// The old path of api/validate.js, for the rooms that import it from here (bindings/js/models/).
// New code imports ../api/validate.js.
export * from '../api/validate.js';
