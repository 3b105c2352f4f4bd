// A float array left uninitialized: for buffers a stage writes whole before anything reads them
// (a std::vector zero-fills first; for the backward pass's megabytes per call that fill, and the
// page faults it causes natively, cost a third of a small training step: docs/performance-training.md).
// The sanitizer builds (MHA_POISON_WORKSPACE) fill it with NaN instead, so a stage that reads what
// it did not write shows in the tests.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>

namespace mha {

class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t size) : data_(new float[size]), size_(size) {
#ifdef MHA_POISON_WORKSPACE
    std::fill(data_.get(), data_.get() + size_, std::numeric_limits<float>::quiet_NaN());
#endif
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  std::unique_ptr<float[]> data_;
  size_t size_ = 0;
};

}  // namespace mha
