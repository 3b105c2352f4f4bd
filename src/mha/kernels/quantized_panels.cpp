#include "quantized_panels.hpp"

#include <algorithm>

#include "quantized_simd.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

constexpr int64_t kP = simd::kTileCols, kW = simd::kWidth;
constexpr int64_t kGroups = kQ4Block / 4;  // q4 groups of 4 depths per block

// Where column c (0..P-1), depth offset t (0..3) of a q4 group sits: byte, and high nibble or not.
inline int64_t q4_byte(int64_t c, int64_t t) { return 4 * (c % kW) + 2 * (t % 2) + c / kW; }
inline bool q4_high(int64_t t) { return t >= 2; }

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

uint16_t half_at(const uint8_t* bytes, int64_t index) {
  return static_cast<uint16_t>(bytes[2 * index] | (bytes[2 * index + 1] << 8));
}

}  // namespace

QuantizedPanels::QuantizedPanels(const QuantizedMatrix& m)
    : dtype_(m.dtype), out_(m.out_features), in_(m.in_features), panels_(round_up(m.out_features, kP) / kP),
      blocks_(m.dtype == WeightDtype::kQ4 ? q4_blocks(m.in_features) : 0) {
  const int64_t in = in_;
  if (dtype_ == WeightDtype::kInt8) {
    panel_bytes_ = round_up(in, 2) * kP;
    panel_scales_ = kP;
    codes_.assign(static_cast<size_t>(panels_ * panel_bytes_), 0);
    scales_.assign(static_cast<size_t>(panels_ * panel_scales_), 0.0f);
    for (int64_t o = 0; o < out_; ++o) {
      const int64_t p = o / kP, c = o % kP;
      uint8_t* panel = codes_.data() + p * panel_bytes_;
      for (int64_t i = 0; i < in; ++i) panel[(i / 2) * 2 * kP + 2 * c + i % 2] = m.data[o * in + i];
      scales_[p * kP + c] = m.scales[o];
    }
  } else if (dtype_ == WeightDtype::kQ4) {
    const int64_t blocks = blocks_, row_bytes = blocks * kQ4Block / 2;
    panel_bytes_ = blocks * kGroups * 2 * kP;
    panel_scales_ = blocks * kP;
    codes_.assign(static_cast<size_t>(panels_ * panel_bytes_), 0);
    scales_.assign(static_cast<size_t>(panels_ * panel_scales_), 0.0f);
    if (!m.zero_points.empty()) zero_points_.assign(static_cast<size_t>(panels_ * panel_scales_), 0);
    for (int64_t o = 0; o < out_; ++o) {
      const int64_t p = o / kP, c = o % kP;
      uint8_t* panel = codes_.data() + p * panel_bytes_;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < kQ4Block; ++j) {
          const uint8_t byte = m.data[o * row_bytes + b * kQ4Block / 2 + j / 2];
          const uint8_t q = j % 2 == 0 ? byte & 0x0f : byte >> 4;
          const int64_t g = j / 4, t = j % 4;
          panel[(b * kGroups + g) * 2 * kP + q4_byte(c, t)] |= static_cast<uint8_t>(q4_high(t) ? q << 4 : q);
        }
        scales_[p * panel_scales_ + b * kP + c] = m.scales[o * blocks + b];
        if (!zero_points_.empty()) zero_points_[p * panel_scales_ + b * kP + c] = m.zero_point(o, b);
      }
    }
  } else {  // f16
    panel_bytes_ = in * kP * 2;
    codes_.assign(static_cast<size_t>(panels_ * panel_bytes_), 0);
    for (int64_t o = 0; o < out_; ++o) {
      uint8_t* panel = codes_.data() + (o / kP) * panel_bytes_;
      for (int64_t i = 0; i < in; ++i) {
        if ((m.data[2 * (o * in + i) + 1] & 0x7c) == 0x7c) nonfinite_ = true;
        panel[2 * (i * kP + o % kP)] = m.data[2 * (o * in + i)];
        panel[2 * (i * kP + o % kP) + 1] = m.data[2 * (o * in + i) + 1];
      }
    }
  }
}

uint64_t QuantizedPanels::bytes() const {
  return codes_.size() + scales_.size() * sizeof(float) + zero_points_.size() * sizeof(int32_t);
}

