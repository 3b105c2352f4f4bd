// The keys and values of the tokens a layer has seen, kept so each new token costs one pass over
// them instead of a whole forward pass (decoding). Bounded: all memory is taken at creation.
//
// Layout, per batch row b and key/value head h, `capacity` rows of keys then of values:
//   K [B][Hkv][capacity][Dh], V [B][Hkv][capacity][Dv]
// so one head's keys are contiguous (the attention kernels read them as a [length, Dh] matrix
// with row stride Dh). float16 caches hold the same layout in IEEE half precision: converted on
// append (round to nearest even), widened when read.
//
// A cache is one of two kinds, fixed by its first use until reset():
//   self:  forward({ cache }) appends the call's new tokens and attends to everything held;
//   cross: setKeyValue() projects an encoder's states once; forward reads them, never appends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/errors.hpp"

namespace mha {

enum class CacheDtype { kF32, kF16 };
enum class CacheKind { kNone, kSelf, kCross };

class KvCache {
 public:
  // Checks the sizes and the memory budget (a RangeError naming the bytes), then allocates.
  // storage = false: a cache whose keys and values live elsewhere (the WebGPU backend's, on the
  // GPU): it holds no memory and only tracks the length and kind, so forward plans check calls
  // with it as with any cache; advance() counts the tokens the other storage appended.
  KvCache(const ResolvedConfig& config, const void* owner, int64_t batch, int64_t capacity, CacheDtype dtype,
          bool storage = true);

  const void* owner() const { return owner_; }
  int64_t batch() const { return batch_; }
  int64_t capacity() const { return capacity_; }
  int64_t length() const { return length_; }
  CacheKind kind() const { return kind_; }
  CacheDtype dtype() const { return dtype_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t value_head_dim() const { return value_head_dim_; }
  uint64_t byte_size() const { return byte_size(batch_, num_kv_heads_, capacity_, head_dim_, value_head_dim_, dtype_); }
  static uint64_t byte_size(int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim, int64_t value_head_dim,
                            CacheDtype dtype);

  // Keep the first n tokens (n <= length). A cross cache keeps its kind.
  void truncate(int64_t n);
  // Length 0 and no kind; the memory stays.
  void reset();

  // Appends `rows` tokens per batch row: k [B, rows, Hkv*Dh] and v [B, rows, Hkv*Dv], row-major.
  // The caller has checked the capacity (forward_plan.cpp) and sets the kind.
  void append(const float* k, const float* v, int64_t rows);
  void set_kind(CacheKind kind) { kind_ = kind; }
  // A storage-less cache: `rows` tokens were appended where its keys and values live.
  void advance(int64_t rows) {
    kind_ = CacheKind::kSelf;
    length_ += rows;
  }

  // One head's keys [length, Dh] / values [length, Dv] as float32: the storage itself for f32
  // caches; for f16, widened into `scratch` (length * D floats).
  const float* keys(int64_t b, int64_t h, float* scratch) const;
  const float* values(int64_t b, int64_t h, float* scratch) const;

 private:
  const float* read(const std::vector<float>& f32, const std::vector<uint16_t>& f16, int64_t b, int64_t h, int64_t dim,
                    float* scratch) const;

  const void* owner_;
  int64_t batch_, capacity_, num_kv_heads_, head_dim_, value_head_dim_;
  CacheDtype dtype_;
  CacheKind kind_ = CacheKind::kNone;
  int64_t length_ = 0;
  std::vector<float> k32_, v32_;      // f32 storage
  std::vector<uint16_t> k16_, v16_;   // f16 storage
};

// IEEE 754 binary16 conversions (round to nearest even; overflow to infinity; NaN kept NaN).
uint16_t float_to_half(float x);
float half_to_float(uint16_t h);

}  // namespace mha
