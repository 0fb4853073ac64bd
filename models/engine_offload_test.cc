// The engine with KV offloading to host memory: what the GPU evicted loads back over the host
// link instead of being recomputed, as vLLM's OffloadingConnector does.
#include <gtest/gtest.h>

#include "models/block_hash.h"
#include "models/engine.h"
#include "models/engine_test_util.h"

namespace fleetsim {
namespace {

constexpr std::int32_t kBlock = 16;

RequestPtr make_request(std::int64_t id, std::uint64_t content, std::int32_t prompt_tokens,
                        std::int32_t output_tokens) {
  return engine_request(id, {{content, prompt_tokens}}, output_tokens, kBlock);
}

EngineConfig offload_config(std::int64_t host_blocks) {
  EngineConfig c;
  c.block_size = kBlock;
  c.max_num_batched_tokens = 4096;
  c.offload_blocks = host_blocks;
  c.offload_load_ns_per_block = 1000;  // 1 us a block
  return c;
}

// Runs steps at `now` until nothing is left or nothing can be planned.
void drain(Engine& e, TimeNs now) {
  for (int i = 0; i < 100 && e.has_work(); ++i) {
    const StepPlan p = e.plan_step(now);
    if (p.empty()) return;
    e.finish_step(p);
  }
}

TEST(EngineOffload, AnEvictedPrefixLoadsFromHostInsteadOfBeingRecomputed) {
  // 16 GPU blocks: prompt A (8 blocks) is evicted by prompt B (15 blocks) all but its first
  // block (freed last, as vLLM frees a request's tail first), but stays in host memory.
  Engine e(offload_config(64), 16);
  e.add(make_request(1, 111, 8 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(2, 222, 15 * kBlock, 1), 0);
  drain(e, 0);
  EXPECT_EQ(e.counters().offload_stored_blocks, 8 + 15);
  // A again, 4 blocks longer: block 0 from the GPU, blocks 1-7 from host memory.
  auto again = make_request(3, 111, 8 * kBlock, 1);
  again->prompt.push_back({333, 4 * kBlock});
  again->prompt_tokens = 12 * kBlock;
  compute_block_hashes(*again, kBlock);
  e.add(again, 100);
  StepPlan p = e.plan_step(100);
  EXPECT_TRUE(p.empty());  // admitted, loading: nothing to compute yet
  ASSERT_EQ(p.admitted.size(), 1u);
  EXPECT_EQ(p.admitted[0]->cached_tokens, kBlock);  // the GPU's own hit
  EXPECT_EQ(e.num_loading(), 1);
  EXPECT_EQ(e.num_waiting(), 1);  // counted as waiting, as vLLM counts WAITING_FOR_REMOTE_KVS
  ASSERT_TRUE(e.next_load_done().has_value());
  EXPECT_EQ(*e.next_load_done(), 100 + 7 * 1000);
  EXPECT_TRUE(e.plan_step(100 + 6999).empty());  // not before the load ends
  p = e.plan_step(100 + 7000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 4 * kBlock);  // only the new blocks are computed
  EXPECT_EQ(p.scheduled[0].context_tokens, 8 * kBlock);
  e.finish_step(p);
  // vLLM counts the connector's hits apart from the GPU's prefix cache.
  EXPECT_EQ(e.counters().external_prefix_cache_queries, (8 + 15 + 12) * kBlock);
  EXPECT_EQ(e.counters().external_prefix_cache_hits, 7 * kBlock);
  EXPECT_EQ(e.counters().prefix_cache_hits, kBlock);
  drain(e, 100 + 7000);
  EXPECT_FALSE(e.has_work());
  e.cache().check_invariants();
}

TEST(EngineOffload, LoadsShareTheHostLinkOneAfterAnother) {
  Engine e(offload_config(64), 12);
  for (std::int64_t id : {1, 2}) {
    e.add(make_request(id, 100 + static_cast<std::uint64_t>(id), 4 * kBlock, 1), 0);
    drain(e, 0);
  }
  e.add(make_request(3, 999, 12 * kBlock, 1), 0);  // evicts both from the GPU
  drain(e, 0);
  e.add(make_request(4, 101, 4 * kBlock + 1, 1), 10);
  e.add(make_request(5, 102, 4 * kBlock + 1, 1), 10);
  EXPECT_TRUE(e.plan_step(10).empty());
  EXPECT_EQ(e.num_loading(), 2);
  EXPECT_EQ(*e.next_load_done(), 10 + 4000);
  const StepPlan first = e.plan_step(10 + 4000);
  ASSERT_EQ(first.scheduled.size(), 1u);  // the second load ends 4 us later
  EXPECT_EQ(first.scheduled[0].seq->request->id, 4);
  EXPECT_EQ(*e.next_load_done(), 10 + 8000);
}

TEST(EngineOffload, AWholePromptFromHostStillComputesItsLastToken) {
  Engine e(offload_config(64), 4);
  e.add(make_request(1, 7, 4 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(2, 8, 4 * kBlock, 1), 0);  // evicts request 1's blocks
  drain(e, 0);
  e.add(make_request(3, 7, 4 * kBlock, 2), 0);
  EXPECT_TRUE(e.plan_step(0).empty());
  const StepPlan p = e.plan_step(4000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 1);
  EXPECT_EQ(p.scheduled[0].context_tokens, 4 * kBlock - 1);
}

TEST(EngineOffload, ACrashReturnsLoadingRequestsAndTheirBlocks) {
  Engine e(offload_config(64), 6);
  e.add(make_request(1, 7, 4 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(2, 8, 4 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(3, 7, 5 * kBlock, 1), 0);
  EXPECT_TRUE(e.plan_step(0).empty());
  ASSERT_EQ(e.num_loading(), 1);
  EXPECT_LT(e.cache().num_free_blocks(), 6);
  const auto lost = e.abort_all();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0]->id, 3);
  EXPECT_EQ(e.cache().num_free_blocks(), 6);
  EXPECT_FALSE(e.has_work());
  e.cache().check_invariants();
}

TEST(EngineOffload, WithoutOffloadingNothingIsStoredOrLoaded) {
  EngineConfig c = offload_config(0);
  Engine e(c, 4);
  e.add(make_request(1, 7, 4 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(2, 8, 4 * kBlock, 1), 0);
  drain(e, 0);
  e.add(make_request(3, 7, 4 * kBlock, 1), 0);
  const StepPlan p = e.plan_step(0);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 4 * kBlock);
  EXPECT_EQ(e.counters().offload_stored_blocks, 0);
  EXPECT_EQ(e.counters().external_prefix_cache_queries, 0);
}

}  // namespace
}  // namespace fleetsim
