// The errors the core's handles record (a handle's lastError and lastErrorKind), thrown as the JS
// classes the core's error kinds map to (see bindings/embind/handle_errors.hpp: ErrorCode), named by their call.
import { describeGrowthRefusal } from './memory-growth.js';

const ERROR_CLASSES = [Error, TypeError, RangeError, Error];

/** Throws the error a handle recorded for its last call, named by `context` once. */
export function throwHandleError(handle, context) {
  const ErrorClass = ERROR_CLASSES[handle.lastErrorKind()] ?? Error;
  let message = handle.lastError();
  if (message.startsWith('out of memory')) message += describeGrowthRefusal(handle);
  throw new ErrorClass(message.startsWith(`${context}: `) ? message : `${context}: ${message}`);
}

/** A handle just constructed, or, when its constructor failed, its error thrown as throwHandleError's, the handle deleted. */
export function constructedHandle(handle, context) {
  if (handle.lastErrorKind() !== 0) {
    try {
      throwHandleError(handle, context);
    } finally {
      handle.delete();
    }
  }
  return handle;
}
