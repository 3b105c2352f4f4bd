// A standalone nn.Linear whose weights stay in memory between calls (JS: mha.Linear), for the
// layers a model puts around attention (MLPs, an unembedding, an embedding table). Its weights
// are packed once into the attention projections' format (kernels/packed_linear.hpp): float32
// panels, or float16 / int8 / q4 ones (kernels/weight_formats.hpp, the same QuantizedPanels and
// kernels the attention projections run), and a forward runs the projections' GEMM / decode GEMV
// (StageRunner::project) on the caller's pool. A weight comes in as float32, binary16 or bfloat16
// (a checkpoint's stored bits): int8 and q4 quantize it a row at a time, so no float32 copy of a
// 16-bit matrix is ever made.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/errors.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "mha/layer/layer_stages.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace mha {

// How the caller's weight is stored (a checkpoint's dtype): the layer's weightDtype is separate.
enum class WeightSource { kF32, kF16, kBF16 };

inline WeightSource parse_weight_source(const std::string& name) {
  if (name == "f32") return WeightSource::kF32;
  if (name == "f16") return WeightSource::kF16;
  if (name == "bf16") return WeightSource::kBF16;
  throw type_error("weight: its format must be 'f32', 'f16' or 'bf16', got '" + name + "'");
}

class LinearLayer {
 public:
  // The JS wrapper checked the sizes (at least 1) and the dtype.
  LinearLayer(int64_t in_features, int64_t out_features, bool bias, WeightDtype dtype)
      : in_(in_features), out_(out_features), bias_(bias), dtype_(dtype) {}

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  WeightDtype dtype() const { return dtype_; }
  bool loaded() const { return loaded_; }
  // Bytes the packed weights and bias hold (0 before loadWeights).
  uint64_t weight_bytes() const { return loaded_ ? packed_.weight_bytes() : 0; }

  // Bytes the packed weights of a [out, in] layer of `dtype` hold: panels padded to 32 columns,
  // the widest tile of any build (an upper bound), scales and the bias.
  static uint64_t packed_bytes(WeightDtype dtype, int64_t out, int64_t in) {
    const int64_t padded = (out + 31) / 32 * 32;
    const uint64_t bias = saturating_bytes({padded}, 4);
    switch (dtype) {
      case WeightDtype::kF16: return saturating_bytes({padded, in}, 2) + bias;
      case WeightDtype::kInt8: return saturating_bytes({padded, (in + 1) / 2 * 2}, 1) + saturating_bytes({padded}, 4) + bias;
      case WeightDtype::kQ4: {
        const int64_t blocks = kernels::q4_blocks(in);
        return saturating_bytes({padded, blocks, 16}, 1) + saturating_bytes({padded, blocks}, 4) + bias;
      }
      default: return saturating_bytes({padded, in}, 4) + bias;
    }
  }

  // What loading holds at its peak: the caller's weight (`staged_weight_bytes`: float32, f16 or
  // bf16 bits) and bias copied into memory, a float32 or canonical matrix where the format needs
  // one, and the packed panels.
  std::vector<MemoryItem> load_memory(uint64_t staged_weight_bytes, WeightSource source) const {
    std::vector<MemoryItem> items = {{"weight copied in", staged_weight_bytes}};
    if (bias_) items.push_back({"bias copied in", saturating_bytes({out_}, 4)});
    if (dtype_ == WeightDtype::kF32 && source != WeightSource::kF32) items.push_back({"f32 matrix", saturating_bytes({out_, in_}, 4)});
    if (dtype_ != WeightDtype::kF32) {
      items.push_back({std::string(weight_dtype_name(dtype_)) + " matrix",
                       static_cast<uint64_t>(kernels::QuantizedMatrix::data_bytes(dtype_, out_, in_)) +
                           4 * static_cast<uint64_t>(kernels::QuantizedMatrix::scale_count(dtype_, out_, in_))});
    }
    items.push_back({std::string("packed weights (") + weight_dtype_name(dtype_) + ")", packed_bytes(dtype_, out_, in_)});
    return items;
  }

