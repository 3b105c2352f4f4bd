// The fast decode GEMV on quantized panels (quantized_gemv.hpp states the arithmetic,
// quantized_panels.hpp the layout). Per panel of P = 2W columns, two i32 accumulators of W lanes
// (columns 0..W-1 and W..2W-1) take pair dot products of the codes with a broadcast pair of the
// int16 activation row; each run (int8) or block (q4) then goes to two float accumulators.
//
// Operations per weight, wasm SIMD128 (W = 4), against f32's load + mul + add per 4 weights (0.75):
//   int8: per 16 weights (a depth pair of a panel) 2 load8x8_s + 2 dot + 2 add + 1 splat: 0.44
//   q4:   per 32 weights (a group) 1 load + 7 mask/shift + 4 dot + 4 add + 2 splats: 0.56
//   (widening int8 to f32 instead: extend, convert, mul, add per 4 weights and a horizontal sum
//   of the depth pairs: 1.1 per weight, 2.5x the integer path's count, so the integer path it is)
//   f16:  per 8 weights 1 load, 2 unpack, 2 shift, 2 and, 2 mul (the exponent), 2 mul + 2 add: 1.6
// so int8 and q4 are bound by these operations rather than by the bytes they read (a quarter
// and under a sixth of f32's); `npm run bench:kernels` shows the rates.
#include "quantized_gemv.hpp"

#include <algorithm>
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

namespace mha::kernels {

#if MHA_QGEMV
namespace {

constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;

// The few integer and float operations the kernels need, per instruction set: I holds W int32
// (or 2W int16) lanes, F W floats.
#if defined(__wasm_simd128__)
static_assert(kW == 4, "wasm: 4 lanes");
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
static_assert(kW == 16, "AVX-512: 16 lanes");
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
inline void widen_f16(const uint8_t* p, F& lo, F& hi) {
  lo = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kW)));
}
#else  // AVX2
static_assert(kW == 8, "AVX2: 8 lanes");
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
inline void widen_f16(const uint8_t* p, F& lo, F& hi) {
  lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * kW)));
}
#endif

// y's columns of panel p from the two float accumulators (a partial last panel through a buffer).
inline void store_panel(const QuantizedPanels& w, int64_t p, F lo, F hi, const float* bias, float* y) {
  if (bias) {
    lo = fadd(lo, fload(bias + p * kP));
    hi = fadd(hi, fload(bias + p * kP + kW));
  }
  const int64_t col0 = p * kP, cols = std::min<int64_t>(kP, w.out_features() - col0);
  if (cols == kP) {
    fstore(y + col0, lo);
    fstore(y + col0 + kW, hi);
    return;
  }
  alignas(64) float out[kP];
  fstore(out, lo);
  fstore(out + kW, hi);
  std::copy(out, out + cols, y + col0);
}

// int8: runs of 256 depths (128 pairs) summed in int32, then added as floats.
void gemv_int8(const QuantizedPanels& w, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
  const int64_t pairs = (w.in_features() + 1) / 2;
  const uint8_t* codes = w.codes(p);
  const int16_t* xq = row.q.data();
  F lo = fzero(), hi = fzero();
  for (int64_t u0 = 0; u0 < pairs; u0 += kInt8RunDepth / 2) {
    const int64_t u1 = std::min(pairs, u0 + kInt8RunDepth / 2);
    I a0 = izero(), a1 = izero(), b0 = izero(), b1 = izero();
    int64_t u = u0;
    for (; u + 2 <= u1; u += 2) {  // two pairs per step: four independent chains
      const uint8_t* c = codes + u * 2 * kP;
      const I x0 = pair(xq + 2 * u), x1 = pair(xq + 2 * u + 2);
      a0 = iadd(a0, dot(widen_i8(c), x0));
      a1 = iadd(a1, dot(widen_i8(c + 2 * kW), x0));
      b0 = iadd(b0, dot(widen_i8(c + 2 * kP), x1));
      b1 = iadd(b1, dot(widen_i8(c + 2 * kP + 2 * kW), x1));
    }
    for (; u < u1; ++u) {
      const uint8_t* c = codes + u * 2 * kP;
      const I x0 = pair(xq + 2 * u);
      a0 = iadd(a0, dot(widen_i8(c), x0));
      a1 = iadd(a1, dot(widen_i8(c + 2 * kW), x0));
    }
    lo = fadd(lo, to_float(iadd(a0, b0)));
    hi = fadd(hi, to_float(iadd(a1, b1)));
  }
  const float* scales = w.scales(p);
  const F dx = fsplat(row.scale);
  store_panel(w, p, fmul(fmul(lo, fload(scales)), dx), fmul(fmul(hi, fload(scales + kW)), dx), bias, y);
}

