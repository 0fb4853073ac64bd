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
  // 100 tokens: 7 blocks, the last one partial, read at 1 us a block after a 50 us latency.
  e.add(make_request(1, 111, 100, 3), 0, RemoteKv{1000, 50000});
  StepPlan p = e.plan_step(0);
  EXPECT_TRUE(p.empty());  // admitted, reading: nothing to compute yet
  ASSERT_EQ(p.admitted.size(), 1u);
  EXPECT_EQ(p.admitted[0]->cached_tokens, 0);
  ASSERT_EQ(e.next_load_done(), TimeNs{50000 + 7 * 1000});
  EXPECT_TRUE(e.plan_step(56999).empty());
  p = e.plan_step(57000);
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

TEST(EngineRemoteKv, WhatTheDecodePodHoldsIsNotReadAgainAndReadsQueueOnItsLink) {
  Engine e(config(), 64);
  e.add(make_request(1, 111, 64, 1), 0);  // 4 blocks computed here first
  for (StepPlan p = e.plan_step(0); !p.empty(); p = e.plan_step(0)) e.finish_step(p);
  // The same 64 tokens and 36 more: 4 blocks hit, 3 read (the partial last one included).
  auto longer = make_request(2, 111, 64, 1);
  longer->prompt.push_back({222, 36});
  longer->prompt_tokens = 100;
  compute_block_hashes(*longer, kBlock);
  e.add(longer, 0, RemoteKv{1000, 0});
  e.add(make_request(3, 333, 32, 1), 0, RemoteKv{1000, 0});  // 2 blocks, after those 3
  const StepPlan p = e.plan_step(0);
  ASSERT_EQ(p.admitted.size(), 2u);
  EXPECT_EQ(p.admitted[0]->cached_tokens, 64);
  EXPECT_EQ(e.next_load_done(), TimeNs{3000});
  EXPECT_EQ(e.counters().prefix_cache_hits, 64);
  e.plan_step(3000);  // the first read ends; the second ends 2 us later
  EXPECT_EQ(e.next_load_done(), TimeNs{5000});
}

// Two decode pods reading from one prefill pod at once: its link sends one read after the other.
TEST(EngineRemoteKv, ReadsFromOnePrefillPodQueueOnItsLink) {
  Engine a(config(), 64);
  Engine b(config(), 64);
  TimeNs prefill_link = 0;
  a.add(make_request(1, 111, 100, 1), 0, RemoteKv{1000, 0, false, &prefill_link});  // 7 blocks
  b.add(make_request(2, 222, 48, 1), 0, RemoteKv{1000, 0, false, &prefill_link});   // 3 blocks
  a.plan_step(0);
  b.plan_step(0);
  EXPECT_EQ(a.next_load_done(), TimeNs{7000});
  EXPECT_EQ(b.next_load_done(), TimeNs{10000});  // after a's read, though b's own link was free
  EXPECT_EQ(prefill_link, TimeNs{10000});
  // A TP 4 prefill pod's four NICs carry four TP 1 reads at once, each at its reader's pace.
  TimeNs wide_link = 0;
  std::vector<std::unique_ptr<Engine>> readers;
  for (int i = 0; i < 5; ++i) {
    readers.push_back(std::make_unique<Engine>(config(), 64));
    readers.back()->add(make_request(10 + i, 500 + static_cast<std::uint64_t>(i), 64, 1), 0,
                        RemoteKv{1000, 0, false, &wide_link, 0.25});  // 4 blocks each
    readers.back()->plan_step(0);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(readers[static_cast<size_t>(i)]->next_load_done(), 4000);
  EXPECT_EQ(readers[4]->next_load_done(), TimeNs{5000});  // a fifth waits for a share
  // A read from another prefill pod does not wait for this one.
  TimeNs other_link = 0;
  Engine c(config(), 64);
  c.add(make_request(3, 333, 48, 1), 0, RemoteKv{1000, 0, false, &other_link});
  c.plan_step(0);
  EXPECT_EQ(c.next_load_done(), TimeNs{3000});
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
  e.add(make_request(1, 111, 100, 2), 0, RemoteKv{1000, 0, true});
  StepPlan p = e.plan_step(0);
  EXPECT_TRUE(p.empty());
  ASSERT_EQ(e.next_load_done(), TimeNs{7000});  // it fails when it would have ended
  p = e.plan_step(7000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 100);  // the whole prompt, none of it read
  EXPECT_EQ(p.scheduled[0].context_tokens, 0);
  EXPECT_TRUE(p.load_failed.empty());
  EXPECT_EQ(e.finish_step(p).first_tokens.size(), 1u);

  EngineConfig fail = config();
  fail.fail_on_kv_load_error = true;
  Engine f(fail, 64);
  f.add(make_request(1, 111, 100, 2), 0, RemoteKv{1000, 0, true});
  f.add(make_request(2, 222, 32, 2), 0, RemoteKv{1000, 0});  // read after it, succeeds
  EXPECT_TRUE(f.plan_step(0).empty());
  EXPECT_EQ(f.cache().num_free_blocks(), 64 - 7 - 2);
  p = f.plan_step(7000);
  ASSERT_EQ(p.load_failed.size(), 1u);
  EXPECT_EQ(p.load_failed[0]->id, 1);
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(f.cache().num_free_blocks(), 64 - 2);
  p = f.plan_step(9000);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].seq->request->id, 2);
  EXPECT_EQ(p.scheduled[0].new_tokens, 1);
}

}  // namespace
}  // namespace fleetsim
