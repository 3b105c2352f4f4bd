// The layer's backward pass: forward's stages in reverse (layer_stages.hpp), from dLoss/dOutput
// to the gradients of the inputs and of every parameter.
//
//   combine'  d_attended = dOut W_out,  dW_out = dOut^T attended,  db_out = sum of dOut rows
//   gate'     (config gate) through attended ⊙ sigmoid(x W_gate^T + b_gate): kernels/output_gate.hpp
//   attend'   per head, FlashAttention-2's backward (attention_kernel.hpp): dQ, dK, dV, d_sink,
//             the probabilities recomputed from the saved q, k and log-sum-exps
//   rotate'   the inverse rotation of dQ and dK (rotary's transpose)
//   project'  dX = dQ W_q (and the key's, the value's), dW_q = dQ^T X, db_q = sum of dQ rows;
//             self-attention adds the query's three uses
//
// Threads: every product is split by output rows, and the attention by (batch row, kv head, key
// chunk), each task owning its rows of dK and dV; dQ and the sink gradient are summed over the
// key chunks afterwards, in chunk order. No atomics: the bits depend on the thread count only.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "mha/layer/additive_mask.hpp"
#include "mha/layer/appended_keys.hpp"
#include "mha/steps/attention_steps.hpp"
#include "mha/plan/errors.hpp"
#include "mha/layer/layer_stages.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"
#include "mha/kernels/output_gate.hpp"
#include "mha/layer/sequence_first.hpp"

