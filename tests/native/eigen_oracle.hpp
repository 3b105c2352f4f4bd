// An independent oracle: the whole layer in float64 with Eigen, written as plainly as the math
// (no blocking, no SIMD, no online softmax), for the randomized differential tests
// (oracle_test.cpp: forward; oracle_backward_test.cpp: gradients). Shares nothing with the
// kernels but the config and the parameters; dropout's keep mask is whatever callable the test
// passes (the kernels' generator, to compare with the layer).
//
// The forward pass of one batch row, and the backward pass as the same stages in reverse:
//   Q = xq Wq^T + bq,  K = xk Wk^T + bk,  V = xv Wv^T + bv      (nn.Linear)
//   Q, K rotated (rotary)                                        (orthogonal: its transpose rotates back)
//   per head: R = scale * Q_h K_g^T,  T = softcap(R) = c tanh(R / c)   (g: the head's kv head)
//             Z = T - ALiBi + masks, blocked keys -inf
//             P = softmax(Z) with the sink's logit in the denominator
//             P~ = P * keep / (1 - p)                            (dropout)
//             A_h = P~ V_g
//   with the output gate: Gt = sigmoid(xq Wg^T + bg), A = A * Gt  (elementwise)
//   out = A Wo^T + bo
// Backward, given dOut:
//   dWo = dOut^T A, dbo = sum of dOut's rows, dA = dOut Wo
//   with the gate: dLogits = dA * A_pre * Gt (1 - Gt) -> Wg, bg and xq (linear's backward); dA = dA * Gt
//   per head: dV_g += P~^T dA_h,  dP = (dA_h V_g^T) * keep / (1 - p)
//             dZ_ij = P_ij (dP_ij - D_i),  D_i = sum_j P_ij dP_ij   (softmax's Jacobian)
//             d_sink += -sum_i P_sink,i D_i                          (the sink's column has dP = 0)
//             dR = dZ * (1 - (T / c)^2)  (softcap; ALiBi and masks add constants)
//             dQ_h += scale * dR K_g,  dK_g += scale * dR^T Q_h
//   dQ, dK rotated back; dW = dY^T x, db = sum of dY's rows, dx = dY W for each projection
// A row with every key blocked has P = 0 (and no sink share): zero output, zero gradients.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/layer/parameters.hpp"

namespace oracle {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The layer's parameters in float64, in AttentionParameters' layout (nn.Linear [out, in]);
// also the layout of their gradients. Biases and sinks empty where the layer has none.
struct Parameters {
  std::vector<double> q_weight, k_weight, v_weight, out_weight;
  std::vector<double> q_bias, k_bias, v_bias, out_bias;
  std::vector<double> sinks;
  std::vector<double> gate_weight, gate_bias;  // the output gate's projection; empty without
  std::vector<double> q_norm, k_norm;          // the q/k norms' weights (config qk_norm; forward only); empty without
};

inline std::vector<double> to_doubles(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
inline std::vector<double> to_doubles(const float* data, int64_t n) {
  return data ? std::vector<double>(data, data + n) : std::vector<double>();
}

inline Parameters to_doubles(const mha::AttentionParameters& p) {
  return {to_doubles(p.q_weight), to_doubles(p.k_weight), to_doubles(p.v_weight), to_doubles(p.out_weight),
          to_doubles(p.q_bias),   to_doubles(p.k_bias),   to_doubles(p.v_bias),   to_doubles(p.out_bias),
          to_doubles(p.sinks),    to_doubles(p.gate_weight), to_doubles(p.gate_bias),
          to_doubles(p.q_norm),   to_doubles(p.k_norm)};
}

// A forward call's inputs in float64: query [B, L, E]; key [B, S, kdim] and value [B, S, vdim],
// both empty for self-attention (they are then the query).
struct Inputs {
  std::vector<double> query, key, value;
  bool self() const { return key.empty(); }
};

// Attention dropout: probability p, and whether batch row b, head h keeps key j for query row i.
// Kept probabilities are scaled by 1 / (1 - p). No keep callable (or p = 0): no dropout.
struct Dropout {
  double p = 0.0;
  std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)> keep;
  bool active() const { return p > 0.0 && keep != nullptr; }
  double factor(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!active()) return 1.0;
    return keep(b, h, i, j) ? 1.0 / (1.0 - p) : 0.0;
  }
};

