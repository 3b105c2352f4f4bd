// An independent oracle: the whole layer in float64 with Eigen, written as plainly as the math
// (no blocking, no SIMD, no online softmax), for the randomized differential test
// (oracle_test.cpp). Shares nothing with the kernels but the config and the parameters.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mha/attention_config.hpp"
#include "mha/forward_plan.hpp"
#include "mha/parameters.hpp"

namespace oracle {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// rows x cols float32, row-major, as float64.
inline Matrix from_floats(const float* data, int64_t rows, int64_t cols) {
  return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(data, rows, cols)
      .cast<double>();
}

// y = x W^T + b (nn.Linear).
inline Matrix linear(const Matrix& x, const std::vector<float>& w, const std::vector<float>& b, int64_t out) {
  Matrix y = x * from_floats(w.data(), out, x.cols()).transpose();
  if (!b.empty()) y.rowwise() += from_floats(b.data(), 1, out).row(0);
  return y;
}

// Rotary embedding of the first `dim` features of each head of each row at positions[row].
inline void rotate(Matrix& x, int64_t heads, int64_t head_dim, const mha::RotaryConfig& r, const std::vector<int64_t>& positions) {
  const int64_t half = r.dim / 2;
  for (int64_t i = 0; i < x.rows(); ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < half; ++t) {
        const double angle = positions[i] * std::pow(r.base, -2.0 * t / r.dim);
        const int64_t a = h * head_dim + (r.interleaved ? 2 * t : t), b = a + (r.interleaved ? 1 : half);
        const double xa = x(i, a), xb = x(i, b);
        x(i, a) = xa * std::cos(angle) - xb * std::sin(angle);
        x(i, b) = xb * std::cos(angle) + xa * std::sin(angle);
      }
}

struct Result {
  std::vector<double> output;   // [B, L, outputDim]
  std::vector<double> weights;  // [B, H, L, S] (per head, always)
};

// One forward pass. key/value null: self-attention. Masks as the core takes them (bool: nonzero
// blocks; float: added). first_position: the position of query row 0 (a cache's length).
inline Result forward(const mha::ResolvedConfig& c, const mha::AttentionParameters& p, int64_t B, int64_t L, int64_t S,
                      const float* query, const float* key, const float* value, const mha::ForwardOptions& o,
                      bool attn_mask_per_head) {
  const int64_t E = c.embed_dim, H = c.num_heads, Hkv = c.num_kv_heads, Dh = c.head_dim, Dv = c.value_head_dim;
  const int64_t G = H / Hkv;
  Result r;
  r.output.assign(static_cast<size_t>(B * L * c.output_dim), 0.0);
  r.weights.assign(static_cast<size_t>(B * H * L * S), 0.0);
  const auto mask_value = [](const mha::MaskRef& m, int64_t index) -> double {
    if (!m.present()) return 0.0;
    if (m.type == mha::MaskType::kBool) return static_cast<const uint8_t*>(m.data)[index] ? kNegInf : 0.0;
    return static_cast<const float*>(m.data)[index];
  };
  for (int64_t b = 0; b < B; ++b) {
    const Matrix xq = from_floats(query + b * L * E, L, E);
    const Matrix xk = key ? from_floats(key + b * S * c.kdim, S, c.kdim) : xq;
    const Matrix xv = value ? from_floats(value + b * S * c.vdim, S, c.vdim) : xq;
    Matrix Q = linear(xq, p.q_weight, p.q_bias, H * Dh);
    Matrix K = linear(xk, p.k_weight, p.k_bias, Hkv * Dh);
    const Matrix V = linear(xv, p.v_weight, p.v_bias, Hkv * Dv);
    if (c.rotary.dim > 0) {
      std::vector<int64_t> qpos(L), kpos(S);
      for (int64_t i = 0; i < L; ++i) qpos[i] = o.positions ? o.positions[b * L + i] : i;
      for (int64_t j = 0; j < S; ++j) kpos[j] = (o.positions && !key) ? o.positions[b * L + j] : j;
      rotate(Q, H, Dh, c.rotary, qpos);
      rotate(K, Hkv, Dh, c.rotary, kpos);
    }
    Matrix attended(L, H * Dv);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / G;
      Matrix scores = Q.middleCols(h * Dh, Dh) * K.middleCols(kvh * Dh, Dh).transpose() * static_cast<double>(c.scale);
      const double slope = c.alibi_slopes.empty() ? 0.0 : c.alibi_slopes[h];
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double s = scores(i, j);
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          s -= slope * std::abs(static_cast<double>(i - j));
          s += mask_value(o.key_padding_mask, b * S + j);
          s += mask_value(o.attn_mask, (attn_mask_per_head ? (b * H + h) * L * S : 0) + i * S + j);
          if (o.causal && j > i) s = kNegInf;
          if (c.sliding_window > 0 && (o.causal ? i - j >= c.sliding_window : std::abs(i - j) >= c.sliding_window))
            s = kNegInf;
          scores(i, j) = s;
        }
      const double sink = c.sinks ? p.sinks[h] : kNegInf;
      for (int64_t i = 0; i < L; ++i) {
        auto row = scores.row(i);
        if ((row.array() == kNegInf).all()) {  // every key blocked: zeros
          row.setZero();
          continue;
        }
        const double m = std::max(row.maxCoeff(), sink);
        row = (row.array() - m).exp();
        row /= row.sum() + (c.sinks ? std::exp(sink - m) : 0.0);
      }
      attended.middleCols(h * Dv, Dv) = scores * V.middleCols(kvh * Dv, Dv);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) r.weights[((b * H + h) * L + i) * S + j] = scores(i, j);
    }
    const Matrix out = linear(attended, p.out_weight, p.out_bias, c.output_dim);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < c.output_dim; ++d) r.output[(b * L + i) * c.output_dim + d] = out(i, d);
  }
  return r;
}

}  // namespace oracle
