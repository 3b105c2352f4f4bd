// The up-front memory check: sizes that cannot fit fail with a RangeError naming the buffers,
// before anything is allocated, and absurd sizes saturate instead of wrapping around.
#include <gtest/gtest.h>

#include <limits>

#include "mha/plan/memory_budget.hpp"
#include "mha/layer/multihead_attention.hpp"

namespace {

std::string message_of(const std::vector<mha::MemoryItem>& items, uint64_t in_use, uint64_t limit) {
  try {
    mha::check_fits("the buffers", items, in_use, limit);
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), mha::ErrorKind::kRange);
    return e.what();
  }
  return "";
}

TEST(MemoryBudget, FormatsBytes) {
  EXPECT_EQ(mha::format_bytes(512), "512 bytes");
  EXPECT_EQ(mha::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(mha::format_bytes(uint64_t{2} << 30), "2.0 GiB");
}

TEST(MemoryBudget, NamesEveryBufferWhenOverTheLimit) {
  const uint64_t GiB = uint64_t{1} << 30;
  EXPECT_EQ(message_of({{"query", GiB}, {"attention weights", 8 * GiB}}, 0, 2 * GiB),
            "the buffers need 9.0 GiB of memory (query 1.0 GiB, attention weights 8.0 GiB), more than the 2.0 GiB "
            "this build can address");
  EXPECT_EQ(message_of({{"output", GiB}}, GiB + GiB / 2, 2 * GiB),
            "the buffers need 1.0 GiB of memory (output 1.0 GiB), but only 512.0 MiB of the 2.0 GiB this build can "
            "address is free");
  EXPECT_EQ(message_of({{"output", GiB}}, GiB, 2 * GiB), "");  // exactly fits
}

// wasm's allocator gives one buffer at most about 2 GiB (largest_block_bytes): an item, or the
// items sharing a block (the forward call's workspace), must fit in it even when the total fits.
TEST(MemoryBudget, RefusesABufferAboveTheLargestBlock) {
  const uint64_t GiB = uint64_t{1} << 30;
  const auto blocks_message = [&](const std::vector<mha::MemoryItem>& items) -> std::string {
    try {
      mha::check_blocks("the buffers", items, 2 * GiB);
    } catch (const mha::ArgumentError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(blocks_message({{"query", GiB}, {"attention weights", 3 * GiB}}),
            "the buffers need 3.0 GiB of memory in one block (attention weights: 3221225472 bytes), more than the "
            "largest block this build can allocate (2147483648 bytes)");
  EXPECT_EQ(blocks_message({{"query", GiB}, {"projected queries", GiB, mha::kWorkspaceBlock}, {"output", GiB},
                            {"attention scratch", GiB, mha::kWorkspaceBlock}}),
            "");  // exactly the largest block: fits
  EXPECT_EQ(blocks_message({{"projected queries", GiB, mha::kWorkspaceBlock}, {"output", GiB},
                            {"attention scratch", GiB + 1, mha::kWorkspaceBlock}}),
            "the buffers need 2.0 GiB of memory in one block (projected queries + attention scratch: 2147483649 "
            "bytes), more than the largest block this build can allocate (2147483648 bytes)");
  EXPECT_EQ(blocks_message({{"keys", 2 * GiB}, {"values", 2 * GiB}}), "");  // two buffers
}

TEST(MemoryBudget, SaturatesInsteadOfOverflowing) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(mha::saturating_bytes({int64_t{1} << 40, int64_t{1} << 40}, 4), max);
  EXPECT_EQ(mha::total_bytes({{"a", max}, {"b", 1}}), max);
  EXPECT_EQ(mha::element_count({int64_t{1} << 62, 5}), std::numeric_limits<int64_t>::max());
}

TEST(MemoryBudget, ForwardRefusesAbsurdShapesBeforeAllocating) {
  mha::AttentionConfig c;
  c.embed_dim = 8;
  c.num_heads = 2;
  mha::MultiheadAttention layer(c);
  std::vector<float> w(192, 0.0f), b(24, 0.0f), ow(64, 0.0f), ob(8, 0.0f);
  layer.load_state_dict({{"in_proj_weight", {w.data(), 192}}, {"in_proj_bias", {b.data(), 24}},
                         {"out_proj.weight", {ow.data(), 64}}, {"out_proj.bias", {ob.data(), 8}}});
  // 2^40 queries of 8 floats: planning must refuse it without reading the (tiny) buffer.
  const float q[8] = {};
  try {
    layer.forward({q, {int64_t{1} << 40, 8}}, {}, {});
    FAIL() << "no error";
  } catch (const mha::ArgumentError& e) {
    EXPECT_EQ(e.kind(), mha::ErrorKind::kRange);
    EXPECT_NE(std::string(e.what()).find("the buffers need"), std::string::npos) << e.what();
  }
}

// A call with fewer query rows than the decode kernel takes runs on the decode kernel, unless
// dropout applies (only the flash kernel applies it): the budget must count the scratch of the
// kernel the forward call allocates for, the flash kernel's packed keys and values.
TEST(MemoryBudget, CountsTheFlashKernelsScratchForADropoutCallOfFewRows) {
  mha::AttentionConfig config;
  config.embed_dim = 8;
  config.num_heads = 2;
  config.dropout = 0.25f;
  const mha::ResolvedConfig c = mha::resolve(config);
  const int64_t L = 1, S = 64;
  ASSERT_LT(L, mha::kernels::decode_query_rows());
  const std::vector<float> query(L * 8), key(S * 8), value(S * 8);
  const auto scratch_bytes = [&](bool training) -> uint64_t {
    mha::ForwardOptions o;
    o.training = training;
    const mha::ForwardPlan p =
        mha::plan_forward(c, {query.data(), {1, L, 8}}, {key.data(), {1, S, 8}}, {value.data(), {1, S, 8}}, o);
    for (const mha::MemoryItem& item : mha::forward_memory(c, p, o, false, false))
      if (item.name == "attention scratch") return item.bytes;
    ADD_FAILURE() << "no attention scratch item";
    return 0;
  };
  mha::kernels::AttentionHeadArgs head{};
  head.key_len = S;
  head.head_dim = c.head_dim;
  head.value_head_dim = c.value_head_dim;
  const uint64_t flash = 4 * static_cast<uint64_t>(mha::kernels::attention_scratch_floats(head));
  const uint64_t decode = 4 * static_cast<uint64_t>(mha::kernels::attention_decode_scratch_floats(head, 1));
  ASSERT_NE(flash, decode);
  EXPECT_EQ(scratch_bytes(false), decode);  // inference: no dropout, the decode kernel
  EXPECT_EQ(scratch_bytes(true), flash);    // training: dropout applies, the flash kernel
}

TEST(MemoryBudget, ConstructorRefusesWeightsBeyondTheAddressSpace) {
  mha::AttentionConfig c;
  c.embed_dim = int64_t{1} << 30;
  c.num_heads = 1;
  try {
    mha::MultiheadAttention layer(c);
    FAIL() << "no error";
  } catch (const mha::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("the weights need"), std::string::npos) << e.what();
  }
}

}  // namespace