// rows x cols row-major doubles as a matrix (a copy).
inline Matrix matrix(const double* data, int64_t rows, int64_t cols) {
  return Eigen::Map<const Matrix>(data, rows, cols);
}

// y = x W^T + b (nn.Linear); W [out, x.cols()].
inline Matrix linear(const Matrix& x, const std::vector<double>& w, const std::vector<double>& b, int64_t out) {
  Matrix y = x * matrix(w.data(), out, x.cols()).transpose();
  if (!b.empty()) y.rowwise() += matrix(b.data(), 1, out).row(0);
  return y;
}

// The q/k norm (config qk_norm) of each row's heads, or of the whole row: x / sqrt(mean(x^2) + eps) * w.
inline void normalize(Matrix& x, int64_t heads, int64_t head_dim, const mha::QkNorm& norm, const std::vector<double>& w) {
  const bool per_head = norm.over == mha::QkNormScope::kHead;
  const int64_t groups = per_head ? heads : 1, size = per_head ? head_dim : heads * head_dim;
  for (int64_t i = 0; i < x.rows(); ++i)
    for (int64_t g = 0; g < groups; ++g) {
      auto group = x.row(i).segment(g * size, size);
      const double inverse_rms = 1.0 / std::sqrt(group.squaredNorm() / static_cast<double>(size) + norm.eps);
      for (int64_t f = 0; f < size; ++f) group(f) *= inverse_rms * w[f];
    }
}

// Rotary embedding of the first `dim` features of each head of each row at positions[row];
// direction -1 rotates by the opposite angles (the transpose: what the backward pass needs).
inline void rotate(Matrix& x, int64_t heads, int64_t head_dim, const mha::RotaryConfig& r,
                   const std::vector<int64_t>& positions, double direction = 1.0) {
  const int64_t half = r.dim / 2;
  for (int64_t i = 0; i < x.rows(); ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < half; ++t) {
        const double angle = direction * positions[i] * std::pow(r.base, -2.0 * t / r.dim);
        const int64_t a = h * head_dim + (r.interleaved ? 2 * t : t), b = a + (r.interleaved ? 1 : half);
        const double xa = x(i, a), xb = x(i, b);
        x(i, a) = xa * std::cos(angle) - xb * std::sin(angle);
        x(i, b) = xb * std::cos(angle) + xa * std::sin(angle);
      }
}

// Everything one batch row's forward pass computes, kept for its backward pass.
struct RowPass {
  Matrix xq, xk, xv;              // the inputs
  Matrix Q, K, V;                 // projected; Q and K normed (qk_norm) and rotated
  std::vector<int64_t> qpos, kpos;
  std::vector<Matrix> raw;        // per head: scale * Q_h K_g^T (before softcap)
  std::vector<Matrix> probs;      // per head: P, before dropout
  std::vector<Matrix> dropped;    // per head: P~ = P * dropout factor (P itself without dropout)
  std::vector<Vector> sink_probs; // per head: each row's sink share (0 without sinks)
  Matrix attended;                // [L, H*Dv], before the gate
  Matrix gate;                    // [L, H*Dv] sigmoid of the gate's logits (with the gate)
  Matrix out;                     // [L, outputDim]
};

