#include "linear_handle.hpp"

#include "heap.hpp"
#include "module_pool.hpp"
#include "request_keys.hpp"

namespace mha_embind {

LinearHandle::LinearHandle(double in_features, double out_features, bool bias, std::string dtype) {
  guard([&] {
    layer_ = std::make_unique<mha::LinearLayer>(static_cast<int64_t>(in_features), static_cast<int64_t>(out_features),
                                                bias, mha::parse_weight_dtype(dtype));
  });
}

bool LinearHandle::checkLoad(double weight_bytes, std::string source) {
  return guard([&] {
    mha::check_fits("the weights", layer_->load_memory(static_cast<uint64_t>(weight_bytes), mha::parse_weight_source(source)),
                    heap_in_use(), mha::addressable_bytes());
  });
}

bool LinearHandle::load(double weight, std::string source, double bias) {
  return guard([&] { layer_->load(at<const void>(weight), mha::parse_weight_source(source), at<const float>(bias)); });
}

bool LinearHandle::rows(double ids, double n, double out) {
  return guard([&] { layer_->rows(at<const int32_t>(ids), static_cast<int64_t>(n), at<float>(out)); });
}

bool LinearHandle::checkForward(double rows) {
  return guard([&] {
    const auto need = layer_->forward_memory(static_cast<int64_t>(rows));
    mha::check_fits("the input and output", need, heap_in_use_unless_fits(need), mha::addressable_bytes());
  });
}

bool LinearHandle::forward(double x, double y, double rows) {
  return guard([&] { layer_->forward(at<const float>(x), at<float>(y), static_cast<int64_t>(rows), pool()); });
}

}  // namespace mha_embind
