#include "mha/float64/float64_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "mha/plan/errors.hpp"
#include "mha/layer/sequence_first.hpp"

namespace mha {

namespace {

using Doubles = std::vector<double>;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// y [rows, out] = x [rows, in] W^T + b (nn.Linear; W [out, in]; b empty: none).
void linear(const double* x, int64_t rows, int64_t in, const Doubles& w, const Doubles& b, int64_t out, double* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t d = 0; d < in; ++d) acc += x[r * in + d] * w[o * in + d];
      y[r * out + o] = acc;
    }
}

// linear's backward pass: dW += dY^T x, db += dY's column sums (b empty: none), dx += dY W (null: not wanted).
void linear_backward(const double* x, const double* dy, int64_t rows, int64_t in, int64_t out, const Doubles& w,
                     Doubles& dw, Doubles& db, double* dx) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const double g = dy[r * out + o];
      if (!db.empty()) db[o] += g;
      for (int64_t d = 0; d < in; ++d) {
        dw[o * in + d] += g * x[r * in + d];
        if (dx) dx[r * in + d] += g * w[o * in + d];
      }
    }
}

// A mask's term for the score at `index`: bool nonzero blocks (-inf), a float mask's double is added.
double mask_term(const MaskRef& m, int64_t index) {
  if (!m.present()) return 0.0;
  if (m.type == MaskType::kBool) return static_cast<const uint8_t*>(m.data)[index] ? kNegInf : 0.0;
  return static_cast<const double*>(m.data)[index];
}

// The plan reads a tensor's shape and whether its data is there, never its values: a float64
// tensor is planned through a TensorRef that carries its address, not read as floats.
TensorRef planned_view(const Float64TensorRef& t) {
  return {reinterpret_cast<const float*>(t.data), t.shape};
}

// A copy of a mask's bytes, and the MaskRef over the copy.
MaskRef copy_mask(const MaskRef& m, std::vector<uint8_t>& bytes) {
  if (!m.present()) return {};
  const int64_t size = element_count(m.shape) * (m.type == MaskType::kBool ? 1 : sizeof(double));
  const auto* data = static_cast<const uint8_t*>(m.data);
  bytes.assign(data, data + size);
  return {m.type, bytes.data(), m.shape};
}

Doubles copied(const Float64TensorRef& t) {
  return t.present() ? Doubles(t.data, t.data + element_count(t.shape)) : Doubles();
}

// A sequence-first [L, B, F] tensor's batch-first copy (as is when `swap` is false).
Doubles batch_first(const Float64TensorRef& t, bool swap) {
  if (!t.present()) return {};
  return swap ? to_batch_first(t.data, t.shape) : copied(t);
}

// One batch row's forward pass, kept for its backward pass.
struct RowPass {
  Doubles q;         // [L, H*Dh]
  Doubles k, v;      // [Sx, Hkv*Dh], [Sx, Hkv*Dv]: Sx = the plan's key_len (the appended keys last)
  Doubles probs;     // [H, L, Sx]
  Doubles attended;  // [L, H*Dv]
};

// The whole call's pass over batch-first inputs (a saved forward's copies, or the caller's).
class Pass {
 public:
  Pass(const ResolvedConfig& c, const Float64Parameters& p, const Float64SavedForward& s) : c_(c), p_(p), s_(s) {}

