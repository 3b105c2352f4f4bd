#include "packed_linear.hpp"

#include <algorithm>

#include "kernel_choice.hpp"
#include "quantized_gemv.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

using simd::Vec;
constexpr int kRows = simd::kTileRows, kCols = simd::kTileCols, kW = simd::kWidth;
constexpr int64_t kDepthBlock = 4096 / kCols;  // in_features per pass: a 16 KB panel slice stays in L1
constexpr int64_t kMaxRowBlock = 120;  // divisible by 4, 6 and 8
// apply_few_rows' depth steps per pass over a lone panel: 6 chains in wasm (as its three-panel
// loop: 6 accumulators + loads + broadcasts within V8's 15 registers), 8 natively.
#if defined(__wasm__)
constexpr int kRemainderDepth = 3;
#else
constexpr int kRemainderDepth = 4;
#endif

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

}  // namespace

PackedLinear::PackedLinear(const float* weight, const float* bias, int64_t out_features, int64_t in_features)
    : in_(in_features), out_(out_features) {
  const int64_t padded = round_up(out_, kCols);
  panels_.assign(static_cast<size_t>(padded * in_), 0.0f);
  bias_.assign(static_cast<size_t>(padded), 0.0f);
  for (int64_t o = 0; o < out_; ++o) {
    float* panel = panels_.data() + (o / kCols) * in_ * kCols + o % kCols;
    const float* w = weight + o * in_;
    for (int64_t i = 0; i < in_; ++i) panel[i * kCols] = w[i];
    if (bias) bias_[o] = bias[o];
  }
}

PackedLinear::PackedLinear(const QuantizedMatrix& weight, const float* bias)
    : in_(weight.in_features), out_(weight.out_features), quantized_(std::make_shared<QuantizedPanels>(weight)) {
  bias_.assign(static_cast<size_t>(round_up(out_, kCols)), 0.0f);
  if (bias) std::copy(bias, bias + out_, bias_.begin());
}

uint64_t PackedLinear::weight_bytes() const {
  return (quantized_ ? quantized_->bytes() : panels_.size() * sizeof(float)) + static_cast<uint64_t>(out_) * sizeof(float);
}

std::vector<float> PackedLinear::weight() const {
  if (quantized_) return quantized_->dequantized();
  std::vector<float> w(static_cast<size_t>(out_ * in_));
  for (int64_t o = 0; o < out_; ++o)
    for (int64_t i = 0; i < in_; ++i) w[o * in_ + i] = panels_[(o / kCols) * in_ * kCols + i * kCols + o % kCols];
  return w;
}

void PackedLinear::weight_row(int64_t o, float* out) const {
  const float* panel = panels_.data() + (o / kCols) * in_ * kCols + o % kCols;
  for (int64_t i = 0; i < in_; ++i) out[i] = panel[i * kCols];
}

int64_t PackedLinear::panel_width() { return kCols; }

PackedLinear PackedLinear::from_transposed(const float* weight_t, int64_t out_features, int64_t in_features,
                                          const uint8_t* zero_inputs) {
  PackedLinear p;
  p.in_ = in_features;
  p.out_ = out_features;
  const int64_t padded = round_up(out_features, kCols);
  p.panels_.assign(static_cast<size_t>(padded * in_features), 0.0f);
  p.bias_.assign(static_cast<size_t>(padded), 0.0f);
  for (int64_t i = 0; i < in_features; ++i) {
    if (zero_inputs && zero_inputs[i]) continue;
    const float* w = weight_t + i * out_features;  // W[.][i], contiguous in the source
    for (int64_t o = 0; o < out_features; ++o) p.panels_[(o / kCols) * in_features * kCols + i * kCols + o % kCols] = w[o];
  }
  return p;
}

