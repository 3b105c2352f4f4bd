// No C++ exception crosses into JavaScript: each handle call reports success, and the JS wrapper
// raises the error it then reads from lastErrorKind() / lastError() (bindings/js/core/handle-errors.js
// maps the kinds to classes; the texts are bindings/js/api/errors.js').
#pragma once

#include <exception>
#include <new>
#include <string>

#include "mha/plan/errors.hpp"

namespace mha_embind {

// 0 = none, 1 = TypeError, 2 = RangeError, 3 = Error
enum ErrorCode { kNone = 0, kTypeError = 1, kRangeError = 2, kOtherError = 3 };

// Runs f, recording a C++ exception as an error kind and message; returns whether f succeeded.
template <typename F>
bool guarded(int& error_kind, std::string& error, F&& f) {
  error_kind = kNone;
  std::string().swap(error);  // frees the last message, so an error holds no memory past the next call
  try {
    f();
    return true;
  } catch (const mha::ArgumentError& e) {
    error_kind = e.kind() == mha::ErrorKind::kType ? kTypeError : kRangeError;
    error = e.what();
  } catch (const std::bad_alloc&) {
    error_kind = kRangeError;
    error = "out of memory: the request does not fit in WebAssembly memory";
  } catch (const std::exception& e) {
    error_kind = kOtherError;
    error = e.what();
  }
  return false;
}

// The last call's error, kept by a handle until its next call.
class HandleErrors {
 public:
  int lastErrorKind() const { return error_kind_; }
  std::string lastError() const { return error_; }

 protected:
  template <typename F>
  bool guard(F&& f) {
    return guarded(error_kind_, error_, f);
  }

  int error_kind_ = kNone;
  std::string error_;
};

}  // namespace mha_embind