// The portable dequantization (the reference dequantize_slice must equal bit for bit: each
// value is one product of two floats, or a conversion).
void QuantizedPanels::dequantize_slice_reference(int64_t p, int64_t k0, int64_t depth, float* out) const {
  const uint8_t* panel = codes(p);
  const float* scale = scales(p);
  for (int64_t k = 0; k < depth; ++k) {
    const int64_t i = k0 + k;
    for (int64_t c = 0; c < kP; ++c) {
      float w;
      if (dtype_ == WeightDtype::kInt8) {
        w = static_cast<float>(static_cast<int8_t>(panel[(i / 2) * 2 * kP + 2 * c + i % 2])) * scale[c];
      } else if (dtype_ == WeightDtype::kQ4) {
        const int64_t b = i / kQ4Block, g = i % kQ4Block / 4, t = i % 4;
        const uint8_t byte = panel[(b * kGroups + g) * 2 * kP + q4_byte(c, t)];
        const int q = q4_high(t) ? byte >> 4 : byte & 0x0f;
        const int zp = zero_points_.empty() ? 8 : zero_points(p)[b * kP + c];
        w = static_cast<float>(q - zp) * scale[b * kP + c];
      } else {
        w = half_to_float(half_at(panel, i * kP + c));
      }
      out[k * kP + c] = w;
    }
  }
}

// The GEMM's per-call dequantization of a panel slice (packed_linear.cpp), vectorized: a float
// per weight in about 1.5 operations (wasm), against the 2 x rows flops the GEMM then spends on
// it. The codes' pair order (quantized_panels.hpp) is undone with 32-bit shifts: an int32 lane
// holds depths 2u (low 16 bits) and 2u + 1 (high) of one column.
void QuantizedPanels::dequantize_slice(int64_t p, int64_t k0, int64_t depth, float* out) const {
#if MHA_QGEMV
  using namespace qsimd;
  const uint8_t* panel = codes(p);
  const float* scale = scales(p);
  if (dtype_ == WeightDtype::kInt8 && k0 % 2 == 0) {
    const F s0 = fload(scale), s1 = fload(scale + kW);
    int64_t k = 0;
    for (; k + 2 <= depth; k += 2) {
      const uint8_t* c = panel + (k0 + k) / 2 * 2 * kP;
      const I lo = widen_i8(c), hi = widen_i8(c + 2 * kW);  // int16 lanes: (depth 2u, 2u + 1) per column
      fstore(out + k * kP, fmul(to_float(sra32(sll32(lo, 16), 16)), s0));
      fstore(out + k * kP + kW, fmul(to_float(sra32(sll32(hi, 16), 16)), s1));
      fstore(out + (k + 1) * kP, fmul(to_float(sra32(lo, 16)), s0));
      fstore(out + (k + 1) * kP + kW, fmul(to_float(sra32(hi, 16)), s1));
    }
    if (k < depth) dequantize_slice_reference(p, k0 + k, depth - k, out + k * kP);
    return;
  }
  if (dtype_ == WeightDtype::kQ4 && k0 % kQ4Block == 0) {
    const I low16 = isplat(0xffff);
    for (int64_t k = 0; k < depth; k += kQ4Block) {
      const int64_t b = (k0 + k) / kQ4Block;
      const F s0 = fload(scale + b * kP), s1 = fload(scale + b * kP + kW);
      const I z0 = zero_points_.empty() ? isplat(8) : iload(zero_points(p) + b * kP);
      const I z1 = zero_points_.empty() ? isplat(8) : iload(zero_points(p) + b * kP + kW);
      const int64_t n = std::min(kQ4Block, depth - k);  // a slice ends inside a block only at in_features
      for (int64_t g = 0; g < n / 4; ++g) {
        const I v = iload(panel + (b * kGroups + g) * 2 * kP);
        // Nibble j of each int16 lane: columns (j < 2 ? 0 : W) + lane / 2, depths 4g + 2 (j % 2) + lane % 2.
        const I n0 = mask16(v, 0x000f), n1 = mask16(shr16(v, 4), 0x000f), n2 = mask16(shr16(v, 8), 0x000f), n3 = shr16(v, 12);
        float* o = out + (k + 4 * g) * kP;
        fstore(o, fmul(to_float(isub(iand(n0, low16), z0)), s0));
        fstore(o + kP, fmul(to_float(isub(srl32(n0, 16), z0)), s0));
        fstore(o + 2 * kP, fmul(to_float(isub(iand(n1, low16), z0)), s0));
        fstore(o + 3 * kP, fmul(to_float(isub(srl32(n1, 16), z0)), s0));
        fstore(o + kW, fmul(to_float(isub(iand(n2, low16), z1)), s1));
        fstore(o + kP + kW, fmul(to_float(isub(srl32(n2, 16), z1)), s1));
        fstore(o + 2 * kP + kW, fmul(to_float(isub(iand(n3, low16), z1)), s1));
        fstore(o + 3 * kP + kW, fmul(to_float(isub(srl32(n3, 16), z1)), s1));
      }
      if (n % 4) dequantize_slice_reference(p, k0 + k + n / 4 * 4, n % 4, out + (k + n / 4 * 4) * kP);
    }
    return;
  }
  if (dtype_ == WeightDtype::kF16 && !nonfinite_) {
    for (int64_t k = 0; k < depth; ++k) {
      F lo, hi;
      widen_f16(panel + (k0 + k) * 2 * kP, lo, hi);
      fstore(out + k * kP, lo);
      fstore(out + k * kP + kW, hi);
    }
    return;
  }
#endif
  dequantize_slice_reference(p, k0, depth, out);
}