// One thread: two tasks (or more, of at most kMaxRowBlock rows, so a task's x rows stay in L2).
// Several: the pool hands tasks out one by one, so a call lasts about ceil(tasks / threads)
// tasks; the step (a multiple of the tile rows, at most kMaxRowBlock) that makes that least, at
// least two tasks per thread where the rows allow. 512 rows on 2 threads: 8 x 64 rows, 256 per
// thread, where the cap alone (5 x 120) left one thread 272 and the other 240.
int64_t PackedLinear::rows_per_task(int64_t rows, int threads) {
  if (threads <= 1) return std::clamp(round_up((rows + 1) / 2, kRows), int64_t{kRows}, kMaxRowBlock);
  int64_t best = kRows, best_span = -1;
  for (int64_t step = kRows; step <= kMaxRowBlock; step += kRows) {
    const int64_t tasks = (rows + step - 1) / step;
    if (step > kRows && tasks < 2 * threads) break;  // larger steps only make fewer tasks
    // The busiest thread's rows, tasks taken in turn: ceil(tasks / threads) whole ones, unless
    // it is the only thread with that many and its last is the short final task.
    const int64_t rounds = (tasks + threads - 1) / threads, last = rows - (tasks - 1) * step;
    const int64_t span = tasks % threads == 1 ? (rounds - 1) * step + last : rounds * step;
    if (best_span < 0 || span <= best_span) best = step, best_span = span;  // ties: the larger step
  }
  return best;
}

void PackedLinear::apply(const float* x, float* y, int64_t row_begin, int64_t row_end) const {
  apply(x, y, row_begin, row_end, KernelChoice::process().gemm());
}

// Depth block by depth block, panel by panel: every row of the range against the panel's block in
// the variant's register tiles (gemm_panel.hpp), the bias fused into the first block's start.
void PackedLinear::apply(const float* x, float* y, int64_t row_begin, int64_t row_end, const GemmVariant& variant) const {
  const int64_t num_panels = round_up(out_, kCols) / kCols;
  // Quantized weights: each panel slice is dequantized once per call into this buffer (16 KB,
  // in L1) and used for every row of the call's tiles.
  std::vector<float> slice(quantized_ ? static_cast<size_t>(std::min(kDepthBlock, in_) * kCols) : 0);
  for (int64_t k0 = 0; k0 < in_; k0 += kDepthBlock) {
    const int64_t depth = std::min(kDepthBlock, in_ - k0);
    for (int64_t p = 0; p < num_panels; ++p) {
      const float* panel = slice.data();
      if (quantized_) {
        quantized_->dequantize_slice(p, k0, depth, slice.data());
      } else {
        panel = panels_.data() + (p * in_ + k0) * kCols;
      }
      const int64_t col0 = p * kCols;
      variant.panel({x + k0, in_, y + col0, out_, panel, bias_.data() + col0, std::min<int64_t>(kCols, out_ - col0), depth,
                     k0 == 0, row_begin, row_end});
    }
  }
}

int64_t PackedLinear::few_rows() { return kRows; }

int64_t PackedLinear::num_panels() const { return round_up(out_, kCols) / kCols; }

void PackedLinear::apply_few_rows_quantizing(const float* x, float* y, int64_t rows, int64_t panel_begin,
                                             int64_t panel_end) const {
  QuantizedInput own;  // (f16 multiplies x's floats: its rows stay empty)
  if (takes_quantized_input()) own.prepare(x, rows, in_);
  apply_few_rows(x, y, rows, panel_begin, panel_end, &own);
}

bool PackedLinear::takes_quantized_input() const {
  return quantized_ && quantized_->dtype() != WeightDtype::kF16;
}

