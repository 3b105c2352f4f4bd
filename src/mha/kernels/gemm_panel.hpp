// One panel of the packed GEMM for one depth block, every row of a task in register tiles
// (gemm_tile.hpp): the loop PackedLinear::apply runs for each panel, written once for every tile
// shape. Partial tiles (the last rows, the last columns) go through a small buffer.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm_tile.hpp"
#include "gemm_variants.hpp"
#include "simd.hpp"

namespace mha::kernels {

template <class Tile>
void gemm_panel(const GemmPanelJob& j) {
  constexpr int kRows = Tile::kRows, kVecs = Tile::kVecs, kW = simd::kWidth;
  constexpr int kPartCols = kVecs * kW, kParts = simd::kTileCols / kPartCols;
  for (int part = 0; part < kParts; ++part) {
    const int64_t c0 = part * kPartCols, cols = std::min<int64_t>(kPartCols, j.cols - c0);
    if (cols <= 0) break;
    for (int64_t r0 = j.row_begin; r0 < j.row_end; r0 += kRows) {
      const int64_t rows = std::min<int64_t>(kRows, j.row_end - r0);
      const float* row_ptr[kRows];
      for (int r = 0; r < kRows; ++r) row_ptr[r] = j.x + (r0 + std::min<int64_t>(r, rows - 1)) * j.x_stride;
      Tile t;
      const bool full = rows == kRows && cols == kPartCols;
      alignas(64) float edge[kRows][kPartCols];  // partial tiles go through this buffer
      for (int r = 0; r < kRows; ++r) {
        float* yr = j.y + (r0 + r) * j.y_stride + c0;
        for (int v = 0; v < kVecs; ++v) {
          if (j.first) {
            t.acc[r][v] = simd::load(j.bias + c0 + v * kW);
          } else if (full) {
            t.acc[r][v] = simd::load(yr + v * kW);
          } else {
            for (int c = v * kW; c < (v + 1) * kW; ++c) edge[r][c] = (r < rows && c < cols) ? yr[c] : 0.0f;
            t.acc[r][v] = simd::load(edge[r] + v * kW);
          }
        }
      }
      t.run(row_ptr, j.panel + c0, j.depth);
      for (int r = 0; r < kRows; ++r) {
        float* yr = j.y + (r0 + r) * j.y_stride + c0;
        if (full) {
          for (int v = 0; v < kVecs; ++v) simd::store(yr + v * kW, t.acc[r][v]);
        } else {
          for (int v = 0; v < kVecs; ++v) simd::store(edge[r] + v * kW, t.acc[r][v]);
          if (r < rows) std::copy(edge[r], edge[r] + cols, yr);
        }
      }
    }
  }
}

}  // namespace mha::kernels
