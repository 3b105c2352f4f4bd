// libFuzzer target over the C++ API (built with ASan + UBSan; see tests/fuzz/README.md).
//
// Each input decodes into one layer configuration, one state dict and one forward call.
// The harness decides by itself whether what it built is valid, then checks:
//   - invalid configs, state dicts and shapes throw mha::ArgumentError, never anything else;
//   - valid ones never throw;
//   - with finite inputs of moderate size (and NaN/Inf only at key positions every query has
//     masked out) the layer agrees with the double-precision reference below, element by element.
// Any other exception, a sanitizer report or a failed check aborts: libFuzzer records a crash.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "mha/plan/errors.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mha_fuzz: %s\n", what.c_str());
  std::abort();
}

// Runs `f`; checks that it throws ArgumentError exactly when `should_fail`. Returns true if it threw.
template <typename F>
bool expect_outcome(const char* stage, bool should_fail, F&& f) {
  try {
    f();
  } catch (const mha::ArgumentError& e) {
    if (!should_fail) fail(std::string(stage) + ": valid input rejected: " + e.what());
    return true;
  }
  if (should_fail) fail(std::string(stage) + ": invalid input accepted");
  return false;
}

// How the values of one call are drawn.
enum class Values {
  kModerate,  // multiples of 1/64 in [-2, 2): results must match the reference
  kPoisoned,  // moderate, but NaN/Inf in key/value rows that the key-padding mask hides
  kSpecial,   // anything: NaN, +-Inf, denormals, huge and tiny; only "no crash" is checked
};

float special_value(FuzzedDataProvider& in) {
  static const float kPalette[] = {kNaN, kInf, -kInf, 1e-42f /* denormal */, -1e-42f,
                                   std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                   1e30f, -1e30f, 1e-30f, 0.0f, -0.0f, 1.0f, -1.0f};
  return in.PickValueInArray(kPalette);
}

float draw(FuzzedDataProvider& in, Values mode, float unit) {
  if (mode == Values::kSpecial && in.ConsumeIntegralInRange(0, 3) == 0) return special_value(in);
  return static_cast<float>(in.ConsumeIntegral<int8_t>()) * unit;
}

std::vector<float> values(FuzzedDataProvider& in, int64_t n, Values mode, float unit) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = draw(in, mode, unit);
  return v;
}

// A tensor the harness owns. Shapes may be invalid; the buffer always matches the shape when
// the shape is small, and is absent (null data) when the shape is absurd.
struct Buffer {
  mha::Shape shape;
  std::vector<float> f32;
  std::vector<uint8_t> u8;
  bool is_bool = false;

  static int64_t small_count(const mha::Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) {
      if (d < 0 || d > 4096) return -1;
      n *= d;
    }
    return n <= 65536 ? n : -1;
  }
  const void* data() const {
    if (small_count(shape) < 0) return nullptr;
    return is_bool ? static_cast<const void*>(u8.data()) : static_cast<const void*>(f32.data());
  }
  mha::TensorRef tensor() const { return {static_cast<const float*>(data()), shape}; }
  mha::MaskRef mask() const {
    return {is_bool ? mha::MaskType::kBool : mha::MaskType::kFloat, data(), shape};
  }
};

// One way to break a shape that is invalid whatever the other sizes are.
void corrupt(FuzzedDataProvider& in, mha::Shape& shape, size_t dim_always_checked) {
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: shape[dim_always_checked] += 1; break;
    case 1: shape[dim_always_checked] = -shape[dim_always_checked] - 1; break;
    case 2: shape[dim_always_checked] = int64_t{1} << 62; break;  // element counts overflow int64
    case 3: shape.push_back(1); shape.push_back(1); break;       // rank + 2 is never accepted
    default: shape.clear(); break;                               // rank 0
  }
}

// The forward pass in double precision, written from the definition (PyTorch's
// nn.MultiheadAttention, batch_first): a key whose total mask bias is -inf is ignored; a query
// row with every key ignored attends to nothing (zeros, zero weights).
struct Reference {
  std::vector<double> output, weights;
};

