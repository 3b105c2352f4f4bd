// Which attention kernel a call's heads run on: one rule, asked by the layer's forward
// (multihead_attention.cpp), the attention function (attention_function.cpp) and the memory
// budget (memory_budget.hpp), so that the budget counts the scratch of the kernel that runs.
#pragma once

#include <cstdint>

#include "mha/kernels/attention_kernel.hpp"

namespace mha {

enum class AttentionKernel {
  kDecode,  // attention_heads_decode: a GQA group's heads together, a row of scores per head as scratch
  kFlash,   // attention_head: the keys and values packed as scratch; log-sum-exps and dropout
};

// A few query rows go to the decode kernel, unless the call applies dropout (`dropout` > 0) or
// keeps log-sum-exps for a backward pass (`keeps_lse`): only the flash kernel does either.
inline AttentionKernel choose_attention_kernel(int64_t query_rows, float dropout, bool keeps_lse) {
  const bool few_rows = query_rows < kernels::decode_query_rows();
  return few_rows && dropout == 0.0f && !keeps_lse ? AttentionKernel::kDecode : AttentionKernel::kFlash;
}

}  // namespace mha
