// A KV cache of one layer, as JS holds it (made by LayerHandle::createCache / createPlannedCache;
// the JS wrapper checks every argument of truncate before calling, so nothing here throws).
#pragma once

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <memory>

#include "mha/cache/kv_cache.hpp"

namespace mha_embind {

class CacheHandle {
 public:
  explicit CacheHandle(std::unique_ptr<mha::KvCache> cache) : cache_(std::move(cache)) {}
  double length() const { return static_cast<double>(cache_->length()); }
  double capacity() const { return static_cast<double>(cache_->capacity()); }
  double batch() const { return static_cast<double>(cache_->batch()); }
  double byteSize() const { return static_cast<double>(cache_->byte_size()); }
  int kind() const { return static_cast<int>(cache_->kind()); }  // 0 none, 1 self, 2 cross
  void truncate(double n) {
    if (n >= 0 && n <= length()) cache_->truncate(static_cast<int64_t>(n));
  }
  void reset() { cache_->reset(); }
  // A storage-less cache (LayerHandle::createPlannedCache): n tokens were appended elsewhere.
  void advance(double n) { cache_->advance(static_cast<int64_t>(n)); }
  mha::KvCache& cache() { return *cache_; }

 private:
  std::unique_ptr<mha::KvCache> cache_;
};

}  // namespace mha_embind

// val::as<CacheHandle*>() gets the JS object's address as a double, and embind 3.1.6 keeps class
// pointers signed in JS: above 2 GiB the double is negative, and its cast to uintptr_t gives null
// (the request then ran without its cache). Through a signed 64-bit integer both forms convert.
template <>
struct emscripten::internal::GenericWireTypeConverter<mha_embind::CacheHandle*> {
  static mha_embind::CacheHandle* from(double address) {
    return reinterpret_cast<mha_embind::CacheHandle*>(static_cast<uintptr_t>(static_cast<int64_t>(address)));
  }
};

namespace mha_embind {

// The request's `cache` property: a CacheHandle, or none.
inline CacheHandle* cache_of(const emscripten::val& v) {
  if (v.isUndefined() || v.isNull()) return nullptr;
  return v.as<CacheHandle*>(emscripten::allow_raw_pointers());
}

}  // namespace mha_embind