// One batch row's forward pass. Masks as the core takes them (bool: nonzero blocks; float: added).
inline RowPass forward_row(const mha::ResolvedConfig& c, const Parameters& p, int64_t b, int64_t L, int64_t S,
                           const Inputs& in, const mha::ForwardOptions& o, bool attn_mask_per_head, const Dropout& dropout) {
  const int64_t E = c.embed_dim, H = c.num_heads, Hkv = c.num_kv_heads, Dh = c.head_dim, Dv = c.value_head_dim;
  const int64_t G = H / Hkv;
  const auto mask_value = [](const mha::MaskRef& m, int64_t index) -> double {
    if (!m.present()) return 0.0;
    if (m.type == mha::MaskType::kBool) return static_cast<const uint8_t*>(m.data)[index] ? kNegInf : 0.0;
    return static_cast<const float*>(m.data)[index];
  };
  RowPass f;
  f.xq = matrix(in.query.data() + b * L * E, L, E);
  f.xk = in.self() ? f.xq : matrix(in.key.data() + b * S * c.kdim, S, c.kdim);
  f.xv = in.self() ? f.xq : matrix(in.value.data() + b * S * c.vdim, S, c.vdim);
  f.Q = linear(f.xq, p.q_weight, p.q_bias, H * Dh);
  f.K = linear(f.xk, p.k_weight, p.k_bias, Hkv * Dh);
  f.V = linear(f.xv, p.v_weight, p.v_bias, Hkv * Dv);
  f.qpos.resize(L);
  f.kpos.resize(S);
  for (int64_t i = 0; i < L; ++i) f.qpos[i] = o.positions ? o.positions[b * L + i] : i;
  for (int64_t j = 0; j < S; ++j) f.kpos[j] = (o.positions && in.self()) ? o.positions[b * L + j] : j;
  if (c.qk_norm) {
    normalize(f.Q, H, Dh, c.qk_norm, p.q_norm);
    normalize(f.K, Hkv, Dh, c.qk_norm, p.k_norm);
  }
  if (c.rotary.dim > 0) {
    rotate(f.Q, H, Dh, c.rotary, f.qpos);
    rotate(f.K, Hkv, Dh, c.rotary, f.kpos);
  }
  f.attended.resize(L, H * Dv);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kvh = h / G;
    const Matrix raw = f.Q.middleCols(h * Dh, Dh) * f.K.middleCols(kvh * Dh, Dh).transpose() * static_cast<double>(c.scale);
    Matrix scores = raw;
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
    Vector sink_prob = Vector::Zero(L);
    for (int64_t i = 0; i < L; ++i) {
      auto row = scores.row(i);
      if ((row.array() == kNegInf).all()) {  // every key blocked: zeros
        row.setZero();
        continue;
      }
      const double m = std::max(row.maxCoeff(), sink);
      row = (row.array() - m).exp();
      const double sum = row.sum() + (c.sinks ? std::exp(sink - m) : 0.0);
      row /= sum;
      if (c.sinks) sink_prob(i) = std::exp(sink - m) / sum;
    }
    Matrix dropped = scores;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) dropped(i, j) *= dropout.factor(b, h, i, j);
    f.attended.middleCols(h * Dv, Dv) = dropped * f.V.middleCols(kvh * Dv, Dv);
    f.raw.push_back(raw);
    f.probs.push_back(scores);
    f.dropped.push_back(dropped);
    f.sink_probs.push_back(sink_prob);
  }
  if (c.gate) {
    const Matrix logits = linear(f.xq, p.gate_weight, p.gate_bias, H * Dv);
    f.gate = (1.0 + (-logits.array()).exp()).inverse().matrix();
    f.out = linear((f.attended.array() * f.gate.array()).matrix(), p.out_weight, p.out_bias, c.output_dim);
  } else {
    f.out = linear(f.attended, p.out_weight, p.out_bias, c.output_dim);
  }
  return f;
}

struct Result {
  std::vector<double> output;   // [B, L, outputDim]
  std::vector<double> weights;  // [B, H, L, S] (per head, always; after dropout, as PyTorch's, unless
                                // options.weights_before_dropout, as Keras')
};

