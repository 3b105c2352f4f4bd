// The few integer and float vector operations the quantized kernels (quantized_gemv.cpp,
// quantized_panels.cpp's dequantization) are written with, per instruction set: I holds W int32
// (or 2W int16) lanes, F holds W floats, W = simd::kWidth. MHA_QGEMV is 0 where there is no SIMD
// (the scalar wasm build): the kernels' reference twins run there.
#pragma once

#include <cstdint>
#include <cstring>

#include "simd.hpp"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#define MHA_QGEMV 1
#elif defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#define MHA_QGEMV 1
#else
#define MHA_QGEMV 0
#endif

#if MHA_QGEMV
namespace mha::kernels::qsimd {


#if defined(__wasm_simd128__)
static_assert(simd::kWidth == 4, "wasm: 4 lanes");
using I = v128_t;
using F = v128_t;
inline I izero() { return wasm_i32x4_splat(0); }
inline I iadd(I a, I b) { return wasm_i32x4_add(a, b); }
inline I isub(I a, I b) { return wasm_i32x4_sub(a, b); }
inline I imul(I a, I b) { return wasm_i32x4_mul(a, b); }
inline I isplat(int32_t v) { return wasm_i32x4_splat(v); }
inline I iload(const void* p) { return wasm_v128_load(p); }
inline I pair(const int16_t* x) { return wasm_v128_load32_splat(x); }
inline I dot(I a, I b) { return wasm_i32x4_dot_i16x8(a, b); }
inline I widen_i8(const uint8_t* p) { return wasm_i16x8_load8x8(p); }  // 2W bytes -> 2W int16
inline I mask16(I v, int m) { return wasm_v128_and(v, wasm_i16x8_splat(static_cast<int16_t>(m))); }
inline I shr16(I v, int n) { return wasm_u16x8_shr(v, n); }
inline F fzero() { return wasm_f32x4_splat(0.0f); }
inline F fsplat(float v) { return wasm_f32x4_splat(v); }
inline F fload(const float* p) { return wasm_v128_load(p); }
inline void fstore(float* p, F v) { wasm_v128_store(p, v); }
inline F fadd(F a, F b) { return wasm_f32x4_add(a, b); }
inline F fmul(F a, F b) { return wasm_f32x4_mul(a, b); }
inline F to_float(I v) { return wasm_f32x4_convert_i32x4(v); }
inline I iand(I a, I b) { return wasm_v128_and(a, b); }
inline I sra32(I v, int n) { return wasm_i32x4_shr(v, n); }
inline I srl32(I v, int n) { return wasm_u32x4_shr(v, n); }
inline I sll32(I v, int n) { return wasm_i32x4_shl(v, n); }
inline F as_float(I v) { return v; }
// Lanes 0..W-1 of the columns from their even (e) and odd (o) columns: lo = e0 o0 e1 o1, hi = e2 o2 e3 o3.
inline void interleave(F e, F o, F& lo, F& hi) {
  lo = wasm_i32x4_shuffle(e, o, 0, 4, 1, 5);
  hi = wasm_i32x4_shuffle(e, o, 2, 6, 3, 7);
}
// Halves [0, W) and [W, 2W) of 2W binary16 values (p) as floats, Inf/NaN-free panels only: the
// half in the top 16 bits, an arithmetic shift by 3 puts exponent and mantissa where a float
// has them (the sign smeared over bits 28..31, masked off), and 2^112 rebiases the exponent
// (exactly, subnormal halves included).
inline void widen_f16(const uint8_t* p, F& lo, F& hi) {
  const v128_t h = wasm_v128_load(p), z = wasm_i32x4_splat(0);
  const v128_t mask = wasm_i32x4_splat(static_cast<int32_t>(0x8fffe000u)), rebias = wasm_f32x4_splat(0x1p112f);
  lo = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(wasm_i16x8_shuffle(z, h, 0, 8, 1, 9, 2, 10, 3, 11), 3), mask), rebias);
  hi = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(wasm_i16x8_shuffle(z, h, 4, 12, 5, 13, 6, 14, 7, 15), 3), mask), rebias);
}
#elif defined(__AVX512BW__)
static_assert(simd::kWidth == 16, "AVX-512: 16 lanes");
using I = __m512i;
using F = __m512;
inline I izero() { return _mm512_setzero_si512(); }
inline I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
inline I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
inline I imul(I a, I b) { return _mm512_mullo_epi32(a, b); }
inline I isplat(int32_t v) { return _mm512_set1_epi32(v); }
inline I iload(const void* p) { return _mm512_loadu_si512(p); }
inline I pair(const int16_t* x) {
  int32_t v;
  std::memcpy(&v, x, sizeof v);
  return _mm512_set1_epi32(v);
}
inline I dot(I a, I b) { return _mm512_madd_epi16(a, b); }
inline I widen_i8(const uint8_t* p) { return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline I mask16(I v, int m) { return _mm512_and_si512(v, _mm512_set1_epi16(static_cast<int16_t>(m))); }
inline I shr16(I v, int n) { return _mm512_srli_epi16(v, static_cast<unsigned>(n)); }
inline F fzero() { return _mm512_setzero_ps(); }
inline F fsplat(float v) { return _mm512_set1_ps(v); }
inline F fload(const float* p) { return _mm512_loadu_ps(p); }
inline void fstore(float* p, F v) { _mm512_storeu_ps(p, v); }
inline F fadd(F a, F b) { return _mm512_add_ps(a, b); }
inline F fmul(F a, F b) { return _mm512_mul_ps(a, b); }
inline F to_float(I v) { return _mm512_cvtepi32_ps(v); }
inline I iand(I a, I b) { return _mm512_and_si512(a, b); }
inline I sra32(I v, int n) { return _mm512_srai_epi32(v, static_cast<unsigned>(n)); }
inline I srl32(I v, int n) { return _mm512_srli_epi32(v, static_cast<unsigned>(n)); }
inline I sll32(I v, int n) { return _mm512_slli_epi32(v, static_cast<unsigned>(n)); }
inline F as_float(I v) { return _mm512_castsi512_ps(v); }
inline void interleave(F e, F o, F& lo, F& hi) {
  lo = _mm512_permutex2var_ps(e, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), o);
  hi = _mm512_permutex2var_ps(e, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), o);
}
inline void widen_f16(const uint8_t* p, F& lo, F& hi) {
  lo = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * simd::kWidth)));
}
#else  // AVX2
static_assert(simd::kWidth == 8, "AVX2: 8 lanes");
using I = __m256i;
using F = __m256;
inline I izero() { return _mm256_setzero_si256(); }
inline I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
inline I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
inline I imul(I a, I b) { return _mm256_mullo_epi32(a, b); }
inline I isplat(int32_t v) { return _mm256_set1_epi32(v); }
inline I iload(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline I pair(const int16_t* x) {
  int32_t v;
  std::memcpy(&v, x, sizeof v);
  return _mm256_set1_epi32(v);
}
inline I dot(I a, I b) { return _mm256_madd_epi16(a, b); }
inline I widen_i8(const uint8_t* p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline I mask16(I v, int m) { return _mm256_and_si256(v, _mm256_set1_epi16(static_cast<int16_t>(m))); }
inline I shr16(I v, int n) { return _mm256_srli_epi16(v, n); }
inline F fzero() { return _mm256_setzero_ps(); }
inline F fsplat(float v) { return _mm256_set1_ps(v); }
inline F fload(const float* p) { return _mm256_loadu_ps(p); }
inline void fstore(float* p, F v) { _mm256_storeu_ps(p, v); }
inline F fadd(F a, F b) { return _mm256_add_ps(a, b); }
inline F fmul(F a, F b) { return _mm256_mul_ps(a, b); }
inline F to_float(I v) { return _mm256_cvtepi32_ps(v); }
inline I iand(I a, I b) { return _mm256_and_si256(a, b); }
inline I sra32(I v, int n) { return _mm256_srai_epi32(v, n); }
inline I srl32(I v, int n) { return _mm256_srli_epi32(v, n); }
inline I sll32(I v, int n) { return _mm256_slli_epi32(v, n); }
inline F as_float(I v) { return _mm256_castsi256_ps(v); }
inline void interleave(F e, F o, F& lo, F& hi) {  // (unpack works within 128-bit halves)
  const F a = _mm256_unpacklo_ps(e, o), b = _mm256_unpackhi_ps(e, o);
  lo = _mm256_permute2f128_ps(a, b, 0x20);
  hi = _mm256_permute2f128_ps(a, b, 0x31);
}
inline void widen_f16(const uint8_t* p, F& lo, F& hi) {
  lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * simd::kWidth)));
}
#endif


}  // namespace mha::kernels::qsimd
#endif
