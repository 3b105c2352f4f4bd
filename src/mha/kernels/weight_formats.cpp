#include "weight_formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mha::kernels {

int64_t QuantizedMatrix::data_bytes(WeightDtype dtype, int64_t out, int64_t in) {
  switch (dtype) {
    case WeightDtype::kInt8: return out * in;
    case WeightDtype::kQ4: return out * q4_blocks(in) * (kQ4Block / 2);
    case WeightDtype::kF16: return out * in * 2;
    default: return out * in * 4;
  }
}

int64_t QuantizedMatrix::scale_count(WeightDtype dtype, int64_t out, int64_t in) {
  if (dtype == WeightDtype::kInt8) return out;
  if (dtype == WeightDtype::kQ4) return out * q4_blocks(in);
  return 0;
}

int64_t QuantizedMatrix::zero_point_bytes(WeightDtype dtype, int64_t out, int64_t in) {
  return dtype == WeightDtype::kQ4 ? out * ((q4_blocks(in) + 1) / 2) : 0;
}

int QuantizedMatrix::zero_point(int64_t o, int64_t b) const {
  if (zero_points.empty()) return 8;
  const uint8_t byte = zero_points[static_cast<size_t>(o * ((q4_blocks(in_features) + 1) / 2) + b / 2)];
  return b % 2 == 0 ? byte & 0x0f : byte >> 4;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero and subnormals (exact)
  } else if (exponent == 0x1f) {
    magnitude = mantissa ? NAN : INFINITY;
  } else {
    const uint32_t bits = ((exponent - 15 + 127) << 23) | (mantissa << 13);
    std::memcpy(&magnitude, &bits, sizeof magnitude);
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, sizeof bits);
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float value) {
  uint32_t f;
  std::memcpy(&f, &value, sizeof f);
  const uint32_t sign = (f >> 16) & 0x8000, exponent = (f >> 23) & 0xff;
  uint32_t mantissa = f & 0x7fffff;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));  // Inf, NaN
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);  // overflow to Inf
  if (e <= 0) {  // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    const int shift = 14 - e;
    const uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    return static_cast<uint16_t>(sign | (half + ((rest > midpoint || (rest == midpoint && (half & 1))) ? 1 : 0)));
  }
  const uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13), rest = mantissa & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to Inf).
  return static_cast<uint16_t>(sign | (half + ((rest > 0x1000 || (rest == 0x1000 && (half & 1))) ? 1 : 0)));
}

float quantize_int8_row(const float* w, int64_t in, int8_t* q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < in; ++i) amax = std::fmax(amax, std::fabs(w[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < in; ++i) {
    const float r = std::roundf(w[i] * id);  // half away from zero
    q[i] = static_cast<int8_t>(r >= -127.0f && r <= 127.0f ? static_cast<int>(r) : r > 0.0f ? 127 : r < 0.0f ? -127 : 0);
  }
  return d;
}

void quantize_q4_row(const float* w, int64_t in, float* scales, uint8_t* codes) {
  for (int64_t b = 0; b < q4_blocks(in); ++b) {
    const int64_t first = b * kQ4Block, n = std::min<int64_t>(kQ4Block, in - first);
    float amax = 0.0f, max = 0.0f;
    for (int64_t j = 0; j < n; ++j)
      if (amax < std::fabs(w[first + j])) amax = std::fabs(w[first + j]), max = w[first + j];
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    scales[b] = d;
    for (int64_t j = 0; j < kQ4Block; ++j) {
      const float x = j < n ? w[first + j] : 0.0f;  // the padding quantizes as zeros
      const float product = x * id;
      const float t = product + 8.5f;
      codes[first + j] = static_cast<uint8_t>(!(t >= 0.0f) ? 0 : t >= 15.0f ? 15 : static_cast<int>(t));
    }
  }
}

QuantizedMatrix quantize_matrix(WeightDtype dtype, const float* w, int64_t out, int64_t in) {
  QuantizedMatrix m;
  m.dtype = dtype;
  m.out_features = out;
  m.in_features = in;
  m.data.resize(static_cast<size_t>(QuantizedMatrix::data_bytes(dtype, out, in)));
  m.scales.resize(static_cast<size_t>(QuantizedMatrix::scale_count(dtype, out, in)));
  if (dtype == WeightDtype::kInt8) {
    for (int64_t o = 0; o < out; ++o)
      m.scales[o] = quantize_int8_row(w + o * in, in, reinterpret_cast<int8_t*>(m.data.data()) + o * in);
  } else if (dtype == WeightDtype::kQ4) {
    const int64_t blocks = q4_blocks(in);
    std::vector<uint8_t> codes(static_cast<size_t>(blocks * kQ4Block));
    for (int64_t o = 0; o < out; ++o) {
      quantize_q4_row(w + o * in, in, m.scales.data() + o * blocks, codes.data());
      uint8_t* row = m.data.data() + o * blocks * (kQ4Block / 2);
      for (int64_t j = 0; j < blocks * kQ4Block; j += 2) row[j / 2] = static_cast<uint8_t>(codes[j] | (codes[j + 1] << 4));
    }
  } else if (dtype == WeightDtype::kF16) {
    for (int64_t i = 0; i < out * in; ++i) {
      const uint16_t h = float_to_half(w[i]);
      m.data[2 * i] = static_cast<uint8_t>(h & 0xff);
      m.data[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return m;
}

std::vector<float> dequantize_matrix(const QuantizedMatrix& m) {
  const int64_t out = m.out_features, in = m.in_features;
  std::vector<float> w(static_cast<size_t>(out * in));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      float value = 0.0f;
      if (m.dtype == WeightDtype::kInt8) {
        value = static_cast<float>(static_cast<int8_t>(m.data[o * in + i])) * m.scales[o];
      } else if (m.dtype == WeightDtype::kQ4) {
        const int64_t b = i / kQ4Block, j = i % kQ4Block, blocks = q4_blocks(in);
        const uint8_t byte = m.data[(o * blocks + b) * (kQ4Block / 2) + j / 2];
        const int q = j % 2 == 0 ? byte & 0x0f : byte >> 4;
        value = static_cast<float>(q - m.zero_point(o, b)) * m.scales[o * blocks + b];
      } else if (m.dtype == WeightDtype::kF16) {
        value = half_to_float(static_cast<uint16_t>(m.data[2 * (o * in + i)] | (m.data[2 * (o * in + i) + 1] << 8)));
      }
      w[o * in + i] = value;
    }
  }
  return w;
}

}  // namespace mha::kernels
