// The step-by-step path (src/mha/steps/attention_steps.hpp) through the C++ API: on every fixture case
// its output and pattern agree with PyTorch's output and weights, each step has its stated
// shape, and a patch of z recomputes the output; check_steps names what it refuses.
// (Every step against a float64 reference: tests/js/steps.test.js.)
#include <gtest/gtest.h>

#include <cmath>

#include "fixtures.hpp"
#include "mha/steps/attention_steps.hpp"
#include "mha/layer/multihead_attention.hpp"

namespace {

const std::vector<fixtures::Case>& all_cases() {
  static const std::vector<fixtures::Case> cases = fixtures::load_all(MHA_FIXTURE_DIR);
  return cases;
}

void expect_close(const float* got, const std::vector<float>& want, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = 1e-5 + 1e-4 * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

// capture: true for a layer of config c: every step it has (the gate only with a gate).
mha::StepRequest capture_all(const mha::ResolvedConfig& c) {
  mha::StepRequest r;
  r.capture = mha::layer_step_names(c);
  return r;
}

TEST(Steps, EveryFixtureCaseMatchesPyTorchThroughTheStepPath) {
  for (const fixtures::Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    mha::MultiheadAttention layer(c.config());
    layer.load_state_dict(c.state_dict());
    mha::ForwardOptions o = c.options();
    o.average_weights = false;
    o.need_weights = true;
    std::vector<mha::CapturedStep> captured;
    const mha::ForwardResult r =
        layer.forward_steps(c.ref("query"), c.ref("key"), c.ref("value"), o, capture_all(layer.config()), captured);
    ASSERT_EQ(captured.size(), static_cast<size_t>(mha::kStepCount - 1));  // no gate
    const mha::ForwardPlan p = layer.plan(c.ref("query"), c.ref("key"), c.ref("value"), o);
    for (const mha::CapturedStep& s : captured) {
      EXPECT_EQ(s.shape, mha::step_shape(layer.config(), p, s.step)) << mha::step_name(s.step);
      EXPECT_EQ(s.data.size(), static_cast<size_t>(mha::element_count(s.shape)));
    }
    expect_close(r.output.data(), c.tensors.at("output").f32, "output");
    // The pattern is the per-head weights: PyTorch's where the fixture has them per head.
    EXPECT_EQ(captured[5].data, r.weights);
    if (c.tensors.count("weights") && !c.json["options"]["averageWeights"].get<bool>())
      expect_close(captured[5].data.data(), c.tensors.at("weights").f32, "pattern");
  }
}

TEST(Steps, ZerosInZLeaveTheOutputBias) {
  mha::AttentionConfig cfg;
  cfg.embed_dim = 4;
  cfg.num_heads = 2;
  mha::MultiheadAttention layer(cfg);
  std::vector<float> in_w(48, 0.1f), in_b(12, 0.0f), out_w(16, 0.2f), out_b = {1, 2, 3, 4};
  layer.load_state_dict({{"in_proj_weight", {in_w.data(), 48}},
                         {"in_proj_bias", {in_b.data(), 12}},
                         {"out_proj.weight", {out_w.data(), 16}},
                         {"out_proj.bias", {out_b.data(), 4}}});
  std::vector<float> x(12, 0.5f), zeros(12, 0.0f);
  mha::StepRequest request;
  request.patch.steps = {"z"};
  request.patch.tensor = {zeros.data(), {3, 2, 2}};
  std::vector<mha::CapturedStep> captured;
  const mha::ForwardResult r = layer.forward_steps({x.data(), {3, 4}}, {}, {}, {}, request, captured);
  EXPECT_TRUE(captured.empty());
  for (int row = 0; row < 3; ++row)
    for (int o = 0; o < 4; ++o) EXPECT_EQ(r.output[row * 4 + o], out_b[o]);
}

TEST(Steps, CheckStepsNamesWhatItRefuses) {
  mha::AttentionConfig cfg;
  cfg.embed_dim = 8;
  cfg.num_heads = 2;
  const mha::ResolvedConfig c = mha::resolve(cfg);
  std::vector<float> x(16);
  const mha::ForwardPlan p = mha::plan_forward(c, {x.data(), {2, 8}}, {}, {}, {});
  const auto message = [&](const mha::StepRequest& r, bool grad = false) -> std::string {
    try {
      mha::check_steps(c, p, r, grad);
    } catch (const mha::ArgumentError& e) {
      return e.what();
    }
    return "";
  };
  mha::StepRequest r;
  r.capture = {"attn"};
  EXPECT_EQ(message(r), "capture[0]: unknown step 'attn'; the steps are q, k, v, scores, logits, pattern, z, gate, result");
  r.capture = {"z"};
  EXPECT_EQ(message(r, true), "");
  r.patch.steps = {"result"};
  r.patch.tensor = {x.data(), {2, 2, 8}};
  EXPECT_EQ(message(r), "patch: the step 'result' cannot be patched (the steps a later step reads can: q, k, v, pattern, z, gate)");
  r.patch.steps = {"q"};
  EXPECT_EQ(message(r), "patch.q: expected the step's shape [H, L, Dh] = [2, 2, 4], got [2, 2, 8]");
  r.patch.tensor.shape = {2, 2, 4};
  r.patch.heads = {1, -1};
  EXPECT_EQ(message(r), "patch.heads[1]: head -1 is out of range: q has 2 heads (0 to 1)");
  r.patch.heads = {1};
  EXPECT_EQ(message(r), "");
  r.patch.steps = {"pattern"};
  r.patch.tensor.shape = {2, 2, 2};
  EXPECT_EQ(message(r, true),
            "patch.pattern: not with grad: true (the backward pass recomputes the softmax from q and k; patch q, k, v or z "
            "instead)");
}

}  // namespace
