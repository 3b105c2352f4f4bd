// Attention, step by step: the intermediates every tutorial names (TransformerLens' hooks,
// docs/steps.md), recorded on request, and patches that replace one step's values for some heads
// and recompute everything after it. forward() takes this path only when a call asks for
// captured steps or a patch (MultiheadAttention::forward_steps, attention_steps.cpp); the fast
// paths never see it.
//
//   q [B, H, L, Dh]  k [B, Hkv, S, Dh]  v [B, Hkv, S, Dv]      projected, bias added, normed (qkNorm), rotated
//   scores [B, H, L, S]   scale * q.k, before any mask or variant
//   logits [B, H, L, S]   what softmax sees: softcap, ALiBi, masks (-inf where blocked)
//   pattern [B, H, L, S]  the softmax (a fully blocked row is 0), before dropout
//   z [B, L, H, Dv]       each head's weighted sum of v (the concatenation's layout)
//   gate [B, L, H, Dv]    with the output gate (config gate): sigmoid of the query's gate
//                         projection, which multiplies z before out_proj
//   result [B, L, H, E']  each head's share of out_proj (no bias; of z ⊙ gate with a gate):
//                         sum over h + bias = output
//
// Unbatched calls drop B from every shape.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mha/plan/attention_config.hpp"
#include "mha/plan/forward_plan.hpp"
#include "mha/plan/memory_budget.hpp"
#include "mha/plan/shape.hpp"

namespace mha {

enum class Step { kQ, kK, kV, kScores, kLogits, kPattern, kZ, kGate, kResult };
constexpr int kStepCount = 9;

// "q", "k", ..., "result": the names the API and docs use.
const char* step_name(Step step);

// The names of every step a layer of config `c` has, in the chain's order (gate only with a
// gate): what `capture: true` records.
std::vector<std::string> layer_step_names(const ResolvedConfig& c);

// The step named `name`; anything else throws naming `argument` and the steps there are.
Step parse_step(const std::string& name, const std::string& argument);

// The steps a patch may replace: the ones a later step reads (q, k, v, pattern, z, gate).
bool patchable(Step step);

// One patch: `data` [step_shape] replaces the values of `heads` (all heads when empty) of `step`.
// For k and v the heads are key/value heads (0 .. Hkv-1); otherwise query heads.
struct StepPatch {
  std::vector<std::string> steps;  // as given: exactly one name is valid
  TensorRef tensor;
  std::vector<int64_t> heads;
  bool present() const { return !steps.empty(); }
};

// What one call asks of the steps: which to record, and an optional patch.
struct StepRequest {
  std::vector<std::string> capture;  // step names as given ("capture: true" lists them all)
  StepPatch patch;
  bool present() const { return !capture.empty() || patch.present(); }
};

// A request after check_steps: steps as enums, the patch's heads as a per-head flag.
struct CheckedSteps {
  std::array<bool, kStepCount> capture{};
  bool patching = false;
  Step patched = Step::kQ;
  const float* patch_data = nullptr;
  std::vector<bool> patched_heads;  // [heads of the patched step]
  bool captures(Step s) const { return capture[static_cast<int>(s)]; }
};

// One recorded step.
struct CapturedStep {
  Step step;
  std::vector<float> data;
  Shape shape;
};

// The shape `step` has in a call planned as `p` (B dropped when unbatched).
Shape step_shape(const ResolvedConfig& c, const ForwardPlan& p, Step step);

// Checks a step request against the call's plan, in one place: step names, one step per patch,
// a patchable step, the patch's shape (the step's captured shape), its heads, and that the
// request fits the call (with grad, no pattern patch: backward recomputes the softmax). Throws
// ArgumentError naming it.
CheckedSteps check_steps(const ResolvedConfig& c, const ForwardPlan& p, const StepRequest& request, bool grad = false);

// The buffers the step path adds to forward_memory(): the keys and values gathered per call,
// the three [L, S] rows of one head, and each captured step (plus the patch's copy with `inputs`).
std::vector<MemoryItem> steps_memory(const ResolvedConfig& c, const ForwardPlan& p, const CheckedSteps& steps,
                                     bool inputs);

}  // namespace mha
