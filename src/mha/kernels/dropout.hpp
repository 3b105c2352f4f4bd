// Attention dropout's mask from a counter-based generator: Philox4x32-10 (Salmon, Moraes, Dror,
// Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the generator PyTorch's CUDA
// dropout and FlashAttention use. Whether key j survives for query position i is a pure function
// of (seed, stream, i, j): the forward and backward kernels regenerate the same mask tile by tile,
// no L x S mask is stored, and every build (wasm scalar, wasm SIMD, native) and thread count gets
// the same bits (32-bit integer arithmetic only; the threshold is computed once in double).
//
// One Philox call gives four 32-bit words: the counter is (j / 4, i, stream low, stream high) and
// the key (seed low, seed high), so one call decides keys 4 (j / 4) .. 4 (j / 4) + 3 of row i.
// Key j is kept when its word >= p * 2^32: probability 1 - p to within 2^-32.
#pragma once

#include <array>
#include <cstdint>

#include "attention_kernel.hpp"

namespace mha::kernels {

// The paper's constants for Philox4x32: the two round multipliers and the Weyl key increments
// (the golden ratio and sqrt(3) - 1, as 32-bit fractions).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

// Ten rounds of Philox4x32 on counter c with key (k0, k1).
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0], p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  return c;
}

// The mask of one (batch row, head) pair: keep(i, j), and the factor keep / (1 - p) that
// multiplies a kept probability.
class DropoutMask {
 public:
  explicit DropoutMask(const DropoutArgs& args)
      : threshold_(threshold_of(args.p)), scale_(args.p > 0.0f ? 1.0f / (1.0f - args.p) : 1.0f),
        k0_(static_cast<uint32_t>(args.seed)), k1_(static_cast<uint32_t>(args.seed >> 32)),
        s0_(static_cast<uint32_t>(args.stream)), s1_(static_cast<uint32_t>(args.stream >> 32)) {}

  // The four words deciding keys 4 * group .. 4 * group + 3 of query position i.
  std::array<uint32_t, 4> words(int64_t i, int64_t group) const {
    return philox4x32_10({static_cast<uint32_t>(group), static_cast<uint32_t>(i), s0_, s1_}, k0_, k1_);
  }

  bool keep(int64_t i, int64_t j) const { return words(i, j >> 2)[j & 3] >= threshold_; }

  // 1 / (1 - p): what a kept probability is multiplied by.
  float scale() const { return scale_; }

  // factors[t] = keep(i, j0 + t) / (1 - p) for t < n: one Philox call per 4 keys.
  void factors(int64_t i, int64_t j0, int64_t n, float* factors) const {
    int64_t t = 0;
    while (t < n) {
      const int64_t j = j0 + t;
      const std::array<uint32_t, 4> w = words(i, j >> 2);
      for (int64_t lane = j & 3; lane < 4 && t < n; ++lane, ++t) factors[t] = w[lane] >= threshold_ ? scale_ : 0.0f;
    }
  }

  // p[t] *= keep(i, j0 + t) / (1 - p) for t < n.
  void apply(int64_t i, int64_t j0, int64_t n, float* p) const {
    int64_t t = 0;
    while (t < n) {
      const int64_t j = j0 + t;
      const std::array<uint32_t, 4> w = words(i, j >> 2);
      for (int64_t lane = j & 3; lane < 4 && t < n; ++lane, ++t) p[t] = w[lane] >= threshold_ ? p[t] * scale_ : 0.0f;
    }
  }

 private:
  static uint32_t threshold_of(float p) {
    if (!(p > 0.0f)) return 0;  // keep everything
    const double t = static_cast<double>(p) * 4294967296.0;
    return t >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(t);
  }

  uint32_t threshold_;
  float scale_;
  uint32_t k0_, k1_, s0_, s1_;
};

// Whether key j survives dropout for query position i (first_query + row), with probability 1 - p.
inline bool keep(const DropoutArgs& args, int64_t i, int64_t j) { return DropoutMask(args).keep(i, j); }

}  // namespace mha::kernels
