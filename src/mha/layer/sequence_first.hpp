// PyTorch's default layout, sequence-first [L, B, features] (config batch_first false), as the
// batch-first [B, L, features] every stage reads: a call's inputs are copied into that order once,
// and its output (and in training, the inputs' gradients) copied back. One copy of each tensor per
// call, against the projections' E times as many multiply-adds (docs/performance.md measures it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mha/plan/forward_plan.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

// [d0, d1, inner] -> [d1, d0, inner] (floats, or a float64 layer's doubles).
template <typename T>
void swap_leading_axes(const T* in, T* out, int64_t d0, int64_t d1, int64_t inner) {
  for (int64_t i0 = 0; i0 < d0; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1) std::copy_n(in + (i0 * d1 + i1) * inner, inner, out + (i1 * d0 + i0) * inner);
}

// A sequence-first [L, B, F] tensor's batch-first copy [B, L, F] (`from_sequence_first`), or back.
template <typename T>
std::vector<T> to_batch_first(const T* data, const Shape& sequence_first) {
  std::vector<T> out(static_cast<size_t>(element_count(sequence_first)));
  swap_leading_axes(data, out.data(), sequence_first[0], sequence_first[1], sequence_first[2]);
  return out;
}
inline Shape swapped(const Shape& s) { return {s[1], s[0], s[2]}; }

// A sequence-first call read as a batch-first one: its inputs' batch-first copies and the plan
// that goes with them (the same sizes; sequence_first false, the output [B, L, outputDim]).
class BatchFirstCall {
 public:
  BatchFirstCall(const ForwardPlan& plan, const TensorRef& query, const TensorRef& key, const TensorRef& value)
      : plan_(plan) {
    plan_.sequence_first = false;
    plan_.output_shape = swapped(plan.output_shape);
    query_ = copy(query, q_);
    key_ = copy(key, k_);
    value_ = copy(value, v_);
  }
  BatchFirstCall(const BatchFirstCall&) = delete;
  BatchFirstCall& operator=(const BatchFirstCall&) = delete;

  const ForwardPlan& plan() const { return plan_; }
  const TensorRef& query() const { return query_; }
  const TensorRef& key() const { return key_; }
  const TensorRef& value() const { return value_; }

 private:
  static TensorRef copy(const TensorRef& t, std::vector<float>& storage) {
    if (!t.present()) return {};
    storage = to_batch_first(t.data, t.shape);
    return {storage.data(), swapped(t.shape)};
  }

  ForwardPlan plan_;
  std::vector<float> q_, k_, v_;
  TensorRef query_, key_, value_;
};

}  // namespace mha
