// A strided transpose, dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols:
// how the flash kernel packs a head's keys (panels of kCols keys by depth) and a block's queries
// (micro-tiles of kRows rows by depth), and how linear_backward forms d_y^T. Scalar, each float is
// a load and a store; in 4x4 blocks, four row loads, one register transpose (shuffles) and four
// column stores move 16 floats, a quarter of the memory accesses. With 8x64x256x4's 64-row heads,
// the scalar packing was about a sixth of their attention's time (a --profiling-funcs build,
// node --cpu-prof, 2026-12-03).
//
// transpose_reference states the function; transpose is it in 4x4 blocks where there are 4-lane
// vectors (wasm, whose -msse4.1 maps onto SIMD128, and every x86-64), the reference for the rest.
// A transpose only moves floats, so the two agree bit for bit (tests/native/kernels_test.cpp).
#pragma once

#include <cstdint>

#if defined(__wasm_simd128__) || defined(__SSE2__)
#include <xmmintrin.h>
#define MHA_TRANSPOSE_4X4 1
#else
#define MHA_TRANSPOSE_4X4 0
#endif

namespace mha::kernels {

inline void transpose_reference(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
                                int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

inline void transpose(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
                      int64_t cols) {
  int64_t r = 0;
#if MHA_TRANSPOSE_4X4
  for (; r + 4 <= rows; r += 4) {
    const float* s = src + r * src_stride;
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a0 = _mm_loadu_ps(s + c), a1 = _mm_loadu_ps(s + src_stride + c);
      __m128 a2 = _mm_loadu_ps(s + 2 * src_stride + c), a3 = _mm_loadu_ps(s + 3 * src_stride + c);
      _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
      float* d = dst + c * dst_stride + r;
      _mm_storeu_ps(d, a0);
      _mm_storeu_ps(d + dst_stride, a1);
      _mm_storeu_ps(d + 2 * dst_stride, a2);
      _mm_storeu_ps(d + 3 * dst_stride, a3);
    }
    transpose_reference(s + c, src_stride, dst + c * dst_stride + r, dst_stride, 4, cols - c);
  }
#endif
  transpose_reference(src + r * src_stride, src_stride, dst + r, dst_stride, rows - r, cols);
}

}  // namespace mha::kernels
