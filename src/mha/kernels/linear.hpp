// y = x W^T + b, the nn.Linear projection, over a block of rows, and its backward.
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

// The backward of y = x W^T + b over `rows` rows: d_x = d_y W, d_weight = d_y^T x, d_bias = the
// column sums of d_y. Each output is written whole (not added to); a null one is not computed.
struct LinearBackwardArgs {
  const float* d_y;     // [rows, out_features]
  const float* x;       // [rows, in_features]
  const float* weight;  // [out_features, in_features]
  float* d_x;           // [rows, in_features] or null
  float* d_weight;      // [out_features, in_features] or null
  float* d_bias;        // [out_features] or null
  int64_t rows, in_features, out_features;
};

// Portable scalar twin (linear_reference.cpp).
void linear_backward_reference(const LinearBackwardArgs& args);

// The GEMM of PackedLinear on transposed operands (linear_backward.cpp).
void linear_backward(const LinearBackwardArgs& args);

}  // namespace mha::kernels
