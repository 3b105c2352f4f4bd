// exp(x) on a whole vector for the softmax, whose arguments are s - max(s) <= 0, as 2^t with
// t = x log2(e): 2^t = 2^n 2^f, n = round(t), |f| <= 1/2, 2^f from a degree-5 minimax polynomial
// (relative error 9.1e-8 in exact arithmetic; tools/fit_exp_polynomial.mjs), 2^n from the bits of
// t + 1.5 * 2^23. t is clamped at -127, where 2^n's bits are 0: exp(x) = 0 below x = -87.7
// (-inf included) with no compare and select, and NaN stays NaN (simd::max keeps a NaN in its
// first argument). Positive x is out of its domain (2^n would overflow past x = 88).
//
// Error (tests/native/fast_exp_test.cpp, against double-precision std::exp): < 3 ulp relative on
// [-1, 0]; rounding t = x log2(e) adds |x| * 6e-8 relative below, so the absolute error stays
// under 2 ulp of 1 (2.4e-7) over the whole range: what matters for probabilities summed against
// the row maximum's exp(0) = 1.
// Speed (wasm, one thread, exp of a 128-float row: 3.3 -> 2.5 ns per 4 lanes; one attention head
// L = S = 2048 in `npm run bench:kernels`: see attention_flash.cpp): the former version reduced x
// by n ln2 in two steps, evaluated Horner's rule and selected 0 below -87.3 (a compare and a
// bitselect in wasm); this one has fewer dependent steps (Estrin's scheme) and a one-instruction
// clamp.
#pragma once

#include "exp_variants.hpp"
#include "simd.hpp"

namespace mha::kernels {

// fast_exp_as<Scheme>: 2^f's polynomial evaluated by ExpScheme (exp_variants.hpp), the same
// coefficients, so the same error bound.
template <ExpScheme Scheme>
inline simd::Vec fast_exp_as(simd::Vec x) {
  using simd::Vec;
  const Vec t = simd::max(x * Vec(1.44269504088896341f), Vec(-127.0f));
  const Vec biased = t + Vec(simd::kRoundingBias);
  const Vec f = t - (biased - Vec(simd::kRoundingBias));  // t - round(t)
  Vec p;
  if constexpr (Scheme == ExpScheme::kEstrin) {
    // 2^f = 1 + c1 f + c2 f^2 + c3 f^3 + c4 f^4 + c5 f^5 = (1 + c1 f) + f^2 ((c2 + c3 f) + f^2 (c4 + c5 f))
    const Vec f2 = f * f;
    const Vec low = simd::fmadd(Vec(6.93147004e-1f), f, Vec(1.0f));
    const Vec mid = simd::fmadd(Vec(5.55073395e-2f), f, Vec(2.40222424e-1f));
    const Vec high = simd::fmadd(Vec(1.32646656e-3f), f, Vec(9.67151299e-3f));
    p = simd::fmadd(f2, simd::fmadd(f2, high, mid), low);
  } else {
    // 1 + f (c1 + f (c2 + f (c3 + f (c4 + f c5))))
    p = simd::fmadd(Vec(1.32646656e-3f), f, Vec(9.67151299e-3f));
    p = simd::fmadd(p, f, Vec(5.55073395e-2f));
    p = simd::fmadd(p, f, Vec(2.40222424e-1f));
    p = simd::fmadd(p, f, Vec(6.93147004e-1f));
    p = simd::fmadd(p, f, Vec(1.0f));
  }
  return p * simd::exp2_of_biased(biased);
}

// The exp every kernel calls outside the flash forward's softmax (which runs the chosen scheme).
inline simd::Vec fast_exp(simd::Vec x) { return fast_exp_as<ExpScheme::kEstrin>(x); }

}  // namespace mha::kernels