QuantizedMatrix QuantizedPanels::canonical() const {
  QuantizedMatrix m;
  m.dtype = dtype_;
  m.out_features = out_;
  m.in_features = in_;
  m.data.assign(static_cast<size_t>(QuantizedMatrix::data_bytes(dtype_, out_, in_)), 0);
  m.scales.assign(static_cast<size_t>(QuantizedMatrix::scale_count(dtype_, out_, in_)), 0.0f);
  if (has_zero_points()) m.zero_points.assign(static_cast<size_t>(QuantizedMatrix::zero_point_bytes(dtype_, out_, in_)), 0);
  const int64_t in = in_;
  for (int64_t o = 0; o < out_; ++o) {  // the constructor's loops, each assignment reversed
    const int64_t p = o / kP, c = o % kP;
    const uint8_t* panel = codes_.data() + p * panel_bytes_;
    if (dtype_ == WeightDtype::kInt8) {
      for (int64_t i = 0; i < in; ++i) m.data[o * in + i] = panel[(i / 2) * 2 * kP + 2 * c + i % 2];
      m.scales[o] = scales_[p * kP + c];
    } else if (dtype_ == WeightDtype::kQ4) {
      const int64_t row_bytes = blocks_ * kQ4Block / 2;
      for (int64_t b = 0; b < blocks_; ++b) {
        for (int64_t j = 0; j < kQ4Block; ++j) {
          const int64_t g = j / 4, t = j % 4;
          const uint8_t byte = panel[(b * kGroups + g) * 2 * kP + q4_byte(c, t)];
          const uint8_t q = q4_high(t) ? byte >> 4 : byte & 0x0f;
          m.data[o * row_bytes + b * kQ4Block / 2 + j / 2] |= static_cast<uint8_t>(j % 2 == 0 ? q : q << 4);
        }
        m.scales[o * blocks_ + b] = scales_[p * panel_scales_ + b * kP + c];
        if (has_zero_points()) {
          const auto zp = static_cast<uint8_t>(zero_points_[p * panel_scales_ + b * kP + c]);
          const int64_t per_row = (blocks_ + 1) / 2;
          m.zero_points[o * per_row + b / 2] |= static_cast<uint8_t>(b % 2 == 0 ? zp : zp << 4);
        }
      }
    } else {
      for (int64_t i = 0; i < in; ++i) {
        m.data[2 * (o * in + i)] = panel[2 * (i * kP + c)];
        m.data[2 * (o * in + i) + 1] = panel[2 * (i * kP + c) + 1];
      }
    }
  }
  return m;
}

std::vector<float> QuantizedPanels::dequantized() const {
  std::vector<float> w(static_cast<size_t>(out_ * in_));
  std::vector<float> slice(static_cast<size_t>(in_ * kP));
  for (int64_t p = 0; p < panels_; ++p) {
    dequantize_slice(p, 0, in_, slice.data());
    for (int64_t c = 0; c < kP && p * kP + c < out_; ++c)
      for (int64_t i = 0; i < in_; ++i) w[(p * kP + c) * in_ + i] = slice[i * kP + c];
  }
  return w;
}

}  // namespace mha::kernels