  RowPass row(int64_t b) const {
    const ForwardPlan& plan = s_.plan;
    const int64_t E = c_.embed_dim, H = c_.num_heads, Dh = c_.head_dim, Dv = c_.value_head_dim;
    const int64_t L = plan.query_len, S = plan.given_keys, Sx = plan.key_len, G = c_.heads_per_kv();
    const int64_t QD = c_.q_dim(), KV = c_.kv_dim(), VKV = c_.value_kv_dim(), AD = c_.attended_dim();
    const double* xq = s_.query.data() + b * L * E;
    RowPass r;
    r.q.resize(L * QD);
    linear(xq, L, E, p_.q_weight, p_.q_bias, QD, r.q.data());
    r.k.assign(Sx * KV, 0.0);
    r.v.assign(Sx * VKV, 0.0);
    project_or_static(xk(b), c_.kdim, p_.k_weight, p_.k_bias, s_.static_k, b, S, Dh, r.k.data());
    project_or_static(xv(b), c_.vdim, p_.v_weight, p_.v_bias, s_.static_v, b, S, Dv, r.v.data());
    if (c_.add_bias_kv) {  // (then add_zero_attn's row, already zeros)
      std::copy(p_.bias_k.begin(), p_.bias_k.end(), r.k.begin() + S * KV);
      std::copy(p_.bias_v.begin(), p_.bias_v.end(), r.v.begin() + S * VKV);
    }
    const ForwardOptions& o = s_.options;
    r.probs.assign(H * L * Sx, 0.0);
    r.attended.assign(L * AD, 0.0);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / G;
      for (int64_t i = 0; i < L; ++i) {
        double* pr = r.probs.data() + (h * L + i) * Sx;
        double max = kNegInf;
        for (int64_t j = 0; j < Sx; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < Dh; ++d) dot += r.q[i * QD + h * Dh + d] * r.k[j * KV + g * Dh + d];
          double s = c_.scale64 * dot;
          if (j < S) {  // (the appended keys: the masks' padding attends, as PyTorch pads them)
            s += mask_term(o.key_padding_mask, b * S + j);
            s += mask_term(o.attn_mask, (plan.attn_mask_per_head ? (b * H + h) * L * S : 0) + i * S + j);
          }
          if (o.causal && j > i) s = kNegInf;
          pr[j] = s;
          max = std::max(max, s);
        }
        if (max == kNegInf) {  // every key blocked: zero weights (the project's rule; PyTorch gives NaN)
          std::fill_n(pr, Sx, 0.0);
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < Sx; ++j) sum += (pr[j] = std::exp(pr[j] - max));
        for (int64_t j = 0; j < Sx; ++j) pr[j] /= sum;
        for (int64_t j = 0; j < Sx; ++j)
          for (int64_t d = 0; d < Dv; ++d) r.attended[i * AD + h * Dv + d] += pr[j] * r.v[j * VKV + g * Dv + d];
      }
    }
    return r;
  }

  // The row's output [L, outputDim] into `out`.
  void output(const RowPass& r, double* out) const {
    linear(r.attended.data(), s_.plan.query_len, c_.attended_dim(), p_.out_weight, p_.out_bias, c_.output_dim, out);
  }

  // Adds row b's gradients, for dLoss/dOutput `d_out` [L, outputDim], into g (batch-first).
  void backward(int64_t b, const double* d_out, Float64Gradients& g) const {
    const ForwardPlan& plan = s_.plan;
    const int64_t E = c_.embed_dim, H = c_.num_heads, Dh = c_.head_dim, Dv = c_.value_head_dim;
    const int64_t L = plan.query_len, S = plan.given_keys, Sx = plan.key_len, G = c_.heads_per_kv();
    const int64_t QD = c_.q_dim(), KV = c_.kv_dim(), VKV = c_.value_kv_dim(), AD = c_.attended_dim();
    const RowPass r = row(b);
    Float64Parameters& dp = g.params;
    Doubles dA(L * AD, 0.0), dQ(L * QD, 0.0), dK(Sx * KV, 0.0), dV(Sx * VKV, 0.0), dP(Sx);
    linear_backward(r.attended.data(), d_out, L, AD, c_.output_dim, p_.out_weight, dp.out_weight, dp.out_bias, dA.data());
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g_ = h / G;
      for (int64_t i = 0; i < L; ++i) {
        const double* pr = r.probs.data() + (h * L + i) * Sx;
        const double* da = dA.data() + i * AD + h * Dv;
        double D = 0.0;  // sum_j P_ij dP_ij: the softmax Jacobian's row term
        for (int64_t j = 0; j < Sx; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < Dv; ++d) {
            dot += da[d] * r.v[j * VKV + g_ * Dv + d];
            dV[j * VKV + g_ * Dv + d] += pr[j] * da[d];
          }
          dP[j] = dot;
          D += pr[j] * dot;
        }
        for (int64_t j = 0; j < Sx; ++j) {
          const double dz = c_.scale64 * pr[j] * (dP[j] - D);
          if (dz == 0.0) continue;
          for (int64_t d = 0; d < Dh; ++d) {
            dQ[i * QD + h * Dh + d] += dz * r.k[j * KV + g_ * Dh + d];
            dK[j * KV + g_ * Dh + d] += dz * r.q[i * QD + h * Dh + d];
          }
        }
      }
    }
    if (c_.add_bias_kv) {
      for (int64_t x = 0; x < KV; ++x) dp.bias_k[x] += dK[S * KV + x];
      for (int64_t x = 0; x < VKV; ++x) dp.bias_v[x] += dV[S * VKV + x];
    }
    // The input gradients: self-attention sums the query's three uses into one.
    const bool self = s_.self_attention;
    double* dxq = g.query.data() + b * L * E;
    double* dxk = self ? dxq : g.key.data() + b * S * c_.kdim;
    double* dxv = self ? dxq : g.value.data() + b * S * c_.vdim;
    linear_backward(s_.query.data() + b * L * E, dQ.data(), L, E, QD, p_.q_weight, dp.q_weight, dp.q_bias, dxq);
    // (Static keys / values replace their projection: no gradient flows to it or through it.)
    if (s_.static_k.empty())
      linear_backward(xk(b), dK.data(), S, c_.kdim, KV, p_.k_weight, dp.k_weight, dp.k_bias, dxk);
    if (s_.static_v.empty())
      linear_backward(xv(b), dV.data(), S, c_.vdim, VKV, p_.v_weight, dp.v_weight, dp.v_bias, dxv);
  }

 private:
  const double* xk(int64_t b) const {
    const int64_t S = s_.plan.given_keys;
    return s_.self_attention ? s_.query.data() + b * S * c_.embed_dim : s_.key.data() + b * S * c_.kdim;
  }
  const double* xv(int64_t b) const {
    const int64_t S = s_.plan.given_keys;
    return s_.self_attention ? s_.query.data() + b * S * c_.embed_dim : s_.value.data() + b * S * c_.vdim;
  }

  // The first S rows of k (or v) [Sx, Hkv*D]: x's projection, or the static rows [B*Hkv, S, D] of batch row b.
  void project_or_static(const double* x, int64_t in, const Doubles& w, const Doubles& bias, const Doubles& rows,
                         int64_t b, int64_t S, int64_t D, double* k) const {
    const int64_t heads = c_.num_kv_heads;
    if (rows.empty()) {
      linear(x, S, in, w, bias, heads * D, k);
      return;
    }
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < S; ++j)
        std::copy_n(rows.data() + ((b * heads + h) * S + j) * D, D, k + j * heads * D + h * D);
  }

  const ResolvedConfig& c_;
  const Float64Parameters& p_;
  const Float64SavedForward& s_;
};