Reference reference_forward(const mha::ResolvedConfig& c, const mha::AttentionParameters& p, const mha::ForwardPlan& plan,
                            const float* query, const float* key, const float* value, const mha::ForwardOptions& o) {
  const int64_t B = plan.batch, L = plan.query_len, S = plan.key_len, E = c.embed_dim, H = c.num_heads;
  const int64_t Dh = c.head_dim, KV = c.kv_dim();
  auto project = [](const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t rows, int64_t in,
                    int64_t out) {
    std::vector<double> y(static_cast<size_t>(rows * out));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = b.empty() ? 0.0 : b[o];
        for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[r * in + i]) * w[o * in + i];
        y[r * out + o] = s;
      }
    return y;
  };
  const std::vector<double> q = project(query, p.q_weight, p.q_bias, B * L, E, E);
  const std::vector<double> k = project(key, p.k_weight, p.k_bias, B * S, c.kdim, KV);
  const std::vector<double> v = project(value, p.v_weight, p.v_bias, B * S, c.vdim, KV);
  auto mask_bias = [](const mha::MaskRef& m, int64_t index) -> double {
    if (!m.present()) return 0.0;
    if (m.type == mha::MaskType::kBool) return static_cast<const uint8_t*>(m.data)[index] ? -INFINITY : 0.0;
    return static_cast<const float*>(m.data)[index];
  };

  Reference r;
  std::vector<double> attended(static_cast<size_t>(B * L * E), 0.0);
  if (o.need_weights) r.weights.assign(static_cast<size_t>(mha::element_count(plan.weights_shape)), 0.0);
  std::vector<double> score(static_cast<size_t>(S));
  std::vector<bool> used(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / (H / c.num_kv_heads);
      for (int64_t i = 0; i < L; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          const int64_t mask_row = plan.attn_mask_per_head ? b * H + h : 0;
          const double bias = (o.causal && j > i ? -INFINITY : 0.0) + mask_bias(o.key_padding_mask, b * S + j) +
                              mask_bias(o.attn_mask, (mask_row * L + i) * S + j);
          used[j] = bias != -INFINITY;
          if (!used[j]) continue;
          double dot = 0.0;
          for (int64_t d = 0; d < Dh; ++d) dot += q[(b * L + i) * E + h * Dh + d] * k[(b * S + j) * KV + kvh * Dh + d];
          score[j] = dot * c.scale + bias;
          if (score[j] > max) max = score[j];
        }
        if (max == -INFINITY) continue;
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) sum += used[j] ? std::exp(score[j] - max) : 0.0;
        for (int64_t j = 0; j < S; ++j) {
          if (!used[j]) continue;
          const double prob = std::exp(score[j] - max) / sum;
          for (int64_t d = 0; d < Dh; ++d) attended[(b * L + i) * E + h * Dh + d] += prob * v[(b * S + j) * KV + kvh * Dh + d];
          if (o.need_weights) {
            if (o.average_weights)
              r.weights[(b * L + i) * S + j] += prob / static_cast<double>(H);
            else
              r.weights[((b * H + h) * L + i) * S + j] = prob;
          }
        }
      }
    }
  // The output projection in double, from the double attended values.
  r.output.assign(static_cast<size_t>(B * L * E), 0.0);
  for (int64_t row = 0; row < B * L; ++row)
    for (int64_t e = 0; e < E; ++e) {
      double s = p.out_bias.empty() ? 0.0 : p.out_bias[e];
      for (int64_t i = 0; i < E; ++i) s += attended[row * E + i] * p.out_weight[e * E + i];
      r.output[row * E + e] = s;
    }
  return r;
}

void expect_close(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) fail(std::string(what) + ": size differs from the reference");
  double magnitude = 0.0;
  for (double w : want) magnitude = std::fmax(magnitude, std::fabs(w));
  const double tolerance = 2e-4 * (1.0 + magnitude);
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tolerance))  // also catches NaN
      fail(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", reference " +
           std::to_string(want[i]) + " (tolerance " + std::to_string(tolerance) + ")");
}

