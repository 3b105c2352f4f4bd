// exp(x) on a whole vector for the softmax: Cephes' expf range reduction and degree-6
// polynomial (about 2 ulp) for x <= 88, with exp(x) = 0 below -87.3 so exp(-inf) = 0 without a branch.
// tests/native/fast_exp_test.cpp checks it against double-precision std::exp.
#pragma once

#include "simd.hpp"

namespace mha::kernels {

inline simd::Vec fast_exp(simd::Vec x) {
  using simd::Vec;
  // Below `lowest` the result would be subnormal; above `highest`, 2^n would overflow.
  const Vec lowest(-87.33654f), highest(88.0f);
  Vec v = simd::max(lowest, x);  // max returns its second operand for NaN: NaN stays NaN
  v = simd::select_lt(highest, v, highest, v);  // min(v, highest)
  // x = n ln2 + r, |r| <= ln2 / 2; ln2 split in two parts so n ln2 stays exact.
  const Vec biased = simd::fmadd(v, Vec(1.44269504088896341f), Vec(simd::kRoundingBias));
  const Vec n = biased - Vec(simd::kRoundingBias);  // round(v / ln2)
  Vec r = simd::fmadd(n, Vec(-0.693359375f), v);
  r = simd::fmadd(n, Vec(2.12194440e-4f), r);
  Vec p(1.9875691500e-4f);
  p = simd::fmadd(p, r, Vec(1.3981999507e-3f));
  p = simd::fmadd(p, r, Vec(8.3334519073e-3f));
  p = simd::fmadd(p, r, Vec(4.1665795894e-2f));
  p = simd::fmadd(p, r, Vec(1.6666665459e-1f));
  p = simd::fmadd(p, r, Vec(5.0000001201e-1f));
  p = simd::fmadd(p, r * r, r + Vec(1.0f));
  const Vec result = p * simd::exp2_of_biased(biased);
  return simd::select_lt(x, lowest, Vec(0.0f), result);
}

}  // namespace mha::kernels
