// The vector type the fast kernels are written against: xsimd's native batch<float> when the
// build has a SIMD instruction set (wasm: -msimd128 -msse4.1 maps onto SSE4.1, 4 lanes; native:
// AVX-512 16 lanes or AVX2 8 lanes), and a one-lane scalar stand-in otherwise (the wasm
// "scalar" build), so the same blocked kernels compile everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE4_1__) || defined(__AVX2__) || defined(__AVX512F__) || defined(__ARM_NEON)
#define MHA_KERNELS_XSIMD 1
#include <xsimd/xsimd.hpp>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#else
#define MHA_KERNELS_XSIMD 0
#endif

namespace mha::kernels::simd {

// Adding 1.5 * 2^23 to a float v with |v| < 2^22 rounds it to the nearest integer n (ties to
// even) and leaves n in the sum's low mantissa bits, so 2^n comes from integer adds and a shift
// (exp2_of_biased), with no float -> int conversion: emscripten lowers SSE's _mm_cvttps_epi32,
// which xsimd uses for that, to four scalar lrint calls per vector.
constexpr float kRoundingBias = 12582912.0f;

#if MHA_KERNELS_XSIMD

using Vec = xsimd::batch<float>;
using IntVec = xsimd::batch<int32_t>;
constexpr int kWidth = static_cast<int>(Vec::size);

inline Vec load(const float* p) { return Vec::load_unaligned(p); }
inline void store(float* p, Vec v) { v.store_unaligned(p); }
inline Vec splat(float x) { return Vec(x); }
// a * b + c. The relaxed-SIMD builds (-mrelaxed-simd) use f32x4.relaxed_madd, one fused
// instruction where the CPU has FMA (V8 on x64 with FMA3, arm64), two elsewhere: on a CPU whose
// mul and add share two ports (Intel), that halves the GEMM's and flash attention's work. The
// plain SIMD128 build has no fused op, so xsimd's fma is a mul and an add there.
// Clang 14 knows relaxed SIMD only as its prototype: __builtin_wasm_fma_f32x4 is emitted as the
// prototype's opcode (0xfd 0xaf), which no engine ships. tools/wasm-relaxed-opcodes.mjs renumbers
// it to the standard relaxed_madd (0xfd 0x105), whose operands, in the same order, mean a * b + c.
inline Vec fmadd(Vec a, Vec b, Vec c) {
#if defined(__wasm_relaxed_simd__)
  return Vec(static_cast<__m128>(__builtin_wasm_fma_f32x4(static_cast<__f32x4>(static_cast<__m128>(a)),
                                                          static_cast<__f32x4>(static_cast<__m128>(b)),
                                                          static_cast<__f32x4>(static_cast<__m128>(c)))));
#else
  return xsimd::fma(a, b, c);
#endif
}
// a < b ? b : a: a NaN in b is ignored, one in a is kept. wasm's pmax is that one instruction
// (maxps); xsimd::max reaches wasm through Emscripten's SSE emulation as a compare and a
// bitselect, which made the softmax's exp 0.8 ns per vector slower. SSE's maxps with the
// arguments swapped is the same function.
inline Vec max(Vec a, Vec b) {
#if defined(__wasm_simd128__)
  return Vec(static_cast<__m128>(wasm_f32x4_pmax(static_cast<v128_t>(static_cast<__m128>(a)), static_cast<v128_t>(static_cast<__m128>(b)))));
#else
  return xsimd::max(b, a);
#endif
}
inline Vec abs(Vec a) { return xsimd::abs(a); }
inline Vec copysign(Vec magnitude, Vec sign) { return xsimd::copysign(magnitude, sign); }
inline Vec iota() {  // 0, 1, 2, ... in the lanes
  alignas(64) float lanes[kWidth];
  for (int i = 0; i < kWidth; ++i) lanes[i] = static_cast<float>(i);
  return Vec::load_aligned(lanes);
}
inline float hsum(Vec v) { return xsimd::hadd(v); }
// The sums of kWidth vectors, one per lane: lane r = hsum(rows[r]). One transposing reduction
// for 4 and 8 lanes; xsimd 8.1's AVX-512 haddp returns the sums in another lane order, so 16
// lanes sum row by row.
inline Vec hsum_rows(const Vec* rows) {
  if constexpr (kWidth <= 8) {
    return xsimd::haddp(rows);
  } else {
    alignas(64) float sums[kWidth];
    for (int r = 0; r < kWidth; ++r) sums[r] = xsimd::hadd(rows[r]);
    return Vec::load_aligned(sums);
  }
}
inline float hmax(Vec v) {  // xsimd 8.1 has no reduce_max; NaN lanes are skipped
  alignas(64) float lanes[kWidth];
  v.store_aligned(lanes);
  float m = -INFINITY;
  for (int i = 0; i < kWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}
inline Vec select_lt(Vec a, Vec b, Vec if_less, Vec otherwise) { return xsimd::select(a < b, if_less, otherwise); }
inline Vec select_eq(Vec a, Vec b, Vec if_equal, Vec otherwise) { return xsimd::select(a == b, if_equal, otherwise); }
// 2^n for integral n in [-126, 127], given n + kRoundingBias (see below): the integer sits in
// the sum's low mantissa bits, and the bias's own bits shift out past bit 31.
inline Vec exp2_of_biased(Vec biased) {
  IntVec bits = (xsimd::bitwise_cast<IntVec>(biased) + IntVec(127)) << 23;
  return xsimd::bitwise_cast<Vec>(bits);
}

#else

// One lane: plain floats. Lets the scalar wasm build share the blocked kernels.
struct Vec {
  float x;
  Vec() = default;
  Vec(float v) : x(v) {}  // NOLINT: broadcast, like xsimd::batch
  friend Vec operator+(Vec a, Vec b) { return a.x + b.x; }
  friend Vec operator-(Vec a, Vec b) { return a.x - b.x; }
  friend Vec operator*(Vec a, Vec b) { return a.x * b.x; }
  friend Vec operator/(Vec a, Vec b) { return a.x / b.x; }
  Vec& operator+=(Vec b) { x += b.x; return *this; }
  Vec& operator*=(Vec b) { x *= b.x; return *this; }
};
constexpr int kWidth = 1;

inline Vec load(const float* p) { return *p; }
inline void store(float* p, Vec v) { *p = v.x; }
inline Vec splat(float x) { return x; }
inline Vec fmadd(Vec a, Vec b, Vec c) { return a.x * b.x + c.x; }
inline Vec max(Vec a, Vec b) { return a.x < b.x ? b : a; }
inline Vec abs(Vec a) { return std::fabs(a.x); }
inline Vec copysign(Vec magnitude, Vec sign) { return std::copysign(magnitude.x, sign.x); }
inline Vec iota() { return 0.0f; }
inline float hsum(Vec v) { return v.x; }
inline Vec hsum_rows(const Vec* rows) { return rows[0]; }
inline float hmax(Vec v) { return v.x > -INFINITY ? v.x : -INFINITY; }
inline Vec select_lt(Vec a, Vec b, Vec if_less, Vec otherwise) { return a.x < b.x ? if_less : otherwise; }
inline Vec select_eq(Vec a, Vec b, Vec if_equal, Vec otherwise) { return a.x == b.x ? if_equal : otherwise; }
inline Vec exp2_of_biased(Vec biased) {
  uint32_t bits;
  std::memcpy(&bits, &biased.x, sizeof bits);
  bits = (bits + 127u) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

#endif

// Register tile of the micro-kernels: kRows rows x 2 vectors. V8 has 16 xmm registers, so
// wasm keeps 4x2 accumulators + 2 loads + 1 broadcast = 11 live; AVX-512 has 32 zmm (8x2);
// AVX2 has 16 ymm (6x2).
#if defined(__AVX512F__)
constexpr int kTileRows = 8;
#elif defined(__AVX2__)
constexpr int kTileRows = 6;
#else
constexpr int kTileRows = 4;
#endif
constexpr int kTileCols = 2 * kWidth;

}  // namespace mha::kernels::simd
