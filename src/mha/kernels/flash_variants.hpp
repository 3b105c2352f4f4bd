// The flash-attention kernel's variants (attention_flash.cpp: one template, FlashAttention<Shape>):
// register tiles of different query rows, keys per tile, broadcasts and loop unrolling, each run
// with the exp scheme given (exp_variants.hpp). Which is fastest depends on the CPU, so
// kernel_choice.hpp picks one per machine; attention_head_flash runs it.
#pragma once

#include "attention_kernel.hpp"
#include "exp_variants.hpp"

namespace mha::kernels {

struct FlashVariant {
  // "<rows>x<keys>[-shuffle][-k4]": query rows of the register tile, keys per tile, the broadcast
  // (load-splat unless -shuffle: one load of four q or p values and lane shuffles, 4-lane builds
  // only) and four depth steps / keys per loop iteration (-k4). The names are the same in every
  // build; the tile is rows x 2 vectors of the build.
  const char* name;
  void (*run)(const AttentionHeadArgs&, ExpScheme exp);
  int rows;
  int key_tile;
};

// Every variant of this build, in a fixed order.
const FlashVariant* flash_variants(int* count);
// The kernel before variants existed: 4x128 (wasm, SSE), 6x128 (AVX2), 8x128 (AVX-512).
const FlashVariant& flash_default_variant();
// The variant of that name, or null.
const FlashVariant* find_flash_variant(const char* name);

}  // namespace mha::kernels