void run(FuzzedDataProvider& in) {
  // ---- configuration ----
  mha::AttentionConfig config;
  const int64_t H = in.ConsumeIntegralInRange(1, 4), Dh = in.ConsumeIntegralInRange(1, 4);
  config.num_heads = H;
  config.embed_dim = H * Dh;
  config.kdim = in.ConsumeIntegralInRange(0, 6);  // 0 means embedDim
  config.vdim = in.ConsumeIntegralInRange(0, 6);
  config.bias = in.ConsumeBool();
  const int64_t divisors[] = {1, 2, 4};
  config.num_kv_heads = in.ConsumeBool() ? 0 : in.PickValueInArray(divisors);
  bool config_ok = config.num_kv_heads == 0 || H % config.num_kv_heads == 0;
  bool moderate_scale = true;
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0: config.scale = 0.5f; break;
    case 1: config.scale = -1.0f; break;
    case 2:
      config.scale = special_value(in);
      config_ok = config_ok && std::isfinite(*config.scale);
      moderate_scale = std::fabs(*config.scale) <= 1.0f;
      break;
    default: break;  // 1/sqrt(Dh)
  }
  switch (in.ConsumeIntegralInRange(0, 15)) {  // sometimes break a rule
    case 0: config.embed_dim += 1; config_ok = config_ok && H == 1; break;  // H must divide E
    case 1: config.embed_dim = -config.embed_dim; config_ok = false; break;
    case 2: config.kdim = -1; config_ok = false; break;
    case 3: config.num_kv_heads = -2; config_ok = false; break;
    case 4: config.num_heads = 0; config_ok = false; break;
    default: break;
  }
  std::unique_ptr<mha::MultiheadAttention> layer;
  if (expect_outcome("config", !config_ok, [&] { layer = std::make_unique<mha::MultiheadAttention>(config); })) return;
  const mha::ResolvedConfig& c = layer->config();

  // ---- state dict ----
  const Values mode = static_cast<Values>(in.ConsumeIntegralInRange(0, 2));
  std::vector<std::vector<float>> storage;
  mha::StateDict state;
  for (const auto& [name, shape] : mha::state_dict_layout(c)) {
    storage.push_back(values(in, mha::element_count(shape), mode == Values::kSpecial ? mode : Values::kModerate, 1.0f / 256));
    state[name] = {storage.back().data(), static_cast<int64_t>(storage.back().size())};
  }
  bool state_ok = true;
  switch (in.ConsumeIntegralInRange(0, 11)) {
    case 0: state.erase(state.begin()); state_ok = false; break;
    case 1: state.begin()->second.length -= 1; state_ok = false; break;
    case 2: state["bias_k"] = state.begin()->second; state_ok = false; break;
    case 3: if (!c.bias) { state["out_proj.bias"] = state.begin()->second; state_ok = false; } break;
    default: break;
  }
  if (expect_outcome("loadStateDict", !state_ok, [&] { layer->load_state_dict(state); })) return;
  // Half the calls split their work across a pool of 3 threads (ASan sees every thread).
  static const auto pool = std::make_shared<mha::ThreadPool>(3);
  if (in.ConsumeBool()) layer->set_thread_pool(pool);

  // ---- inputs ----
  const bool batched = in.ConsumeBool();
  const int64_t B = batched ? in.ConsumeIntegralInRange(1, 3) : 1, L = in.ConsumeIntegralInRange(1, 5),
                S = in.ConsumeIntegralInRange(1, 5);
  const bool can_self_attend = c.kdim == c.embed_dim && c.vdim == c.embed_dim;
  const bool self_attention = in.ConsumeIntegralInRange(0, 3) == 0;
  const int64_t key_len = self_attention ? L : S;
  auto shape = [&](std::initializer_list<int64_t> dims) {
    mha::Shape s(dims);
    if (!batched) s.erase(s.begin());
    return s;
  };
  Buffer query{shape({B, L, c.embed_dim})}, key{shape({B, S, c.kdim})}, value{shape({B, S, c.vdim})};
  Buffer key_padding, attn_mask;
  mha::ForwardOptions options;
  options.causal = in.ConsumeBool();
  options.need_weights = in.ConsumeBool();
  options.average_weights = in.ConsumeBool();
  bool masks_moderate = true;
  auto fill_mask = [&](Buffer& m, const mha::Shape& s) {
    m.shape = s;
    m.is_bool = in.ConsumeBool();
    const int64_t n = mha::element_count(s);
    const int blocked_percent = in.ConsumeIntegralInRange(0, 100);
    for (int64_t i = 0; i < n; ++i) {
      const bool blocked = in.ConsumeIntegralInRange(0, 99) < blocked_percent;
      if (m.is_bool) {
        m.u8.push_back(blocked ? in.ConsumeIntegralInRange<uint8_t>(1, 255) : 0);  // any nonzero byte is true
      } else if (mode == Values::kSpecial) {
        m.f32.push_back(blocked ? -kInf : draw(in, mode, 1.0f / 16));
        masks_moderate = masks_moderate && std::isfinite(m.f32.back());
      } else {
        m.f32.push_back(blocked ? -kInf : static_cast<float>(in.ConsumeIntegralInRange(-64, 64)) / 16);
      }
    }
  };
  const bool has_key_padding = in.ConsumeBool() || mode == Values::kPoisoned;
  if (has_key_padding) fill_mask(key_padding, shape({B, key_len}));
  options.key_padding_mask = has_key_padding ? key_padding.mask() : mha::MaskRef{};
  if (in.ConsumeBool()) {
    fill_mask(attn_mask, in.ConsumeBool() ? mha::Shape{L, key_len} : mha::Shape{B * H, L, key_len});
    if (!batched && attn_mask.shape.size() == 3) attn_mask.shape[0] = H;
    options.attn_mask = attn_mask.mask();
  }

  bool inputs_ok = !self_attention || can_self_attend;
  switch (in.ConsumeIntegralInRange(0, 9)) {  // sometimes break a shape in a way no sizes can excuse
    case 0: corrupt(in, query.shape, query.shape.size() - 1); inputs_ok = false; break;
    case 1: if (!self_attention) { corrupt(in, key.shape, key.shape.size() - 1); inputs_ok = false; } break;
    case 2: if (!self_attention) { corrupt(in, value.shape, value.shape.size() - 1); inputs_ok = false; } break;
    case 3: if (has_key_padding) { corrupt(in, key_padding.shape, key_padding.shape.size() - 1); inputs_ok = false; options.key_padding_mask = key_padding.mask(); } break;
    case 4: if (options.attn_mask.present()) { corrupt(in, attn_mask.shape, attn_mask.shape.size() - 1); inputs_ok = false; options.attn_mask = attn_mask.mask(); } break;
    case 5: if (self_attention && batched) { query.shape[0] = int64_t{1} << 62; inputs_ok = false; } break;  // absurd batch, no data
    default: break;
  }

  const bool finite_scores = mode != Values::kSpecial && moderate_scale && masks_moderate;
  query.f32 = values(in, std::max<int64_t>(Buffer::small_count(query.shape), 0), mode == Values::kSpecial ? mode : Values::kModerate, 1.0f / 64);
  if (!self_attention) {
    key.f32 = values(in, std::max<int64_t>(Buffer::small_count(key.shape), 0), mode == Values::kSpecial ? mode : Values::kModerate, 1.0f / 64);
    value.f32 = values(in, std::max<int64_t>(Buffer::small_count(value.shape), 0), mode == Values::kSpecial ? mode : Values::kModerate, 1.0f / 64);
  }
  if (mode == Values::kPoisoned && inputs_ok && !self_attention) {
    // Padding: a key masked out by keyPaddingMask is never read, so poison its rows.
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < S; ++j) {
        const bool padded = key_padding.is_bool ? key_padding.u8[b * S + j] != 0 : key_padding.f32[b * S + j] == -kInf;
        if (!padded) continue;
        for (int64_t d = 0; d < c.kdim; ++d) key.f32[(b * S + j) * c.kdim + d] = in.ConsumeBool() ? kNaN : kInf;
        for (int64_t d = 0; d < c.vdim; ++d) value.f32[(b * S + j) * c.vdim + d] = in.ConsumeBool() ? kNaN : -kInf;
      }
  }

  const mha::TensorRef q = query.tensor(), k = self_attention ? mha::TensorRef{} : key.tensor(),
                       v = self_attention ? mha::TensorRef{} : value.tensor();
  mha::ForwardResult result;
  if (expect_outcome("forward", !inputs_ok, [&] { result = layer->forward(q, k, v, options); })) return;

  const mha::ForwardPlan plan = layer->plan(q, k, v, options);
  if (result.output_shape != plan.output_shape || result.weights_shape != plan.weights_shape)
    fail("result shapes differ from the plan");
  if (!finite_scores) return;
  const Reference want = reference_forward(c, layer->parameters(), plan, q.data, self_attention ? q.data : k.data,
                                           self_attention ? q.data : v.data, options);
  expect_close("output", result.output, want.output);
  if (options.need_weights) expect_close("weights", result.weights, want.weights);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  run(in);
  return 0;
}
