// Named buffers between JS and a layer: a state dict the JS wrapper copied into the heap, and the
// handle's own buffers (gradients, state-dict copies) listed for the wrapper to copy out.
#pragma once

#include <emscripten/val.h>

#include <string>
#include <utility>
#include <vector>

#include "mha/layer/parameters.hpp"
#include "request_keys.hpp"

namespace mha_embind {

template <typename T>
using Named = std::vector<std::pair<std::string, std::vector<T>>>;

// [{ name, ptr, length }] over named buffers the handle keeps (the JS wrapper copies them out).
template <typename T>
val entries_of(const Named<T>& named) {
  val list = val::array();
  for (const auto& [name, data] : named) {
    val e = val::object();
    e.set("name", name);
    e.set("ptr", static_cast<double>(reinterpret_cast<uintptr_t>(data.data())));
    e.set("length", static_cast<double>(data.size()));
    list.call<void>("push", e);
  }
  return list;
}

// A state dict from [{ name, ptr, length }] entries the JS wrapper copied into the heap (T: the layer's float type).
template <typename T>
mha::BasicStateDict<T> state_dict_of(const RequestKeys& keys, const val& entries) {
  mha::BasicStateDict<T> sd;
  const int n = entries[keys.length].as<int>();
  for (int i = 0; i < n; ++i) {
    val e = entries[i];
    sd[e["name"].as<std::string>()] = {pointer_of<T>(keys, e), static_cast<int64_t>(e[keys.length].as<double>())};
  }
  return sd;
}

}  // namespace mha_embind