namespace mha {
namespace {

// The backward of y = x W^T + b over `rows` rows (W [out, in]): dx = dy W, dw = dy^T x,
// db = the column sums of dy. dx and db may be null (not wanted / no bias); dw null (a quantized
// layer) wants dx only.
void linear_backward(const StageRunner& run, const std::vector<float>& w, int64_t out, int64_t in, const float* x,
                     const float* dy, int64_t rows, float* dx, float* dw, float* db) {
  if (dx) run.project(kernels::PackedLinear::from_transposed(w.data(), in, out), dy, dx, rows);
  if (!dw) return;
  // dW's rows are dy's columns: the GEMM on dy^T against x^T, x's rows with a zero gradient left
  // out (a masked key's input may hold NaN, which must not reach dW as 0 * NaN).
  std::vector<uint8_t> zero_rows(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    zero_rows[r] = std::all_of(dy + r * out, dy + (r + 1) * out, [](float g) { return g == 0.0f; });
  // The transpose in 32 x 32 blocks: row by row, every write of dy^T is `rows` floats from the
  // last (a sixth of a small native step went there at the Keras tutorial's layer).
  FloatBuffer dy_t(static_cast<size_t>(out * rows));
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t o0 = 0; o0 < out; o0 += kBlock)
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r)
        for (int64_t o = o0; o < std::min(out, o0 + kBlock); ++o) dy_t[o * rows + r] = dy[r * out + o];
  run.project(kernels::PackedLinear::from_transposed(x, in, rows, zero_rows.data()), dy_t.data(), dw, out);
  if (db) {
    std::fill(db, db + out, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) db[o] += dy[r * out + o];
  }
}

float* data_or_null(std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

// A projection's float32 weights: the layer's copy, or (held quantized) dequantized for this call.
struct ProjectionWeight {
  std::vector<float> dequantized;
  const std::vector<float>& w;
  ProjectionWeight(const std::vector<float>& held, const kernels::PackedLinear& packed)
      : dequantized(held.empty() ? packed.weight() : std::vector<float>()), w(held.empty() ? dequantized : held) {}
};

}  // namespace

MultiheadAttention::TrainingForward MultiheadAttention::forward_for_training(const TensorRef& query,
                                                                             const TensorRef& key,
                                                                             const TensorRef& value,
                                                                             const ForwardOptions& options,
                                                                             const StepRequest* steps,
                                                                             std::vector<CapturedStep>* captured) const {
  ForwardOptions for_training = options;
  for_training.grad = true;  // (the plan refuses a cache then)
  const ForwardPlan planned = plan_forward(config_, query, key, value, for_training);
  // Sequence-first: everything below runs on batch-first copies; backward swaps the gradients back.
  std::optional<BatchFirstCall> batch_first;
  if (planned.sequence_first) batch_first.emplace(planned, query, key, value);
  const ForwardPlan& p = batch_first ? batch_first->plan() : planned;
  if (!loaded_) throw no_weights_error();
  const int threads = pool_ ? pool_->size() : 1;
  std::vector<MemoryItem> need = training_memory(config_, p, options, !key.present(), false, threads);
  const bool step_by_step = steps && steps->present();
  if (step_by_step)
    for (const MemoryItem& item : steps_memory(config_, p, check_steps(config_, p, *steps, true), false)) need.push_back(item);
  check_fits("the buffers", need, 0, addressable_bytes());
  const ResolvedConfig& c = config_;
  const int64_t B = p.batch, L = p.query_len, S = p.key_len;

  auto saved = std::make_unique<SavedForward>();
  SavedForward& s = *saved;
  s.layer = this;
  s.weights_version = weights_version_;
  s.plan = p;
  s.sequence_first = planned.sequence_first;
  s.self_attention = !key.present();
  const auto keep = [&](const TensorRef& t, std::vector<float>& data, Shape& shape) {
    data.assign(t.data, t.data + element_count(t.shape));
    shape = t.shape;
  };
  keep(batch_first ? batch_first->query() : query, s.query, s.query_shape);
  if (key.present()) {
    keep(batch_first ? batch_first->key() : key, s.key, s.key_shape);
    keep(batch_first ? batch_first->value() : value, s.value, s.value_shape);
  }
  s.key_padding_mask = SavedMask(options.key_padding_mask);
  s.attn_mask = SavedMask(options.attn_mask);
  if (options.positions) {
    s.positions.assign(options.positions, options.positions + element_count(options.positions_shape));
    s.positions_shape = options.positions_shape;
  }
  s.causal = options.causal;
  s.static_k = options.static_k.present();
  s.static_v = options.static_v.present();
  s.training = options.training;
  s.seed = options.seed;
  s.q = FloatBuffer(static_cast<size_t>(B * L * c.q_dim()));
  s.k = FloatBuffer(static_cast<size_t>(B * S * c.kv_dim()));
  s.v = FloatBuffer(static_cast<size_t>(B * S * c.value_kv_dim()));
  s.attended = FloatBuffer(static_cast<size_t>(B * L * c.attended_dim()));
  s.lse = FloatBuffer(static_cast<size_t>(B * c.num_heads * L));
  if (c.gate) s.gate = FloatBuffer(static_cast<size_t>(B * L * c.attended_dim()));

  TrainingForward t;
  ForwardResult& r = t.result;
  r.output_shape = p.output_shape;
  r.weights_shape = p.weights_shape;
  r.output.resize(static_cast<size_t>(element_count(p.output_shape)));
  if (options.need_weights) r.weights.resize(static_cast<size_t>(element_count(p.weights_shape)));
  const TensorRef saved_query{s.query.data(), s.query_shape};
  const TensorRef saved_key = key.present() ? TensorRef{s.key.data(), s.key_shape} : TensorRef{};
  const TensorRef saved_value = key.present() ? TensorRef{s.value.data(), s.value_shape} : TensorRef{};
  if (step_by_step) {
    r = run_steps(p, saved_query, saved_key, saved_value, options, *steps, *captured, &s);
  } else {
    run_forward(p, saved_query, saved_key, saved_value, options, r.output.data(),
                options.need_weights ? r.weights.data() : nullptr, &s);
  }
  if (s.sequence_first) {  // [B, L, F] -> [L, B, F]
    r.output = to_batch_first(r.output.data(), r.output_shape);
    r.output_shape = planned.output_shape;
  }
  t.saved = std::move(saved);
  return t;
}

Gradients MultiheadAttention::backward(const SavedForward& s, const float* d_output) const {
  if (s.layer != this) throw type_error("backward: this forward pass belongs to another layer");
  if (s.weights_version != weights_version_)
    throw type_error("backward: the layer's weights changed since this forward pass (loadStateDict); "
                     "run forward again with the new weights");
  if (d_output == nullptr) throw type_error("backward: the output gradient is missing");
  const ResolvedConfig& c = config_;
  const ForwardPlan& p = s.plan;
  // Sequence-first: dOut [L, B, outputDim] read as batch-first, the inputs' gradients swapped back at the end.
  const std::vector<float> d_output_batch_first =
      s.sequence_first ? to_batch_first(d_output, swapped(p.output_shape)) : std::vector<float>();
  if (s.sequence_first) d_output = d_output_batch_first.data();
  const int64_t B = p.batch, L = p.query_len, S = p.key_len, H = c.num_heads, Hkv = c.num_kv_heads,
                G = c.heads_per_kv();
  const int64_t E = c.embed_dim, Dh = c.head_dim, Dv = c.value_head_dim, QD = c.q_dim(), KV = c.kv_dim(),
                VKV = c.value_kv_dim(), AD = c.attended_dim(), OD = c.output_dim;
  const StageRunner run(pool_.get());
  const int threads = run.threads();
  check_fits("backward's buffers", backward_memory(c, p, threads), 0, addressable_bytes());
  const ForwardOptions options = s.options();

  Gradients g;
  AttentionParameters& dp = g.params;
  // A quantized layer gives the inputs' gradients only: its weights cannot take a float update
  // (the parameters' gradients stay empty).
  const bool parameter_gradients = !quantized();
  if (parameter_gradients) {
    dp.q_weight.resize(params_.q_weight.size());
    dp.k_weight.resize(params_.k_weight.size());
    dp.v_weight.resize(params_.v_weight.size());
    dp.out_weight.resize(params_.out_weight.size());
  }
  if (c.bias && parameter_gradients) {
    dp.q_bias.resize(static_cast<size_t>(QD));
    dp.k_bias.resize(static_cast<size_t>(KV));
    dp.v_bias.resize(static_cast<size_t>(VKV));
    dp.out_bias.resize(static_cast<size_t>(OD));
  }

  // A patched forward: the gradient stops at the heads whose values were constants.
  const auto stop_at = [](const std::vector<bool>& constant, float* rows_layout, int64_t rows, int64_t D) {
    const int64_t heads = static_cast<int64_t>(constant.size());
    for (int64_t h = 0; h < heads; ++h)
      if (constant[h])
        for (int64_t r = 0; r < rows; ++r) std::fill_n(rows_layout + r * heads * D + h * D, D, 0.0f);
  };
  // combine': through the output projection (whose input was the gated values, with a gate).
  FloatBuffer d_attended(static_cast<size_t>(B * L * AD));
  FloatBuffer gated(static_cast<size_t>(c.gate ? B * L * AD : 0));
  for (size_t i = 0; i < gated.size(); ++i) gated[i] = s.attended[i] * s.gate[i];
  linear_backward(run, ProjectionWeight(params_.out_weight, packed_.out).w, OD, AD,
                  c.gate ? gated.data() : s.attended.data(), d_output, B * L, d_attended.data(),
                  data_or_null(dp.out_weight), data_or_null(dp.out_bias));
  // gate': d_attended becomes the attended values' gradient, and the gate's logits get theirs
  // (kernels/output_gate.hpp); `gated`'s room takes the logits' gradient.
  if (c.gate) {
    if (parameter_gradients) {
      dp.gate_weight.resize(static_cast<size_t>(AD * E));
      if (c.bias) dp.gate_bias.resize(static_cast<size_t>(AD));
    }
    kernels::output_gate_backward({d_attended.data(), s.attended.data(), s.gate.data(), d_attended.data(), gated.data(),
                                   B * L * AD});
  }
  stop_at(s.constant_gate, gated.data(), B * L, Dv);
  stop_at(s.constant_z, d_attended.data(), B * L, Dv);

  // attend': tasks (batch row, kv head, key chunk). A task adds the G heads of its kv head into
  // its rows of dK and dV, and their dQ into its chunk's partial dQ (summed in order below).
  const int64_t chunks = backward_key_chunks(c, p, threads);
  const int64_t chunk_keys = (S + chunks - 1) / chunks;
  std::vector<float> dq(static_cast<size_t>(B * L * QD), 0.0f), dk(static_cast<size_t>(B * S * KV), 0.0f),
      dv(static_cast<size_t>(B * S * VKV), 0.0f);
  std::vector<float> dq_partial(static_cast<size_t>(chunks > 1 ? chunks * B * L * QD : 0), 0.0f);
  std::vector<float> d_sink_partial(static_cast<size_t>(c.sinks ? B * Hkv * chunks * G : 0), 0.0f);
  {
    AdditiveMask key_padding(options.key_padding_mask, 1, p.given_keys, S);
    AdditiveMask attn_mask(options.attn_mask, L, p.given_keys, S);
    // (The kernel reads O through its forward args' `out`; backward never writes it.)
    AttentionStage attention{c, params_, p, s.q.data(), const_cast<float*>(s.attended.data()), s.causal, key_padding,
                             attn_mask};
    attention.dropout = dropout_in(options);
    attention.seed = s.seed;
    kernels::AttentionBackwardArgs sizing{};
    sizing.forward = attention.head(0, 0, 0, L, s.k.data(), s.v.data(), KV, VKV);
    sizing.key_begin = 0;
    sizing.key_end = std::min(S, chunk_keys);
    const int64_t scratch_floats = kernels::attention_backward_scratch_floats(sizing);
    FloatBuffer scratch(static_cast<size_t>(threads * scratch_floats));
    const double flops = 10.0 * B * H * L * S * std::max(Dh, Dv);
    run.parallel(B * Hkv * chunks, flops >= StageRunner::kMinParallelFlops, [&](int64_t task, int thread) {
      const int64_t chunk = task % chunks, kvh = task / chunks % Hkv, b = task / chunks / Hkv;
      float* dq_rows = chunks > 1 ? dq_partial.data() + chunk * B * L * QD : dq.data();
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = kvh * G + g;
        kernels::AttentionBackwardArgs a{};
        a.forward = attention.head(b, h, 0, L, s.k.data() + b * S * KV + kvh * Dh, s.v.data() + b * S * VKV + kvh * Dv,
                                   KV, VKV);
        a.lse = s.lse.data() + (b * H + h) * L;
        a.d_out = d_attended.data() + b * L * AD + h * Dv;
        a.d_out_stride = AD;
        a.d_q = dq_rows + b * L * QD + h * Dh;
        a.d_q_stride = QD;
        a.d_k = dk.data() + b * S * KV + kvh * Dh;
        a.d_k_stride = KV;
        a.d_v = dv.data() + b * S * VKV + kvh * Dv;
        a.d_v_stride = VKV;
        if (c.sinks) a.d_sink = d_sink_partial.data() + ((b * Hkv + kvh) * chunks + chunk) * G + g;
        a.key_begin = chunk * chunk_keys;
        a.key_end = std::min(S, (chunk + 1) * chunk_keys);
        a.scratch = scratch.data() + thread * scratch_floats;
        if (a.key_begin < a.key_end) kernels::attention_head_backward(a);
      }
    });
  }
  for (int64_t chunk = 0; chunk < (chunks > 1 ? chunks : 0); ++chunk) {
    const float* part = dq_partial.data() + chunk * B * L * QD;
    for (int64_t i = 0; i < B * L * QD; ++i) dq[i] += part[i];
  }
  if (c.sinks && parameter_gradients) {
    dp.sinks.assign(static_cast<size_t>(H), 0.0f);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kvh = 0; kvh < Hkv; ++kvh)
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          for (int64_t g = 0; g < G; ++g) dp.sinks[kvh * G + g] += d_sink_partial[((b * Hkv + kvh) * chunks + chunk) * G + g];
  }

  stop_at(s.constant_q, dq.data(), B * L, Dh);
  stop_at(s.constant_k, dk.data(), B * S, Dh);
  stop_at(s.constant_v, dv.data(), B * S, Dv);

  // rotate': rotary's transpose takes dQ and dK back to the projections' outputs.
  rotate(p, options, s.self_attention, S, dq.data(), dk.data(), true);

  // The appended keys (add_bias_kv, add_zero_attn): bias_k's and bias_v's gradients, then the
  // given keys' rows packed for project'.
  if (c.extra_keys() > 0) {
    if (c.add_bias_kv && parameter_gradients) {
      dp.bias_k.resize(static_cast<size_t>(KV));
      dp.bias_v.resize(static_cast<size_t>(VKV));
    }
    collect_appended_gradients(c, dk.data(), dv.data(), B, S, data_or_null(dp.bias_k), data_or_null(dp.bias_v));
  }

  // Static keys or values were constants: nothing reaches the projection they replaced.
  if (s.static_k) std::fill(dk.begin(), dk.end(), 0.0f);
  if (s.static_v) std::fill(dv.begin(), dv.end(), 0.0f);

  // project': through the input projections.
  const int64_t input_rows = B * L, key_rows = B * p.given_keys;
  g.query.resize(static_cast<size_t>(input_rows * E));
  g.query_shape = s.query_shape;
  const float* key_input = s.self_attention ? s.query.data() : s.key.data();
  const float* value_input = s.self_attention ? s.query.data() : s.value.data();
  FloatBuffer dx_key(static_cast<size_t>(key_rows * c.kdim)), dx_value(static_cast<size_t>(key_rows * c.vdim));
  linear_backward(run, ProjectionWeight(params_.q_weight, packed_.q).w, QD, E, s.query.data(), dq.data(), input_rows, g.query.data(),
                  data_or_null(dp.q_weight), data_or_null(dp.q_bias));
  linear_backward(run, ProjectionWeight(params_.k_weight, packed_.k).w, KV, c.kdim, key_input, dk.data(), key_rows, dx_key.data(), data_or_null(dp.k_weight),
                  data_or_null(dp.k_bias));
  linear_backward(run, ProjectionWeight(params_.v_weight, packed_.v).w, VKV, c.vdim, value_input, dv.data(), key_rows, dx_value.data(),
                  data_or_null(dp.v_weight), data_or_null(dp.v_bias));
  if (c.gate) {  // the query's fourth use: the gate's projection
    FloatBuffer dx_gate(static_cast<size_t>(input_rows * E));
    linear_backward(run, ProjectionWeight(params_.gate_weight, packed_.gate).w, AD, E, s.query.data(), gated.data(),
                    input_rows, dx_gate.data(), data_or_null(dp.gate_weight), data_or_null(dp.gate_bias));
    for (size_t i = 0; i < g.query.size(); ++i) g.query[i] += dx_gate[i];
  }
  if (s.self_attention) {  // the one input's three uses
    for (size_t i = 0; i < g.query.size(); ++i) g.query[i] += dx_key[i] + dx_value[i];
  } else {
    g.key.assign(dx_key.data(), dx_key.data() + dx_key.size());
    g.value.assign(dx_value.data(), dx_value.data() + dx_value.size());
    g.key_shape = s.key_shape;
    g.value_shape = s.value_shape;
  }
  if (s.sequence_first) {
    for (auto [data, shape] : {std::pair{&g.query, &g.query_shape}, {&g.key, &g.key_shape}, {&g.value, &g.value_shape}}) {
      if (data->empty()) continue;
      *data = to_batch_first(data->data(), *shape);  // [B, S, F] -> [S, B, F]
      *shape = swapped(*shape);
    }
  }
  return g;
}

}  // namespace mha
