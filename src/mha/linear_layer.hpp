// A standalone nn.Linear whose weights stay in memory between calls (JS: mha.Linear), for the
// layers a model puts around attention (MLPs, an unembedding). Its weights are packed once into
// the attention projections' format (kernels/packed_linear.hpp): float32 panels, or float16 ones
// (kernels/weight_formats.hpp's f16, widened in registers by the same kernels), and a forward runs
// the projections' GEMM / decode GEMV (StageRunner::project) on the caller's pool.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attention_config.hpp"
#include "errors.hpp"
#include "kernels/packed_linear.hpp"
#include "kernels/weight_formats.hpp"
#include "layer_stages.hpp"
#include "memory_budget.hpp"
#include "thread_pool.hpp"

namespace mha {

class LinearLayer {
 public:
  // The JS wrapper checked the sizes (at least 1) and the dtype ('f32' or 'f16').
  LinearLayer(int64_t in_features, int64_t out_features, bool bias, WeightDtype dtype)
      : in_(in_features), out_(out_features), bias_(bias), dtype_(dtype) {
    if (dtype != WeightDtype::kF32 && dtype != WeightDtype::kF16)
      throw range_error(std::string("weightDtype must be 'f32' or 'f16', got '") + weight_dtype_name(dtype) + "'");
  }

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  bool loaded() const { return loaded_; }
  // Bytes the packed weights and bias hold (0 before loadWeights).
  uint64_t weight_bytes() const { return loaded_ ? packed_.weight_bytes() : 0; }

  // What loading holds at its peak: the caller's weight (`staged_weight_bytes`: float32 or f16
  // bits) and bias copied into memory, the canonical f16 matrix (f16 only) and the packed panels.
  // Panels are counted padded to 32 columns, the widest tile of any build (an upper bound).
  std::vector<MemoryItem> load_memory(uint64_t staged_weight_bytes) const {
    const int64_t padded = (out_ + 31) / 32 * 32;
    const uint64_t element = dtype_ == WeightDtype::kF16 ? 2 : 4;
    std::vector<MemoryItem> items = {{"weight copied in", staged_weight_bytes}};
    if (bias_) items.push_back({"bias copied in", saturating_bytes({out_}, 4)});
    if (dtype_ == WeightDtype::kF16) items.push_back({"f16 matrix", saturating_bytes({out_, in_}, 2)});
    items.push_back({std::string("packed weights (") + weight_dtype_name(dtype_) + ")",
                     saturating_bytes({padded, in_}, element) + saturating_bytes({padded}, 4)});
    return items;
  }

  // weight [out, in]: float32 (`half` false) or binary16 bits (`half` true; an f16 layer only).
  // A float32 weight for an f16 layer is rounded to binary16 (weight_formats.hpp). bias [out] or null.
  void load(const void* weight, bool half, const float* bias) {
    if (bias_ != (bias != nullptr)) throw type_error(bias_ ? "bias: this layer has a bias; pass one" : "bias: this layer has no bias");
    const float* b = bias_ ? bias : nullptr;
    if (dtype_ == WeightDtype::kF32) {
      if (half) throw type_error("weight: a layer with weightDtype 'f32' takes float32 weights");
      packed_ = kernels::PackedLinear(static_cast<const float*>(weight), b, out_, in_);
    } else if (half) {
      kernels::QuantizedMatrix m;
      m.dtype = WeightDtype::kF16;
      m.out_features = out_;
      m.in_features = in_;
      m.data.resize(static_cast<size_t>(out_ * in_ * 2));
      std::memcpy(m.data.data(), weight, m.data.size());
      packed_ = kernels::PackedLinear(m, b);
    } else {
      packed_ = kernels::PackedLinear(kernels::quantize_matrix(WeightDtype::kF16, static_cast<const float*>(weight), out_, in_), b);
    }
    loaded_ = true;
  }

  // The buffers a forward of `rows` rows needs (the wrapper's copies of x and y).
  std::vector<MemoryItem> forward_memory(int64_t rows) const {
    return {{"input", saturating_bytes({rows, in_}, 4)}, {"output", saturating_bytes({rows, out_}, 4)}};
  }

  // y [rows, out] = x [rows, in] W^T + b, on `pool` (null: the calling thread).
  void forward(const float* x, float* y, int64_t rows, ThreadPool* pool) const {
    if (!loaded_) throw no_weights_error("loadWeights()");
    StageRunner(pool).project(packed_, x, y, rows);  // (f32 and f16 weights multiply float rows)
  }

 private:
  int64_t in_, out_;
  bool bias_;
  WeightDtype dtype_;
  bool loaded_ = false;
  kernels::PackedLinear packed_;
};

}  // namespace mha
