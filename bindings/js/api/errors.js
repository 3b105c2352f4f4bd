// Errors' wording for every backend: "no weights yet", and the rule that every error a public call
// throws starts with that call's name ('forward: query: ...', 'createCache: capacity ...'). The
// errors the core's handles record are thrown by core/handle-errors.js.

/**
 * "No weights yet", worded once for JS: the twin of the core's no_weights_error (src/mha/plan/errors.hpp),
 * for the checks a JS backend makes before any C++ call would.
 */
export const noWeightsYet = () => new TypeError('the layer has no weights yet; call loadStateDict() or initialize() first');

/**
 * Puts `call: ` in front of an error's message, unless the message already starts with it (or with
 * 'Class.call: '). A message starting with one of `inner` (the names of calls this call made on
 * the caller's behalf, e.g. Keras' call running forward) has that name replaced.
 */
export function withCallName(error, call, inner = []) {
  if (!(error instanceof Error)) return error;
  const old = error.message;
  if (new RegExp(`^(\\w+\\.)?${call}: `).test(old)) return error;
  const innerName = inner.find((name) => old.startsWith(`${name}: `));
  error.message = `${call}: ${innerName ? old.slice(innerName.length + 2) : old}`;
  if (typeof error.stack === 'string') error.stack = error.stack.replace(old, error.message);
  return error;
}

/**
 * `Class` with every error of its constructor named `className: ...` and every error of the
 * listed methods named by the method ('forward: ...'): one place that keeps the rule, so a check
 * deep inside a method need not know which call it serves. `inner` as in withCallName.
 */
export function nameErrorsByCall(Class, className, methods, inner = []) {
  for (const method of methods) {
    const original = Class.prototype[method];
    const named = {
      [method](...args) {
        try {
          return original.apply(this, args);
        } catch (error) {
          throw withCallName(error, method, inner);
        }
      },
    }[method];
    Object.defineProperty(Class.prototype, method, { value: named, writable: true, configurable: true });
  }
  const Named = class extends Class {
    constructor(...args) {
      try {
        super(...args);
      } catch (error) {
        throw withCallName(error, className, inner);
      }
    }
  };
  Object.defineProperty(Named, 'name', { value: className });
  return Named;
}
