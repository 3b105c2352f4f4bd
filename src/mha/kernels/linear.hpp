// y = x W^T + b, the nn.Linear projection, over a block of rows.
#pragma once

#include <cstdint>

namespace mha::kernels {

struct LinearArgs {
  const float* x;       // [rows, in_features], row stride in_features
  const float* weight;  // [out_features, in_features] (nn.Linear layout)
  const float* bias;    // [out_features] or null
  float* y;             // [rows, out_features], row stride out_features
  int64_t rows, in_features, out_features;
};

// Portable scalar twin: the definition the fast kernels are tested against.
void linear_reference(const LinearArgs& args);

// The fastest kernel this build has.
void linear(const LinearArgs& args);

}  // namespace mha::kernels
