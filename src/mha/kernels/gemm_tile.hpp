// The packed GEMM's register tile, written once as a template so that its variants (tile shape,
// how x is broadcast, depth unrolling) are instances, not copies. Which instance is fastest depends
// on the CPU the code runs on (how many vector registers the engine keeps, how many loads and
// shuffles a cycle it issues), so gemm_variants.cpp lists several and kernel_choice.hpp picks one
// per machine.
//
// Every instance computes each output the same way: one accumulator per output, k ascending, one
// multiply and one add (or one fused multiply-add natively) per step, starting from the same
// value. So all variants give the same bits, and the choice changes speed only.
#pragma once

#include <cstdint>

#include "simd.hpp"

namespace mha::kernels {

// How a row's x[k] reaches every lane: kSplat loads it broadcast (wasm: v128.load32_splat, one
// load each); kShuffle loads four x values at once and broadcasts each lane by a shuffle (one
// load and four shuffles for four steps). The shuffle form exists for 4-lane vectors (wasm, SSE);
// elsewhere it broadcasts from memory like kSplat.
enum class Broadcast { kSplat, kShuffle };

namespace gemm_detail {

template <int Lane>
inline simd::Vec broadcast_lane(simd::Vec v) {
#if MHA_KERNELS_XSIMD && defined(__wasm_simd128__)
  const v128_t w = static_cast<v128_t>(static_cast<__m128>(v));
  return simd::Vec(static_cast<__m128>(wasm_i32x4_shuffle(w, w, Lane, Lane, Lane, Lane)));
#elif MHA_KERNELS_XSIMD && !defined(__AVX2__) && !defined(__AVX512F__) && !defined(__ARM_NEON)
  const __m128 m = v;
  return simd::Vec(_mm_shuffle_ps(m, m, _MM_SHUFFLE(Lane, Lane, Lane, Lane)));
#else
  (void)v;
  static_assert(Lane >= 0, "unused");
  return simd::Vec(0.0f);  // (not reached: kShuffleWorks is false)
#endif
}

#if MHA_KERNELS_XSIMD && (defined(__wasm_simd128__) || (!defined(__AVX2__) && !defined(__AVX512F__) && !defined(__ARM_NEON)))
constexpr bool kShuffleWorks = simd::kWidth == 4;
#else
constexpr bool kShuffleWorks = false;
#endif

}  // namespace gemm_detail

// acc[Rows][Vecs] (+)= rows[r][0..depth) * panel[0..depth][0..Vecs * kWidth), the panel's depth
// steps simd::kTileCols floats apart (PackedLinear's packing: Vecs == 1 covers half a panel).
// Unroll depth steps per loop iteration (the same order of operations, fewer loop branches).
template <int Rows, int Vecs, Broadcast B, int Unroll>
struct GemmTile {
  static_assert(Vecs == 1 || Vecs == 2, "a panel is two vectors wide");
  static_assert(B == Broadcast::kSplat || Unroll % 4 == 0, "the shuffle broadcast steps four depths at a time");
  static constexpr int kRows = Rows, kVecs = Vecs;
  static constexpr int kStride = simd::kTileCols;
  simd::Vec acc[Rows][Vecs];

  // One depth step: the panel's vectors loaded, then row by row x[r][k] broadcast (`x_of(r)`) and
  // multiplied into the row's accumulators (the order the wasm keeps: at most Vecs loads, one
  // broadcast and the accumulators live).
  template <class XOf>
  inline void step(const float* panel, XOf x_of) {
    simd::Vec b[Vecs];
    for (int v = 0; v < Vecs; ++v) b[v] = simd::load(panel + v * simd::kWidth);
    for (int r = 0; r < Rows; ++r) {
      const simd::Vec a = x_of(r);
      for (int v = 0; v < Vecs; ++v) acc[r][v] = simd::fmadd(a, b[v], acc[r][v]);
    }
  }

  inline void splat_step(const float* const* rows, int64_t k, const float* panel) {
    step(panel, [&](int r) { return simd::splat(rows[r][k]); });
  }

  template <int Lane>
  inline void lane_step(const simd::Vec* x4, const float* panel) {
    step(panel, [&](int r) { return gemm_detail::broadcast_lane<Lane>(x4[r]); });
  }

  void run(const float* const* rows, const float* panel, int64_t depth) {
    int64_t k = 0;
    if constexpr (B == Broadcast::kShuffle && gemm_detail::kShuffleWorks) {
      for (; k + Unroll <= depth; k += Unroll) {
        for (int u = 0; u < Unroll; u += 4) {
          simd::Vec x4[Rows];
          for (int r = 0; r < Rows; ++r) x4[r] = simd::load(rows[r] + k + u);
          const float* p = panel + (k + u) * kStride;
          lane_step<0>(x4, p);
          lane_step<1>(x4, p + kStride);
          lane_step<2>(x4, p + 2 * kStride);
          lane_step<3>(x4, p + 3 * kStride);
        }
      }
    } else {
      // (the panel pointer stepped, not indexed: the old 4x8 kernel's loop, instruction for instruction)
      const float* p = panel;
      for (; k + Unroll <= depth; k += Unroll, p += Unroll * kStride)
        for (int u = 0; u < Unroll; ++u) splat_step(rows, k + u, p + u * kStride);
    }
    for (; k < depth; ++k) splat_step(rows, k, panel + k * kStride);
  }
};

}  // namespace mha::kernels