Doubles zeros_like(const Doubles& v) { return Doubles(v.size(), 0.0); }

}  // namespace

std::vector<MemoryItem> float64_weight_memory(const ResolvedConfig& c) {
  std::vector<MemoryItem> items;
  for (const auto& [key, shape] : state_dict_layout(c)) items.push_back({key, saturating_bytes(shape, sizeof(double))});
  return items;
}

Float64Attention::Float64Attention(const AttentionConfig& config) : config_(resolve(config)) {
  if (!config_.float64) throw type_error("dtype: a Float64Attention needs dtype 'float64'");
  check_fits("the weights", float64_weight_memory(config_), 0, addressable_bytes());
}

void Float64Attention::load_state_dict(const Float64StateDict& state) {
  params_ = parameters_from_state_dict(config_, state);
  loaded_ = true;
  ++weights_version_;
}

uint64_t Float64Attention::weight_bytes() const {
  return loaded_ ? total_bytes(float64_weight_memory(config_)) : 0;
}

ForwardPlan Float64Attention::plan(const Float64Call& call) const {
  const ForwardOptions& o = call.options;
  if (o.cache) throw type_error("cache: not with dtype 'float64' (a float64 layer has no KV cache)");
  ForwardOptions planned = o;
  planned.static_k = planned_view(call.static_k);
  planned.static_v = planned_view(call.static_v);
  return plan_forward(config_, planned_view(call.query), planned_view(call.key), planned_view(call.value), planned);
}

std::vector<MemoryItem> Float64Attention::forward_memory(const ForwardPlan& p, bool grad) const {
  const ResolvedConfig& c = config_;
  const int64_t B = p.batch, L = p.query_len, S = p.given_keys, Sx = p.key_len, H = c.num_heads;
  const uint64_t f8 = sizeof(double);
  std::vector<MemoryItem> items = {
      {"the inputs' batch-first copies", saturating_bytes({B, L * c.embed_dim + S * (c.kdim + c.vdim)}, f8)},
      {"the output", saturating_bytes({B, L, c.output_dim}, f8)},
      {"one batch row's projections", saturating_bytes({L * c.q_dim() + Sx * (c.kv_dim() + c.value_kv_dim())}, f8)},
      {"one batch row's weights", saturating_bytes({H, L, Sx}, f8)},
      {"one batch row's attended values", saturating_bytes({L, c.attended_dim()}, f8)},
  };
  if (!p.weights_shape.empty()) items.push_back({"the attention weights", saturating_bytes(p.weights_shape, f8)});
  if (grad) {
    items.push_back({"the saved inputs", saturating_bytes({B, L * c.embed_dim + S * (c.kdim + c.vdim)}, f8)});
    items.push_back({"the gradients", 2 * total_bytes(float64_weight_memory(c))});
  }
  return items;
}

