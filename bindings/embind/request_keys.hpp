// The request properties' names as JS strings, and the reads of a shape and an address that every
// handle makes from a request the JS wrapper built.
#pragma once

#include <emscripten/val.h>

#include <cstdint>

#include "mha/plan/shape.hpp"

namespace mha_embind {

using emscripten::val;

// Made once per handle: `request["causal"]` makes its key string anew, a call into JS, on every
// read (14% of a small layer's decode step went to making key strings). (A function-local static
// would also allocate, in the threads build, at its first use: a forward's heap accounting would
// see it.)
struct RequestKeys {
  val length{"length"}, ptr{"ptr"}, shape{"shape"}, isBool{"isBool"}, causal{"causal"}, needWeights{"needWeights"},
      averageWeights{"averageWeights"}, training{"training"}, seed{"seed"}, weightsBeforeDropout{"weightsBeforeDropout"},
      query{"query"}, key{"key"}, value{"value"}, keyPaddingMask{"keyPaddingMask"}, attnMask{"attnMask"},
      positions{"positions"}, cache{"cache"}, grad{"grad"}, capture{"capture"}, patch{"patch"},
      steps{"steps"}, tensor{"tensor"}, heads{"heads"}, staticK{"staticK"}, staticV{"staticV"};
};

inline bool absent(const val& v) { return v.isUndefined() || v.isNull(); }

inline mha::Shape shape_of(const RequestKeys& keys, const val& v) {
  mha::Shape s;
  const int n = v[keys.length].as<int>();
  for (int i = 0; i < n; ++i) s.push_back(static_cast<int64_t>(v[i].as<double>()));
  return s;
}

inline val array_of(const mha::Shape& s) {
  val a = val::array();
  for (int64_t d : s) a.call<void>("push", static_cast<double>(d));
  return a;
}

template <typename T>
const T* pointer_of(const RequestKeys& keys, const val& v) {
  return reinterpret_cast<const T*>(v[keys.ptr].as<uintptr_t>());
}

// A heap address the JS wrapper passed as a number (0: none).
template <typename T>
T* at(double address) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(address));
}

}  // namespace mha_embind
