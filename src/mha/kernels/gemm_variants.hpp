// The packed GEMM's variants: instances of one register tile (gemm_tile.hpp) of different shapes,
// broadcasts and depth unrolling, each a function that runs one panel (gemm_panel.hpp). All give
// the same bits; which is fastest depends on the CPU, so kernel_choice.hpp picks one per machine.
#pragma once

#include <cstdint>

namespace mha::kernels {

// What a variant runs on: one panel of the packed weights for one depth block, against a task's
// rows (PackedLinear::apply; the loop itself is gemm_panel.hpp's).
struct GemmPanelJob {
  const float* x;           // x's rows, each from the depth block's first column
  int64_t x_stride;         // floats between x rows (in_features)
  float* y;                 // y's rows, each from the panel's first column
  int64_t y_stride;         // floats between y rows (out_features)
  const float* panel;       // the panel's depth block: [depth][simd::kTileCols]
  const float* bias;        // the bias at the panel's first column (simd::kTileCols floats)
  int64_t cols;             // the panel's columns that exist (<= simd::kTileCols)
  int64_t depth;            // depth steps in this block
  bool first;               // the first depth block: start from the bias, else from y
  int64_t row_begin, row_end;
};

struct GemmVariant {
  // "<rows>x<columns>[-shuffle][-k4]": the tile's rows and columns, columns counted in floats of
  // the 4-lane wasm SIMD build (a panel is 8 wide there; natively a vector is 8 or 16 lanes and the
  // same name covers 2x or 4x the columns), the broadcast (load-splat unless -shuffle) and the
  // depth steps per loop iteration (1 unless -k4).
  const char* name;
  void (*panel)(const GemmPanelJob&);
  int rows;  // the tile's rows
};

// Every variant of this build, in a fixed order (the names are the same in every build).
const GemmVariant* gemm_variants(int* count);
// The variant this build ran before calibration existed: 4x8 (wasm, SSE), 6x8 (AVX2), 8x8 (AVX-512).
const GemmVariant& gemm_default_variant();
// The variant of that name, or null.
const GemmVariant* find_gemm_variant(const char* name);

}  // namespace mha::kernels
