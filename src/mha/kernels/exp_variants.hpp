// The softmax exp's variants (fast_exp.hpp's ExpScheme: the same polynomial evaluated in another
// order, so the same error bound, tests/native/fast_exp_test.cpp): the flash forward runs the one
// kernel_choice.hpp picks ("exp"); the other kernels keep fast_exp (Estrin's scheme).
#pragma once

#include <cstdint>

namespace mha::kernels {

// How fast_exp_as (fast_exp.hpp) evaluates 2^f's degree-5 polynomial; which is faster depends on
// how many independent vector operations the CPU overlaps. kEstrin: three dependent steps after
// f^2, one more multiply; kHorner: five dependent multiply-adds, one operation fewer.
enum class ExpScheme { kEstrin, kHorner };

struct ExpVariant {
  const char* name;  // "estrin5", "horner5": the scheme and the polynomial's degree
  ExpScheme scheme;
  // p[j] = exp(s[j] - m) for j < n (n a multiple of the vector width); returns their sum: the
  // softmax's row step, what the calibration times.
  float (*row)(const float* s, float m, float* p, int64_t n);
};

const ExpVariant* exp_variants(int* count);
const ExpVariant& exp_default_variant();  // estrin5, the exp before variants
const ExpVariant* find_exp_variant(const char* name);

}  // namespace mha::kernels