// Fewer rows than a micro-tile has (decoding: one token per call). Each panel is read once and
// used for every row, so the weights stream at memory speed; one row keeps 6 (wasm) or 8
// independent accumulator chains (mul + add latency would otherwise bound it).
void PackedLinear::apply_few_rows(const float* x, float* y, int64_t rows, int64_t panel_begin,
                                  int64_t panel_end, const QuantizedInput* xq) const {
  const auto store_row = [&](int64_t r, int64_t p, Vec lo, Vec hi) {
    const int64_t col0 = p * kCols, cols = std::min<int64_t>(kCols, out_ - col0);
    alignas(64) float out[kCols];
    simd::store(out, lo + simd::load(bias_.data() + col0));
    simd::store(out + kW, hi + simd::load(bias_.data() + col0 + kW));
    std::copy(out, out + cols, y + r * out_ + col0);
  };
  if (quantized_) {
    // Each row quantized once (by the caller for the whole call, or here); then panel by panel,
    // every row against the panel while it is in L1 (the weights stream from memory once).
    static_assert(QuantizedInput::kMaxRows >= kRows, "QuantizedInput holds a few-rows call");
    if (!xq) {
      // (In a call of its own: with the input on this function's stack, V8 ran the int8 GEMV
      // 4x slower, 896 x 896 weights in wasm.)
      apply_few_rows_quantizing(x, y, rows, panel_begin, panel_end);
      return;
    }
    if (rows == 1) {  // (one call for the range: a call per panel cost a Qwen-like step 3%)
      quantized_gemv(*quantized_, x, xq->row[0], bias_.data(), y, panel_begin, panel_end);
      return;
    }
    for (int64_t p = panel_begin; p < panel_end; ++p)
      for (int64_t r = 0; r < rows; ++r)
        quantized_gemv(*quantized_, x + r * in_, xq->row[r], bias_.data(), y + r * out_, p, p + 1);
    return;
  }
  int64_t p = panel_begin;
#if defined(__wasm__)
  if (rows == 1) {
    // wasm: three panels at a time, one depth step each: 6 accumulator chains over three weight
    // streams, and 6 accumulators + 6 loads + 1 broadcast = 13 live vectors, within V8's 15.
    // The former two panels x two depth steps (8 accumulators and 8 loads in flight) made V8
    // spill two accumulators to the stack every step: wasm, one thread, A/B interleaved,
    // 768 x 2304 weights 47 -> 61 GB/s, 2048 x 2048 45 -> 60 GB/s.
    for (; p + 3 <= panel_end; p += 3) {
      const float* w0 = panels_.data() + p * in_ * kCols;
      const float* w1 = w0 + in_ * kCols;
      const float* w2 = w1 + in_ * kCols;
      Vec a0(0.0f), a1(0.0f), b0(0.0f), b1(0.0f), c0(0.0f), c1(0.0f);
      for (int64_t k = 0; k < in_; ++k, w0 += kCols, w1 += kCols, w2 += kCols) {
        const Vec xk = simd::splat(x[k]);
        a0 = simd::fmadd(xk, simd::load(w0), a0);
        a1 = simd::fmadd(xk, simd::load(w0 + kW), a1);
        b0 = simd::fmadd(xk, simd::load(w1), b0);
        b1 = simd::fmadd(xk, simd::load(w1 + kW), b1);
        c0 = simd::fmadd(xk, simd::load(w2), c0);
        c1 = simd::fmadd(xk, simd::load(w2 + kW), c1);
      }
      store_row(0, p, a0, a1);
      store_row(0, p + 1, b0, b1);
      store_row(0, p + 2, c0, c1);
    }
  }
#else
  if (rows == 1) {  // two panels at a time, two depth steps each: 8 chains, two weight streams
    // (natively, with 16 or 32 vector registers and FMA: 75-82 GB/s against 57 for wasm's loop)
    for (; p + 2 <= panel_end; p += 2) {
      const float* w0 = panels_.data() + p * in_ * kCols;
      const float* w1 = w0 + in_ * kCols;
      Vec a0(0.0f), a1(0.0f), b0(0.0f), b1(0.0f), c0(0.0f), c1(0.0f), d0(0.0f), d1(0.0f);
      int64_t k = 0;
      for (; k + 2 <= in_; k += 2) {
        const Vec x0 = simd::splat(x[k]), x1 = simd::splat(x[k + 1]);
        const float* u = w0 + k * kCols;
        const float* v = w1 + k * kCols;
        a0 = simd::fmadd(x0, simd::load(u), a0);
        a1 = simd::fmadd(x0, simd::load(u + kW), a1);
        b0 = simd::fmadd(x1, simd::load(u + kCols), b0);
        b1 = simd::fmadd(x1, simd::load(u + kCols + kW), b1);
        c0 = simd::fmadd(x0, simd::load(v), c0);
        c1 = simd::fmadd(x0, simd::load(v + kW), c1);
        d0 = simd::fmadd(x1, simd::load(v + kCols), d0);
        d1 = simd::fmadd(x1, simd::load(v + kCols + kW), d1);
      }
      for (; k < in_; ++k) {
        const Vec xk = simd::splat(x[k]);
        a0 = simd::fmadd(xk, simd::load(w0 + k * kCols), a0);
        a1 = simd::fmadd(xk, simd::load(w0 + k * kCols + kW), a1);
        c0 = simd::fmadd(xk, simd::load(w1 + k * kCols), c0);
        c1 = simd::fmadd(xk, simd::load(w1 + k * kCols + kW), c1);
      }
      store_row(0, p, a0 + b0, a1 + b1);
      store_row(0, p + 1, c0 + d0, c1 + d1);
    }
  }
#endif
  // One row's last panels (a range that is not a multiple of three or two: a thread's share, or
  // a 128-wide key projection's 16 wasm panels): one panel at a time, kRemainderDepth depth steps
  // at once so 2 x kRemainderDepth accumulator chains hide the add latency, where the general
  // loop's 2 chains waited on it every step (about 3x slower per byte in wasm).
  for (; rows == 1 && p < panel_end; ++p) {
    constexpr int kSteps = kRemainderDepth;
    const float* w = panels_.data() + p * in_ * kCols;
    Vec lo[kSteps], hi[kSteps];
    for (int t = 0; t < kSteps; ++t) lo[t] = hi[t] = Vec(0.0f);
    int64_t k = 0;
    for (; k + kSteps <= in_; k += kSteps, w += kSteps * kCols) {
      for (int t = 0; t < kSteps; ++t) {
        const Vec xk = simd::splat(x[k + t]);
        lo[t] = simd::fmadd(xk, simd::load(w + t * kCols), lo[t]);
        hi[t] = simd::fmadd(xk, simd::load(w + t * kCols + kW), hi[t]);
      }
    }
    for (; k < in_; ++k, w += kCols) {
      const Vec xk = simd::splat(x[k]);
      lo[0] = simd::fmadd(xk, simd::load(w), lo[0]);
      hi[0] = simd::fmadd(xk, simd::load(w + kW), hi[0]);
    }
    for (int t = 1; t < kSteps; ++t) lo[0] += lo[t], hi[0] += hi[t];
    store_row(0, p, lo[0], hi[0]);
  }
  for (; p < panel_end; ++p) {  // the general case: every row against one panel
    const float* panel = panels_.data() + p * in_ * kCols;
    Vec acc[kRows][2];
    for (int64_t r = 0; r < rows; ++r) acc[r][0] = acc[r][1] = Vec(0.0f);
    for (int64_t k = 0; k < in_; ++k) {
      const Vec w0 = simd::load(panel + k * kCols), w1 = simd::load(panel + k * kCols + kW);
      for (int64_t r = 0; r < rows; ++r) {
        const Vec a = simd::splat(x[r * in_ + k]);
        acc[r][0] = simd::fmadd(a, w0, acc[r][0]);
        acc[r][1] = simd::fmadd(a, w1, acc[r][1]);
      }
    }
    for (int64_t r = 0; r < rows; ++r) store_row(r, p, acc[r][0], acc[r][1]);
  }
}

}  // namespace mha::kernels
