// exp(x) on a whole vector for the softmax, whose arguments are s - max(s) <= 0: Cephes' expf
// range reduction and a degree-5 minimax polynomial (< 2 ulp), with exp(x) = 0 below -87.3 (so
// exp(-inf) = 0 without a branch) and NaN kept NaN. Positive x is out of its domain (2^n would
// overflow past x = 88). tests/native/fast_exp_test.cpp checks it against double-precision std::exp.
#pragma once

#include "simd.hpp"

namespace mha::kernels {

inline simd::Vec fast_exp(simd::Vec x) {
  using simd::Vec;
  // x = n ln2 + r, |r| <= ln2 / 2; ln2 split in two parts so n ln2 stays exact. Below `lowest`
  // 2^n would leave the normal range; the final select gives 0 there (and for -inf), so x
  // needs no clamping first.
  const Vec lowest(-87.33654f);
  const Vec biased = simd::fmadd(x, Vec(1.44269504088896341f), Vec(simd::kRoundingBias));
  const Vec n = biased - Vec(simd::kRoundingBias);  // round(x / ln2)
  Vec r = simd::fmadd(n, Vec(-0.693359375f), x);
  r = simd::fmadd(n, Vec(2.12194440e-4f), r);
  // exp(r) = 1 + r + r^2 q(r): q of degree 3, a minimax fit for relative error on |r| <= ln2/2
  // (1.05e-7 in exact arithmetic; tools/fit_exp_polynomial.mjs).
  Vec q(8.31249449e-3f);
  q = simd::fmadd(q, r, Vec(4.18901145e-2f));
  q = simd::fmadd(q, r, Vec(1.66671142e-1f));
  q = simd::fmadd(q, r, Vec(4.99992311e-1f));
  const Vec p = simd::fmadd(q, r * r, r + Vec(1.0f));
  const Vec result = p * simd::exp2_of_biased(biased);
  return simd::select_lt(x, lowest, Vec(0.0f), result);
}

}  // namespace mha::kernels
