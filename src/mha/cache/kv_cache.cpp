#include "mha/cache/kv_cache.hpp"

#include <algorithm>
#include <cstring>

#include "mha/plan/memory_budget.hpp"

namespace mha {

uint16_t float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));  // Inf, NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: Inf
  if (abs < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half of the smallest subnormal
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14 .. 24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs >> 13) - (112u << 10));  // rebias the exponent 127 -> 15
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: still right
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t f;
  if (exponent == 0x1f) {
    f = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    f = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    f = sign;
  } else {  // subnormal half: normalize
    int e = -1;
    uint32_t m = mantissa;
    do {
      ++e;
      m <<= 1;
    } while ((m & 0x400u) == 0);
    f = sign | ((112u - e) << 23) | ((m & 0x3ffu) << 13);
  }
  float x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

uint64_t KvCache::byte_size(int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim, int64_t value_head_dim,
                            CacheDtype dtype) {
  return saturating_bytes({batch, kv_heads, capacity, head_dim + value_head_dim}, dtype == CacheDtype::kF16 ? 2 : 4);
}

KvCache::KvCache(const ResolvedConfig& c, const void* owner, int64_t batch, int64_t capacity, CacheDtype dtype,
                 bool storage)
    : owner_(owner), batch_(batch), capacity_(capacity), num_kv_heads_(c.num_kv_heads), head_dim_(c.head_dim),
      value_head_dim_(c.value_head_dim), dtype_(dtype) {
  if (batch < 1) throw range_error("createCache: batch must be an integer >= 1, got " + std::to_string(batch));
  if (capacity < 1) throw range_error("createCache: capacity must be an integer >= 1, got " + std::to_string(capacity));
  if (!storage) return;
  const bool f16 = dtype == CacheDtype::kF16;
  const uint64_t keys = saturating_bytes({batch, c.num_kv_heads, capacity, c.head_dim}, f16 ? 2 : 4);
  const uint64_t values = saturating_bytes({batch, c.num_kv_heads, capacity, c.value_head_dim}, f16 ? 2 : 4);
  check_fits("createCache: the cache would", {{"keys", keys}, {"values", values}}, 0, addressable_bytes());
  const size_t k_count = static_cast<size_t>(batch * c.num_kv_heads * capacity * c.head_dim);
  const size_t v_count = static_cast<size_t>(batch * c.num_kv_heads * capacity * c.value_head_dim);
  if (f16) {
    k16_.resize(k_count);
    v16_.resize(v_count);
  } else {
    k32_.resize(k_count);
    v32_.resize(v_count);
  }
}

void KvCache::truncate(int64_t n) {
  if (n < 0 || n > length_)
    throw range_error("truncate: n must be an integer from 0 to the cache's length (" + std::to_string(length_) +
                      "), got " + std::to_string(n));
  length_ = n;
}

void KvCache::reset() {
  length_ = 0;
  kind_ = CacheKind::kNone;
}

void KvCache::append(const float* k, const float* v, int64_t rows) {
  const int64_t KV = num_kv_heads_ * head_dim_, VKV = num_kv_heads_ * value_head_dim_;
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t h = 0; h < num_kv_heads_; ++h) {
      const int64_t head = (b * num_kv_heads_ + h) * capacity_ + length_;
      for (int64_t r = 0; r < rows; ++r) {
        const float* kr = k + (b * rows + r) * KV + h * head_dim_;
        const float* vr = v + (b * rows + r) * VKV + h * value_head_dim_;
        const size_t ko = static_cast<size_t>((head + r) * head_dim_), vo = static_cast<size_t>((head + r) * value_head_dim_);
        if (dtype_ == CacheDtype::kF16) {
          for (int64_t d = 0; d < head_dim_; ++d) k16_[ko + d] = float_to_half(kr[d]);
          for (int64_t d = 0; d < value_head_dim_; ++d) v16_[vo + d] = float_to_half(vr[d]);
        } else {
          std::copy(kr, kr + head_dim_, k32_.data() + ko);
          std::copy(vr, vr + value_head_dim_, v32_.data() + vo);
        }
      }
    }
  }
  length_ += rows;
}

const float* KvCache::read(const std::vector<float>& f32, const std::vector<uint16_t>& f16, int64_t b, int64_t h,
                           int64_t dim, float* scratch) const {
  const size_t first = static_cast<size_t>((b * num_kv_heads_ + h) * capacity_ * dim);
  if (dtype_ == CacheDtype::kF32) return f32.data() + first;
  for (int64_t i = 0; i < length_ * dim; ++i) scratch[i] = half_to_float(f16[first + i]);
  return scratch;
}

const float* KvCache::keys(int64_t b, int64_t h, float* scratch) const { return read(k32_, k16_, b, h, head_dim_, scratch); }
const float* KvCache::values(int64_t b, int64_t h, float* scratch) const {
  return read(v32_, v16_, b, h, value_head_dim_, scratch);
}

}  // namespace mha
