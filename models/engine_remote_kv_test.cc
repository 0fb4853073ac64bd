// The engine of a decode pod under prefill/decode disaggregation: a prompt a prefill pod computed
// is read over the network (vLLM's NixlConnector) instead of being computed, all but its last
// token, which the decode pod computes to sample the first output token.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

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

EngineConfig config() {
  EngineConfig c;
  c.block_size = kBlock;
  c.max_num_batched_tokens = 4096;
  return c;
}

TEST(EngineRemoteKv, APromptFromAPrefillPodIsReadThenOnlyItsLastTokenComputed) {
  Engine e(config(), 64);
  // 100 tokens: 7 blocks, the last one partial.
  const RequestPtr r = make_request(1, 111, 100, 3);
  e.add(r, 0, RemoteKv{1000, 50000});
  StepPlan p = e.plan_step(0);
  EXPECT_TRUE(p.empty());  // admitted, reading: nothing to compute yet
  ASSERT_EQ(p.admitted.size(), 1u);
  EXPECT_EQ(p.admitted[0]->cached_tokens, 0);
  // The read is handed to the pod, which times it on the network (sim/fleet/kv_network.h).
  ASSERT_EQ(p.remote_reads.size(), 1u);
  EXPECT_EQ(p.remote_reads[0]->loading_blocks, 7);
  EXPECT_FALSE(e.next_load_done().has_value());
  EXPECT_TRUE(e.plan_step(1'000'000).empty());  // not read until the network says so
  EXPECT_TRUE(e.remote_read_done(*r, 1'000'000));
  EXPECT_FALSE(e.remote_read_done(*r, 1'000'000));  // once
  p = e.plan_step(1'000'000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 1);  // the last prompt token, to sample from
  EXPECT_EQ(p.scheduled[0].context_tokens, 99);
  const StepOutcome out = e.finish_step(p);
  EXPECT_EQ(out.first_tokens.size(), 1u);
  // The prompt's blocks are the decode pod's own now: its prefix cache counts them.
  EXPECT_EQ(e.counters().prefix_cache_queries, 100);
  EXPECT_EQ(e.counters().prefix_cache_hits, 0);
  EXPECT_EQ(e.cache().lookup(*make_request(2, 111, 100, 1)->block_hashes, 100), 6);
}

TEST(EngineRemoteKv, WhatTheDecodePodHoldsIsNotReadAgain) {
  Engine e(config(), 64);
  e.add(make_request(1, 111, 64, 1), 0);  // 4 blocks computed here first
  for (StepPlan p = e.plan_step(0); !p.empty(); p = e.plan_step(0)) e.finish_step(p);
  // The same 64 tokens and 36 more: 4 blocks hit, 3 read (the partial last one included).
  auto longer = make_request(2, 111, 64, 1);
  longer->prompt.push_back({222, 36});
  longer->prompt_tokens = 100;
  compute_block_hashes(*longer, kBlock);
  e.add(longer, 0, RemoteKv{1000, 0});
  const RequestPtr other = make_request(3, 333, 32, 1);
  e.add(other, 0, RemoteKv{1000, 0});  // 2 blocks
  const StepPlan p = e.plan_step(0);
  ASSERT_EQ(p.admitted.size(), 2u);
  EXPECT_EQ(p.admitted[0]->cached_tokens, 64);
  ASSERT_EQ(p.remote_reads.size(), 2u);
  EXPECT_EQ(p.remote_reads[0]->loading_blocks, 3);
  EXPECT_EQ(p.remote_reads[1]->loading_blocks, 2);
  EXPECT_EQ(e.counters().prefix_cache_hits, 64);
  // Reads end in any order: the second one first.
  EXPECT_TRUE(e.remote_read_done(*other, 2000));
  const StepPlan q = e.plan_step(2000);
  ASSERT_EQ(q.scheduled.size(), 1u);
  EXPECT_EQ(q.scheduled[0].seq->request->id, 3);
}

