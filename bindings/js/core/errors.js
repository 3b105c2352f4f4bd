// The old path of api/errors.js and core/handle-errors.js, for code that imports them from here.
// New code imports those.
export * from '../api/errors.js';
export * from './handle-errors.js';
