#include "gemm_variants.hpp"

#include <cstring>

#include "gemm_panel.hpp"

namespace mha::kernels {
namespace {

template <int Rows, int Vecs, Broadcast B = Broadcast::kSplat, int Unroll = 1>
constexpr GemmVariant variant(const char* name) {
  return {name, &gemm_panel<GemmTile<Rows, Vecs, B, Unroll>>, Rows};
}

// Rows x 2 vectors from 1 to 8 rows (8 x 2 = 16 accumulators: for 32-register AVX-512; V8 has 16
// vector registers on x86-64 and spills above ~12 live), 8 rows x 1 vector (8 accumulators, one
// panel load per step instead of two), the shuffle broadcast for the shapes near the register
// limit, and four depth steps per iteration.
constexpr GemmVariant kVariants[] = {
    variant<1, 2>("1x8"),
    variant<2, 2>("2x8"),
    variant<3, 2>("3x8"),
    variant<4, 2>("4x8"),
    variant<5, 2>("5x8"),
    variant<6, 2>("6x8"),
    variant<8, 2>("8x8"),
    variant<8, 1>("8x4"),
    variant<3, 2, Broadcast::kShuffle, 4>("3x8-shuffle"),
    variant<4, 2, Broadcast::kShuffle, 4>("4x8-shuffle"),
    variant<5, 2, Broadcast::kShuffle, 4>("5x8-shuffle"),
    variant<8, 1, Broadcast::kShuffle, 4>("8x4-shuffle"),
    variant<4, 2, Broadcast::kSplat, 4>("4x8-k4"),
    variant<5, 2, Broadcast::kSplat, 4>("5x8-k4"),
};

}  // namespace

const GemmVariant* gemm_variants(int* count) {
  *count = static_cast<int>(sizeof kVariants / sizeof kVariants[0]);
  return kVariants;
}

const GemmVariant* find_gemm_variant(const char* name) {
  for (const GemmVariant& v : kVariants)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

const GemmVariant& gemm_default_variant() {
#if defined(__AVX512F__)
  return *find_gemm_variant("8x8");
#elif defined(__AVX2__)
  return *find_gemm_variant("6x8");
#else
  return *find_gemm_variant("4x8");
#endif
}

}  // namespace mha::kernels