// vLLM's prefill side keeps a finished prompt's blocks until the decode pod has read them.
TEST(EngineRemoteKv, AFinishedPrefillLegHoldsItsBlocksUntilReleased) {
  Engine e(config(), 64);
  auto leg = make_request(7, 111, 100, 1);
  leg->prefill_leg_for = 3;
  e.add(leg, 0);
  for (StepPlan p = e.plan_step(0); !p.empty(); p = e.plan_step(0)) e.finish_step(p);
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(e.held_blocks(), 7);  // 100 prompt tokens + 1 output: 7 blocks of 16
  EXPECT_EQ(e.cache().num_free_blocks(), 64 - 7);
  e.release(7, 2);  // another attempt's release changes nothing
  EXPECT_EQ(e.held_blocks(), 7);
  e.release(7, 1);
  EXPECT_EQ(e.held_blocks(), 0);
  EXPECT_EQ(e.cache().num_free_blocks(), 64);
  // Freed, the blocks stay cached: the prefill pod's next leg of this prompt hits them.
  EXPECT_EQ(e.cache().lookup(*make_request(8, 111, 100, 1)->block_hashes, 100), 6);

  // A crash frees what is held; so does a later attempt's leg under the same id.
  e.add(leg, 0);
  for (StepPlan p = e.plan_step(0); !p.empty(); p = e.plan_step(0)) e.finish_step(p);
  auto retry = std::make_shared<Request>(*leg);
  retry->attempt = 2;
  e.add(retry, 0);
  EXPECT_EQ(e.held_blocks(), 0);
  for (StepPlan p = e.plan_step(0); !p.empty(); p = e.plan_step(0)) e.finish_step(p);
  EXPECT_EQ(e.held_blocks(), 7);
  e.abort_all();
  EXPECT_EQ(e.held_blocks(), 0);
  EXPECT_EQ(e.cache().num_free_blocks(), 64);
}

// vLLM's kv_load_failure_policy: recompute (its default) computes what the read did not bring,
// from the pod's own hit on; fail ends the request with its blocks freed.
TEST(EngineRemoteKv, AFailedReadIsComputedHereOrFailsTheRequest) {
  Engine e(config(), 64);
  const RequestPtr r = make_request(1, 111, 100, 2);
  e.add(r, 0, RemoteKv{1000, 0, true});
  StepPlan p = e.plan_step(0);
  EXPECT_TRUE(p.empty());
  e.remote_read_done(*r, 7000);  // it fails when it would have ended
  p = e.plan_step(7000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 100);  // the whole prompt, none of it read
  EXPECT_EQ(p.scheduled[0].context_tokens, 0);
  EXPECT_TRUE(p.load_failed.empty());
  EXPECT_EQ(e.finish_step(p).first_tokens.size(), 1u);

  EngineConfig fail = config();
  fail.fail_on_kv_load_error = true;
  Engine f(fail, 64);
  const RequestPtr bad = make_request(1, 111, 100, 2);
  const RequestPtr good = make_request(2, 222, 32, 2);
  f.add(bad, 0, RemoteKv{1000, 0, true});
  f.add(good, 0, RemoteKv{1000, 0});
  EXPECT_TRUE(f.plan_step(0).empty());
  EXPECT_EQ(f.cache().num_free_blocks(), 64 - 7 - 2);
  f.remote_read_done(*bad, 7000);
  p = f.plan_step(7000);
  ASSERT_EQ(p.load_failed.size(), 1u);
  EXPECT_EQ(p.load_failed[0]->id, 1);
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(f.cache().num_free_blocks(), 64 - 2);
  f.remote_read_done(*good, 9000);
  p = f.plan_step(9000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].seq->request->id, 2);
  EXPECT_EQ(p.scheduled[0].new_tokens, 1);
}

}  // namespace
}  // namespace fleetsim
