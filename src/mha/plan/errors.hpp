// Errors thrown by the core. Each names the argument at fault and what was expected,
// so the bindings can hand the message to JavaScript unchanged.
#pragma once

#include <stdexcept>
#include <string>

namespace mha {

// Which JavaScript error class the bindings should raise for this failure.
enum class ErrorKind {
  kType,   // wrong kind of value: missing or unknown key, bad mask dtype
  kRange,  // right kind, wrong size: shapes, lengths, non-divisible heads
};

class ArgumentError : public std::invalid_argument {
 public:
  ArgumentError(ErrorKind kind, const std::string& message)
      : std::invalid_argument(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

inline ArgumentError type_error(const std::string& message) {
  return ArgumentError(ErrorKind::kType, message);
}
inline ArgumentError range_error(const std::string& message) {
  return ArgumentError(ErrorKind::kRange, message);
}

// "No weights yet", worded once for every layer's forward, backward and setKeyValue; `load` names
// the calls that give the layer weights (bindings/js/api/errors.js' noWeightsYet is its JS twin,
// for the checks the JS backends make themselves).
inline ArgumentError no_weights_error(const std::string& load = "loadStateDict() or initialize()") {
  return type_error("the layer has no weights yet; call " + load + " first");
}

}  // namespace mha
