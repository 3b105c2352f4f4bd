// Chooses the kernel each entry point runs in this build.
#include "attention_kernel.hpp"
#include "linear.hpp"

namespace mha::kernels {

void linear(const LinearArgs& args) { linear_reference(args); }
void attention_head(const AttentionHeadArgs& args) { attention_head_reference(args); }

}  // namespace mha::kernels