// One forward pass.
inline Result forward(const mha::ResolvedConfig& c, const Parameters& p, int64_t B, int64_t L, int64_t S,
                      const Inputs& in, const mha::ForwardOptions& o, bool attn_mask_per_head,
                      const Dropout& dropout = {}) {
  const int64_t H = c.num_heads;
  Result r;
  r.output.assign(static_cast<size_t>(B * L * c.output_dim), 0.0);
  r.weights.assign(static_cast<size_t>(B * H * L * S), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    const RowPass f = forward_row(c, p, b, L, S, in, o, attn_mask_per_head, dropout);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          r.weights[((b * H + h) * L + i) * S + j] = o.weights_before_dropout ? f.probs[h](i, j) : f.dropped[h](i, j);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < c.output_dim; ++d) r.output[(b * L + i) * c.output_dim + d] = f.out(i, d);
  }
  return r;
}

// The same from the layer's float32 parameters and inputs (key/value null: self-attention).
inline Inputs to_doubles(const mha::ResolvedConfig& c, int64_t B, int64_t L, int64_t S, const float* query,
                         const float* key, const float* value) {
  return {to_doubles(query, B * L * c.embed_dim), to_doubles(key, B * S * c.kdim), to_doubles(value, B * S * c.vdim)};
}

inline Result forward(const mha::ResolvedConfig& c, const mha::AttentionParameters& p, int64_t B, int64_t L, int64_t S,
                      const float* query, const float* key, const float* value, const mha::ForwardOptions& o,
                      bool attn_mask_per_head, const Dropout& dropout = {}) {
  return forward(c, to_doubles(p), B, L, S, to_doubles(c, B, L, S, query, key, value), o, attn_mask_per_head, dropout);
}

// dLoss/d everything the forward pass read that carries a gradient.
struct Gradients {
  std::vector<double> query;       // [B, L, E]; self-attention: the sum of the query's three uses
  std::vector<double> key, value;  // [B, S, kdim], [B, S, vdim]; empty for self-attention
  Parameters params;               // Parameters' layout; biases / sinks empty where the layer has none
};

// Adds m (row-major) into a flat gradient.
inline void add_into(std::vector<double>& into, const Matrix& m, int64_t offset = 0) {
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t k = 0; k < m.cols(); ++k) into[offset + r * m.cols() + k] += m(r, k);
}

// The backward pass of linear(): adds dW = dY^T x and db = sum of dY's rows; returns dx = dY W.
inline Matrix linear_backward(const Matrix& x, const Matrix& dy, const std::vector<double>& w, std::vector<double>& dw,
                              std::vector<double>& db) {
  add_into(dw, dy.transpose() * x);
  if (!db.empty()) add_into(db, dy.colwise().sum());
  return dy * matrix(w.data(), dy.cols(), x.cols());
}

