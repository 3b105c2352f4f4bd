// The JS error classes the core's error kinds map to (see bindings/embind.cpp: ErrorCode).
const ERROR_CLASSES = [Error, TypeError, RangeError, Error];

/** Throws the error a handle recorded for its last call, named by `context` once. */
export function throwHandleError(handle, context) {
  const ErrorClass = ERROR_CLASSES[handle.lastErrorKind()] ?? Error;
  const message = handle.lastError();
  throw new ErrorClass(message.startsWith(`${context}: `) ? message : `${context}: ${message}`);
}