Float64Result Float64Attention::forward(const Float64Call& call) const {
  std::unique_ptr<Float64SavedForward> saved;
  return forward_for_training(call, saved);
}

Float64Result Float64Attention::forward_for_training(const Float64Call& call,
                                                     std::unique_ptr<Float64SavedForward>& saved) const {
  const ForwardPlan plan = this->plan(call);
  if (!loaded_) throw no_weights_error();
  // The pass reads batch-first copies (its saved state for backward, when grad asks for one).
  auto s = std::make_unique<Float64SavedForward>();
  s->plan = plan;
  s->self_attention = !call.key.present();
  s->query = batch_first(call.query, plan.sequence_first);
  s->key = batch_first(call.key, plan.sequence_first);
  s->value = batch_first(call.value, plan.sequence_first);
  s->static_k = copied(call.static_k);
  s->static_v = copied(call.static_v);
  s->options = call.options;
  s->options.key_padding_mask = copy_mask(call.options.key_padding_mask, s->key_padding_mask);
  s->options.attn_mask = copy_mask(call.options.attn_mask, s->attn_mask);
  s->weights_version = weights_version_;

  const ResolvedConfig& c = config_;
  const int64_t B = plan.batch, L = plan.query_len, Sx = plan.key_len, H = c.num_heads, O = c.output_dim;
  const Pass pass(c, params_, *s);
  Float64Result r;
  r.output_shape = plan.output_shape;
  r.output.resize(B * L * O);
  const bool weights = !plan.weights_shape.empty(), average = call.options.average_weights;
  if (weights) {
    r.weights_shape = plan.weights_shape;
    r.weights.assign(element_count(plan.weights_shape), 0.0);
  }
  for (int64_t b = 0; b < B; ++b) {
    const RowPass row = pass.row(b);
    pass.output(row, r.output.data() + b * L * O);
    if (!weights) continue;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t x = 0; x < L * Sx; ++x) {
        const double w = row.probs[h * L * Sx + x];
        if (average) r.weights[b * L * Sx + x] += w / static_cast<double>(H);
        else r.weights[(b * H + h) * L * Sx + x] = w;
      }
  }
  if (plan.sequence_first) r.output = to_batch_first(r.output.data(), swapped(plan.output_shape));  // [B, L, O] -> [L, B, O]
  if (call.options.grad) saved = std::move(s);
  return r;
}

Float64Gradients Float64Attention::backward(const Float64SavedForward& s, const double* d_output) const {
  if (s.weights_version != weights_version_)
    throw type_error("backward: the layer's weights changed since this forward pass (loadStateDict); run forward again");
  const ResolvedConfig& c = config_;
  const ForwardPlan& plan = s.plan;
  const int64_t B = plan.batch, L = plan.query_len, O = c.output_dim;
  const Doubles d_out = plan.sequence_first ? to_batch_first(d_output, plan.output_shape)
                                            : Doubles(d_output, d_output + B * L * O);
  Float64Gradients g;
  g.query = zeros_like(s.query);
  g.key = zeros_like(s.key);
  g.value = zeros_like(s.value);
  const Float64Parameters& p = params_;
  g.params = {zeros_like(p.q_weight), zeros_like(p.k_weight), zeros_like(p.v_weight), zeros_like(p.out_weight),
              zeros_like(p.q_bias),   zeros_like(p.k_bias),   zeros_like(p.v_bias),   zeros_like(p.out_bias),
              {}, {}, {}, zeros_like(p.bias_k), zeros_like(p.bias_v), {}, {}};
  const Pass pass(c, params_, s);
  for (int64_t b = 0; b < B; ++b) pass.backward(b, d_out.data() + b * L * O, g);
  if (plan.sequence_first) {  // [B, ·, F] -> [·, B, F], as the inputs came
    const auto back = [&](Doubles& d, int64_t len, int64_t features) {
      if (!d.empty()) d = to_batch_first(d.data(), Shape{B, len, features});
    };
    back(g.query, L, c.embed_dim);
    back(g.key, plan.given_keys, c.kdim);
    back(g.value, plan.given_keys, c.vdim);
  }
  return g;
}

}  // namespace mha
