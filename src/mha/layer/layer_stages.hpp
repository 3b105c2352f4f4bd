// The pieces the layer's forward pass (multihead_attention.cpp) and backward pass
// (multihead_attention_backward.cpp) share: how work goes to the thread pool, the projections'
// GEMM, and where head h's q, k, v, output, masks and score step are. One place each, so the
// two passes cannot disagree about a head's arguments.
//
// The passes, as stages with explicit inputs and outputs (ggml's flat data flow):
//   forward:  project (q, k, v = x W^T + b) -> rotate (q, k) -> attend (per head) -> combine (out_proj)
//   backward: combine' -> attend' -> rotate' (the inverse rotation) -> project' (dX, dW, db)
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "mha/layer/additive_mask.hpp"
#include "mha/plan/attention_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/layer/parameters.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace mha {

// Runs a call's work on the layer's pool, or on the calling thread when there is no pool or the
// work is too small to pay for waking it.
class StageRunner {
 public:
  // Work below ~4 MFLOP (tens of microseconds) runs on the calling thread: waking the pool costs
  // about as much in wasm, and a decode step makes five such calls (Qwen-like step at 128 cached
  // tokens: 0.56 ms with 2 threads against 0.28 ms on one, before this threshold).
  static constexpr double kMinParallelFlops = 4e6;
  // A projection of a few rows (decoding) streams its weights once and is bound by the memory
  // bandwidth, which a second thread more than doubles (bench/stream-read.mjs); it splits from
  // 256 KiB of weights on, as stored (a Qwen-like layer's 896 x 128 key projection: 448 KiB in
  // float32, 113 KiB in int8: that one stays on the calling thread).
  static constexpr double kMinParallelBytes = 1 << 18;

  explicit StageRunner(ThreadPool* pool) : pool_(pool), threads_(pool ? pool->size() : 1) {}

  int threads() const { return threads_; }
  ThreadPool* pool() const { return pool_; }

  void parallel(int64_t count, bool worth_splitting, const ThreadPool::Task& task) const {
    if (pool_ && count > 1 && worth_splitting) {
      pool_->parallel_for(count, task);
    } else {
      for (int64_t i = 0; i < count; ++i) task(i, 0);
    }
  }

  bool projection_splits(const kernels::PackedLinear& w, int64_t rows) const {
    if (rows < kernels::PackedLinear::few_rows()) return static_cast<double>(w.weight_bytes()) >= kMinParallelBytes;
    return 2.0 * rows * w.in_features() * w.out_features() >= kMinParallelFlops;
  }

  // y = x W^T + b for `rows` rows. `xq` (decoding): where x's rows are quantized once for
  // int8 and q4 weights, shared by the call's projections of the same x and by every task.
  void project(const kernels::PackedLinear& w, const float* x, float* y, int64_t rows,
               kernels::QuantizedInput* xq = nullptr) const {
    if (rows < kernels::PackedLinear::few_rows()) {  // decoding: split the weights' columns instead
      const kernels::QuantizedInput* prepared = nullptr;
      if (xq && w.takes_quantized_input()) {
        xq->prepare(x, rows, w.in_features());
        prepared = xq;
      }
      const int64_t panels = w.num_panels(), step = (panels + 2 * threads_ - 1) / (2 * threads_);
      parallel((panels + step - 1) / step, projection_splits(w, rows), [&](int64_t t, int) {
        w.apply_few_rows(x, y, rows, t * step, std::min(panels, (t + 1) * step), prepared);
      });
      return;
    }
    const int64_t step = kernels::PackedLinear::rows_per_task(rows, threads_);
    parallel((rows + step - 1) / step, projection_splits(w, rows),
             [&](int64_t t, int) { w.apply(x, y, t * step, std::min(rows, (t + 1) * step)); });
  }

 private:
  ThreadPool* pool_;
  int threads_;
};

// Query rows per attention task when `pairs` (batch row, head) pairs share `threads` threads:
// a head is split into query chunks only when there are too few pairs to keep every thread busy,
// at multiples of the flash kernel's query block (so results do not depend on the threads).
inline int64_t attention_query_chunk(int threads, int64_t pairs, int64_t L) {
  const int64_t wanted_chunks = (2 * threads + pairs - 1) / pairs;
  const int64_t block = kernels::attention_query_block();
  return (std::max<int64_t>(32, (L + wanted_chunks - 1) / wanted_chunks) + block - 1) / block * block;
}

// Where head h's attention reads and writes in one call: the projected (and rotated) q, the
// attended values, the masks, the score step and dropout. head() fills the kernel's arguments
// for a block of query rows; forward adds its scratch and weights, backward its gradients.
struct AttentionStage {
  const ResolvedConfig& c;
  const AttentionParameters& params;
  const ForwardPlan& plan;
  const float* q;    // [B*L, H*Dh]
  float* attended;   // [B*L, H*Dv]
  bool causal;
  const AdditiveMask& key_padding;
  const AdditiveMask& attn_mask;
  float* lse = nullptr;      // [B, H, L], or null
  float dropout = 0.0f;      // p when dropout applies in this call, else 0
  uint64_t seed = 0;
  bool weights_before_dropout = false;

  // Query rows first .. first + rows - 1 of head h of batch row b, against keys k / values v
  // (row strides k_stride / v_stride).
  kernels::AttentionHeadArgs head(int64_t b, int64_t h, int64_t first, int64_t rows, const float* k, const float* v,
                                  int64_t k_stride, int64_t v_stride) const {
    const int64_t L = plan.query_len, S = plan.key_len, H = c.num_heads;
    kernels::AttentionHeadArgs a{};
    a.q = q + (b * L + first) * c.q_dim() + h * c.head_dim;
    a.k = k;
    a.v = v;
    a.k_stride = k_stride;
    a.v_stride = v_stride;
    a.out = attended + (b * L + first) * c.attended_dim() + h * c.value_head_dim;
    a.q_stride = c.q_dim();
    a.out_stride = c.attended_dim();
    a.query_len = rows;
    a.key_len = S;
    a.head_dim = c.head_dim;
    a.value_head_dim = c.value_head_dim;
    a.scale = c.scale;
    a.causal = causal;
    a.epilogue.window = c.sliding_window;
    a.epilogue.softcap = c.softcap;
    if (!c.alibi_slopes.empty()) a.epilogue.alibi_slope = c.alibi_slopes[h];
    if (c.sinks) a.epilogue.sink = params.sinks[h];
    a.first_query = plan.first_position + first;
    a.key_bias = key_padding.rows(b);
    const float* mask_rows = attn_mask.rows(plan.attn_mask_per_head ? b * H + h : 0);
    a.attn_bias = mask_rows ? mask_rows + first * S : nullptr;
    if (lse) a.lse = lse + (b * H + h) * L + first;
    if (dropout > 0.0f) a.dropout = {dropout, seed, static_cast<uint64_t>(b * H + h)};
    a.weights_before_dropout = weights_before_dropout;
    return a;
  }
};

}  // namespace mha
