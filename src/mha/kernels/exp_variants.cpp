#include "exp_variants.hpp"

#include <cstring>

#include "fast_exp.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

// The flash forward's loop (attention_flash.cpp, tile()): exp, store, sum.
template <ExpScheme Scheme>
float exp_row(const float* s, float m, float* p, int64_t n) {
  simd::Vec sum(0.0f);
  const simd::Vec vm(m);
  for (int64_t j = 0; j < n; j += simd::kWidth) {
    const simd::Vec e = fast_exp_as<Scheme>(simd::load(s + j) - vm);
    simd::store(p + j, e);
    sum += e;
  }
  return simd::hsum(sum);
}

constexpr ExpVariant kVariants[] = {
    {"estrin5", ExpScheme::kEstrin, &exp_row<ExpScheme::kEstrin>},
    {"horner5", ExpScheme::kHorner, &exp_row<ExpScheme::kHorner>},
};

}  // namespace

const ExpVariant* exp_variants(int* count) {
  *count = static_cast<int>(sizeof kVariants / sizeof kVariants[0]);
  return kVariants;
}

const ExpVariant& exp_default_variant() { return kVariants[0]; }

const ExpVariant* find_exp_variant(const char* name) {
  for (const ExpVariant& v : kVariants)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

}  // namespace mha::kernels