  // weight [out, in] in `source`'s format; bias [out] or null. Any source loads into any dtype.
  void load(const void* weight, WeightSource source, const float* bias) {
    if (bias_ != (bias != nullptr)) throw type_error(bias_ ? "bias: this layer has a bias; pass one" : "bias: this layer has no bias");
    const float* b = bias_ ? bias : nullptr;
    if (dtype_ == WeightDtype::kF32) {
      if (source == WeightSource::kF32) {
        packed_ = kernels::PackedLinear(static_cast<const float*>(weight), b, out_, in_);
      } else {
        std::vector<float> w(static_cast<size_t>(out_ * in_));
        for (int64_t o = 0; o < out_; ++o) widen_row(weight, source, o, w.data() + o * in_);
        packed_ = kernels::PackedLinear(w.data(), b, out_, in_);
      }
    } else {
      packed_ = kernels::PackedLinear(canonical(weight, source), b);
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
    StageRunner(pool).project(packed_, x, y, rows);  // (every dtype multiplies float rows)
  }

  // out [n, in] = rows ids[0..n) of W as float32 (dequantized): an embedding table's lookup, read
  // from the packed panels (a tied unembedding is the embedding; no second copy is kept).
  void rows(const int32_t* ids, int64_t n, float* out) const {
    if (!loaded_) throw no_weights_error("loadWeights()");
    for (int64_t r = 0; r < n; ++r) {
      if (ids[r] < 0 || ids[r] >= out_) throw range_error("rows: id " + std::to_string(ids[r]) + " is outside [0, " + std::to_string(out_) + ")");
    }
    const int64_t p_cols = kernels::PackedLinear::panel_width();
    std::vector<float> panel;
    int64_t have = -1;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t p = ids[r] / p_cols, c = ids[r] % p_cols;
      if (packed_.quantized()) {
        if (p != have) {
          panel.resize(static_cast<size_t>(in_ * p_cols));
          packed_.quantized()->dequantize_slice(p, 0, in_, panel.data());
          have = p;
        }
        for (int64_t i = 0; i < in_; ++i) out[r * in_ + i] = panel[i * p_cols + c];
      } else {
        packed_.weight_row(ids[r], out + r * in_);
      }
    }
  }

 private:
  // Row o of the caller's weight as float32.
  void widen_row(const void* weight, WeightSource source, int64_t o, float* row) const {
    if (source == WeightSource::kF32) {
      std::memcpy(row, static_cast<const float*>(weight) + o * in_, static_cast<size_t>(in_) * 4);
      return;
    }
    const uint16_t* bits = static_cast<const uint16_t*>(weight) + o * in_;
    for (int64_t i = 0; i < in_; ++i) {
      if (source == WeightSource::kF16) {
        row[i] = kernels::half_to_float(bits[i]);
      } else {
        const uint32_t word = static_cast<uint32_t>(bits[i]) << 16;  // bfloat16 is a float32's upper half
        std::memcpy(row + i, &word, 4);
      }
    }
  }

  // The canonical layout of dtype_ (f16, int8, q4), made a row at a time from the caller's weight.
  kernels::QuantizedMatrix canonical(const void* weight, WeightSource source) const {
    kernels::QuantizedMatrix m;
    m.dtype = dtype_;
    m.out_features = out_;
    m.in_features = in_;
    m.data.resize(static_cast<size_t>(kernels::QuantizedMatrix::data_bytes(dtype_, out_, in_)));
    m.scales.resize(static_cast<size_t>(kernels::QuantizedMatrix::scale_count(dtype_, out_, in_)));
    if (dtype_ == WeightDtype::kF16 && source == WeightSource::kF16) {
      std::memcpy(m.data.data(), weight, m.data.size());  // (16-bit stays as it is)
      return m;
    }
    std::vector<float> row(static_cast<size_t>(in_));
    const int64_t blocks = kernels::q4_blocks(in_);
    std::vector<uint8_t> codes(dtype_ == WeightDtype::kQ4 ? static_cast<size_t>(blocks * kernels::kQ4Block) : 0);
    for (int64_t o = 0; o < out_; ++o) {
      widen_row(weight, source, o, row.data());
      if (dtype_ == WeightDtype::kInt8) {
        m.scales[o] = kernels::quantize_int8_row(row.data(), in_, reinterpret_cast<int8_t*>(m.data.data()) + o * in_);
      } else if (dtype_ == WeightDtype::kQ4) {
        kernels::quantize_q4_row(row.data(), in_, m.scales.data() + o * blocks, codes.data());
        uint8_t* packed = m.data.data() + o * blocks * (kernels::kQ4Block / 2);
        for (int64_t j = 0; j < blocks * kernels::kQ4Block; j += 2) packed[j / 2] = static_cast<uint8_t>(codes[j] | (codes[j + 1] << 4));
      } else {
        for (int64_t i = 0; i < in_; ++i) {
          const uint16_t h = kernels::float_to_half(row[i]);
          m.data[2 * (o * in_ + i)] = static_cast<uint8_t>(h & 0xff);
          m.data[2 * (o * in_ + i) + 1] = static_cast<uint8_t>(h >> 8);
        }
      }
    }
    return m;
  }

  int64_t in_, out_;
  bool bias_;
  WeightDtype dtype_;
  bool loaded_ = false;
  kernels::PackedLinear packed_;
};

}  // namespace mha
