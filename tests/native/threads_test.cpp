// The layer on a thread pool gives bit-identical results to the calling thread alone, at every
// pool size, and two threads may share one pool. Run under ThreadSanitizer by
// tests/stages/50-sanitizers.sh (preset "tsan"), which makes this a data-race check too.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "random_vector.hpp"
#include "mha/layer/multihead_attention.hpp"
#include "mha/runtime/thread_pool.hpp"

namespace {

struct Layer {
  // Large enough that every stage runs on the pool (below ~4 MFLOP a stage stays on the caller).
  static constexpr int64_t E = 128, H = 4;
  std::vector<float> in_w = random_vector(3 * E * E, 1), in_b = random_vector(3 * E, 2),
                     out_w = random_vector(E * E, 3), out_b = random_vector(E, 4);
  mha::MultiheadAttention layer{[] {
    mha::AttentionConfig c;
    c.embed_dim = E;
    c.num_heads = H;
    return c;
  }()};
  Layer() {
    layer.load_state_dict({{"in_proj_weight", {in_w.data(), 3 * E * E}}, {"in_proj_bias", {in_b.data(), 3 * E}},
                           {"out_proj.weight", {out_w.data(), E * E}}, {"out_proj.bias", {out_b.data(), E}}});
  }
};

mha::ForwardResult run(const mha::MultiheadAttention& layer, int64_t B, int64_t L, bool average) {
  const auto q = random_vector(static_cast<size_t>(B * L * Layer::E), 5);
  std::vector<uint8_t> padding(static_cast<size_t>(B * L), 0);
  for (size_t i = 0; i < padding.size(); i += 3) padding[i] = 1;
  mha::ForwardOptions o;
  o.causal = true;
  o.need_weights = true;
  o.average_weights = average;
  o.key_padding_mask = {mha::MaskType::kBool, padding.data(), {B, L}};
  return layer.forward({q.data(), {B, L, Layer::E}}, {}, {}, o);
}

TEST(Threads, PoolOfAnySizeGivesTheSameBits) {
  Layer l;
  for (bool average : {true, false}) {
    const mha::ForwardResult alone = run(l.layer, 3, 70, average);
    auto pool = std::make_shared<mha::ThreadPool>(1);
    l.layer.set_thread_pool(pool);
    for (int n : {2, 4, 3, 1, 4}) {
      pool->set_num_threads(n);
      const mha::ForwardResult pooled = run(l.layer, 3, 70, average);
      EXPECT_EQ(pooled.output, alone.output) << n << " threads";
      EXPECT_EQ(pooled.weights, alone.weights) << n << " threads";
    }
    l.layer.set_thread_pool(nullptr);
  }
}

TEST(Threads, TwoCallersShareOnePool) {
  Layer a, b;
  const mha::ForwardResult want = run(a.layer, 2, 70, true);
  auto pool = std::make_shared<mha::ThreadPool>(3);
  a.layer.set_thread_pool(pool);
  b.layer.set_thread_pool(pool);
  std::vector<mha::ForwardResult> got(2);
  std::thread other([&] { got[1] = run(b.layer, 2, 70, true); });
  got[0] = run(a.layer, 2, 70, true);
  other.join();
  EXPECT_EQ(got[0].output, want.output);
  EXPECT_EQ(got[1].output, want.output);
}

// A thread's start allocates (in wasm, its thread-local storage on the heap): the pool's
// constructor and set_num_threads return once every worker they made has started, so that
// allocation never lands inside a later call (thread_pool.hpp).
TEST(Threads, WorkersHaveStartedWhenThePoolIsMadeOrGrown) {
  mha::ThreadPool pool(3);
  EXPECT_EQ(pool.starting(), 0);
  pool.set_num_threads(6);
  EXPECT_EQ(pool.starting(), 0);
  EXPECT_EQ(pool.size(), 6);
  pool.set_num_threads(2);  // parks the surplus; nothing new to start
  EXPECT_EQ(pool.starting(), 0);
  EXPECT_EQ(pool.size(), 2);
}

}  // namespace