// q4: per block of 32 depths, 8 groups of 4 depths x P columns (2P bytes, read as int16 lanes
// holding four nibbles each: quantized_panels.hpp).
template <bool kZeroPoints>
void gemv_q4(const QuantizedPanels& w, const QuantizedRow& row, const float* bias, float* y, int64_t p) {
  const uint8_t* codes = w.codes(p);
  const float* scales = w.scales(p);
  const int16_t* xq = row.q.data();
  F lo = fzero(), hi = fzero();
  for (int64_t b = 0; b < w.blocks(); ++b, codes += 8 * 2 * kP) {
    I a0 = izero(), a1 = izero();
    const int16_t* x = xq + b * kQ4Block;
    for (int g = 0; g < 8; ++g) {
      const I v = iload(codes + g * 2 * kP);
      const I x01 = pair(x + 4 * g), x23 = pair(x + 4 * g + 2);
      a0 = iadd(a0, iadd(dot(mask16(v, 0x000f), x01), dot(mask16(shr16(v, 4), 0x000f), x23)));
      a1 = iadd(a1, iadd(dot(mask16(shr16(v, 8), 0x000f), x01), dot(shr16(v, 12), x23)));
    }
    if constexpr (kZeroPoints) {
      const I sums = isplat(row.sums[b]);
      const int32_t* zp = w.zero_points(p) + b * kP;
      a0 = isub(a0, imul(iload(zp), sums));
      a1 = isub(a1, imul(iload(zp + kW), sums));
    } else {
      const I correction = isplat(8 * row.sums[b]);
      a0 = isub(a0, correction);
      a1 = isub(a1, correction);
    }
    lo = fadd(lo, fmul(to_float(a0), fload(scales + b * kP)));
    hi = fadd(hi, fmul(to_float(a1), fload(scales + b * kP + kW)));
  }
  const F dx = fsplat(row.scale);
  store_panel(w, p, fmul(lo, dx), fmul(hi, dx), bias, y);
}

// f16: the weights widened to floats in registers, two depth steps per iteration (four chains).
void gemv_f16(const QuantizedPanels& w, const float* x, const float* bias, float* y, int64_t p) {
  const int64_t in = w.in_features();
  const uint8_t* codes = w.codes(p);
  F a0 = fzero(), a1 = fzero(), b0 = fzero(), b1 = fzero();
  int64_t k = 0;
  for (; k + 2 <= in; k += 2) {
    F w0, w1, v0, v1;
    widen_f16(codes + k * 2 * kP, w0, w1);
    widen_f16(codes + (k + 1) * 2 * kP, v0, v1);
    const F x0 = fsplat(x[k]), x1 = fsplat(x[k + 1]);
    a0 = fadd(a0, fmul(w0, x0));
    a1 = fadd(a1, fmul(w1, x0));
    b0 = fadd(b0, fmul(v0, x1));
    b1 = fadd(b1, fmul(v1, x1));
  }
  for (; k < in; ++k) {
    F w0, w1;
    widen_f16(codes + k * 2 * kP, w0, w1);
    const F x0 = fsplat(x[k]);
    a0 = fadd(a0, fmul(w0, x0));
    a1 = fadd(a1, fmul(w1, x0));
  }
  store_panel(w, p, fadd(a0, b0), fadd(a1, b1), bias, y);
}

}  // namespace

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  // The float path of the twin: rows with Inf/NaN, and f16 panels holding Inf/NaN (wasm's widening
  // above covers finite halves only).
  if ((w.dtype() != WeightDtype::kF16 && !row.finite) || (w.dtype() == WeightDtype::kF16 && w.has_nonfinite())) {
    quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
    return;
  }
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    switch (w.dtype()) {
      case WeightDtype::kInt8: gemv_int8(w, row, bias, y, p); break;
      case WeightDtype::kQ4:
        if (w.has_zero_points()) gemv_q4<true>(w, row, bias, y, p);
        else gemv_q4<false>(w, row, bias, y, p);
        break;
      default: gemv_f16(w, x, bias, y, p); break;
    }
  }
}

#else  // no SIMD (the scalar wasm build): the twin is the kernel

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
}

#endif

}  // namespace mha::kernels