// The backward pass of forward(): d_output is dLoss/dOutput [B, L, outputDim].
inline Gradients backward(const mha::ResolvedConfig& c, const Parameters& p, int64_t B, int64_t L, int64_t S,
                          const Inputs& in, const mha::ForwardOptions& o, bool attn_mask_per_head,
                          const double* d_output, const Dropout& dropout = {}) {
  const int64_t E = c.embed_dim, H = c.num_heads, Hkv = c.num_kv_heads, Dh = c.head_dim, Dv = c.value_head_dim;
  const int64_t G = H / Hkv;
  const auto zeros_like = [](const std::vector<double>& v) { return std::vector<double>(v.size(), 0.0); };
  Gradients g;
  g.query.assign(static_cast<size_t>(B * L * E), 0.0);
  if (!in.self()) {
    g.key.assign(in.key.size(), 0.0);
    g.value.assign(in.value.size(), 0.0);
  }
  g.params = {zeros_like(p.q_weight), zeros_like(p.k_weight), zeros_like(p.v_weight), zeros_like(p.out_weight),
              zeros_like(p.q_bias),   zeros_like(p.k_bias),   zeros_like(p.v_bias),   zeros_like(p.out_bias),
              zeros_like(p.sinks),    zeros_like(p.gate_weight), zeros_like(p.gate_bias), {}, {}};
  for (int64_t b = 0; b < B; ++b) {
    const RowPass f = forward_row(c, p, b, L, S, in, o, attn_mask_per_head, dropout);
    const Matrix d_out = matrix(d_output + b * L * c.output_dim, L, c.output_dim);
    Matrix d_attended;
    Matrix dx_gate = Matrix::Zero(L, E);
    if (c.gate) {
      const Matrix gated = (f.attended.array() * f.gate.array()).matrix();
      const Matrix d_gated = linear_backward(gated, d_out, p.out_weight, g.params.out_weight, g.params.out_bias);
      const Matrix d_logits =
          (d_gated.array() * f.attended.array() * f.gate.array() * (1.0 - f.gate.array())).matrix();
      dx_gate = linear_backward(f.xq, d_logits, p.gate_weight, g.params.gate_weight, g.params.gate_bias);
      d_attended = (d_gated.array() * f.gate.array()).matrix();
    } else {
      d_attended = linear_backward(f.attended, d_out, p.out_weight, g.params.out_weight, g.params.out_bias);
    }

    Matrix dQ = Matrix::Zero(L, H * Dh), dK = Matrix::Zero(S, Hkv * Dh), dV = Matrix::Zero(S, Hkv * Dv);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / G;
      const Matrix& P = f.probs[h];
      const Matrix dA = d_attended.middleCols(h * Dv, Dv);
      dV.middleCols(kvh * Dv, Dv) += f.dropped[h].transpose() * dA;
      Matrix dP = dA * f.V.middleCols(kvh * Dv, Dv).transpose();
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) dP(i, j) *= dropout.factor(b, h, i, j);
      Matrix dR(L, S);
      for (int64_t i = 0; i < L; ++i) {
        const double D = P.row(i).dot(dP.row(i));
        for (int64_t j = 0; j < S; ++j) {
          double dz = P(i, j) * (dP(i, j) - D);
          if (c.softcap > 0) {
            const double t = std::tanh(f.raw[h](i, j) / c.softcap);
            dz *= 1.0 - t * t;
          }
          dR(i, j) = dz;
        }
        if (c.sinks) g.params.sinks[h] -= f.sink_probs[h](i) * D;
      }
      dQ.middleCols(h * Dh, Dh) += static_cast<double>(c.scale) * dR * f.K.middleCols(kvh * Dh, Dh);
      dK.middleCols(kvh * Dh, Dh) += static_cast<double>(c.scale) * dR.transpose() * f.Q.middleCols(h * Dh, Dh);
    }
    if (c.rotary.dim > 0) {
      rotate(dQ, H, Dh, c.rotary, f.qpos, -1.0);
      rotate(dK, Hkv, Dh, c.rotary, f.kpos, -1.0);
    }
    const Matrix dxq = linear_backward(f.xq, dQ, p.q_weight, g.params.q_weight, g.params.q_bias) + dx_gate;
    const Matrix dxk = linear_backward(f.xk, dK, p.k_weight, g.params.k_weight, g.params.k_bias);
    const Matrix dxv = linear_backward(f.xv, dV, p.v_weight, g.params.v_weight, g.params.v_bias);
    if (in.self()) {
      add_into(g.query, dxq + dxk + dxv, b * L * E);
    } else {
      add_into(g.query, dxq, b * L * E);
      add_into(g.key, dxk, b * S * c.kdim);
      add_into(g.value, dxv, b * S * c.vdim);
    }
  }
  return g;
}

// The same from the layer's float32 parameters and inputs (key/value null: self-attention).
inline Gradients backward(const mha::ResolvedConfig& c, const mha::AttentionParameters& p, int64_t B, int64_t L,
                          int64_t S, const float* query, const float* key, const float* value,
                          const mha::ForwardOptions& o, bool attn_mask_per_head, const float* d_output,
                          const Dropout& dropout = {}) {
  const std::vector<double> d_out = to_doubles(d_output, B * L * c.output_dim);
  return backward(c, to_doubles(p), B, L, S, to_doubles(c, B, L, S, query, key, value), o, attn_mask_per_head,
                  d_out.data(), dropout);
}

}  // namespace oracle
