#include "models/engine.h"

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "models/block_hash.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

constexpr std::int32_t kBlock = 16;

// A request whose prompt is `segments` (content ids must differ between unrelated texts).
RequestPtr make_request(std::int64_t id, std::vector<Segment> segments,
                        std::int32_t output_tokens) {
  auto r = std::make_shared<Request>();
  r->id = id;
  r->prompt = std::move(segments);
  r->prompt_tokens = total_tokens(r->prompt);
  r->output_tokens = output_tokens;
  r->output_content_id = 900000 + static_cast<std::uint64_t>(id);
  compute_block_hashes(*r, kBlock);
  return r;
}

// A request with one segment of its own content.
RequestPtr make_request(std::int64_t id, std::int32_t prompt_tokens, std::int32_t output_tokens) {
  return make_request(id, {{1000 + static_cast<std::uint64_t>(id), prompt_tokens}}, output_tokens);
}

struct Entry {
  std::int64_t id;
  std::int32_t new_tokens;
  std::int32_t context;
  bool operator==(const Entry&) const = default;
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << "{id " << e.id << ", new " << e.new_tokens << ", ctx " << e.context << "}";
}

using Entries = std::vector<Entry>;
using Ids = std::vector<std::int64_t>;

// What one plan_step() + finish_step() did, copied out (finished sequences die with the outcome).
struct Step {
  Entries entries;
  std::map<std::int64_t, std::int32_t> admitted;  // id -> cached_tokens
  std::int32_t num_tokens = 0;
  std::int32_t num_prefill = 0;
  std::int32_t num_decode = 0;
  Ids first_tokens;
  Ids finished;
};

Step run_step(Engine& engine) {
  const StepPlan plan = engine.plan_step();
  Step s;
  EXPECT_EQ(plan.batch.size(), plan.scheduled.size());
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    const ScheduledSeq& e = plan.scheduled[i];
    s.entries.push_back({e.seq->request->id, e.new_tokens, e.context_tokens});
    EXPECT_EQ(plan.batch[i].new_tokens, e.new_tokens);
    EXPECT_EQ(plan.batch[i].context_tokens, e.context_tokens);
  }
  for (const Sequence* a : plan.admitted) s.admitted[a->request->id] = a->cached_tokens;
  s.num_tokens = plan.num_tokens;
  s.num_prefill = plan.num_prefill_seqs;
  s.num_decode = plan.num_decode_seqs;
  const StepOutcome out = engine.finish_step(plan);
  for (const Sequence* f : out.first_tokens) s.first_tokens.push_back(f->request->id);
  for (const auto& f : out.finished) s.finished.push_back(f->request->id);
  engine.cache().check_invariants();
  return s;
}

EngineConfig config(std::int32_t budget = 2048, std::int32_t max_seqs = 256) {
  EngineConfig c;
  c.block_size = kBlock;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  return c;
}

void expect_drained(const Engine& engine) {
  EXPECT_FALSE(engine.has_work());
  EXPECT_EQ(engine.num_running(), 0);
  EXPECT_EQ(engine.num_waiting(), 0);
  EXPECT_EQ(engine.cache().num_free_blocks(), engine.cache().num_blocks());
  engine.cache().check_invariants();
}

TEST(Engine, RejectsBadConfigAndRequestsWithoutHashes) {
  EXPECT_THROW(Engine(config(0), 8), ScenarioError);
  EXPECT_THROW(Engine(config(2048, 0), 8), ScenarioError);
  Engine engine(config(), 8);
  auto r = std::make_shared<Request>();
  r->prompt = {{1, 20}};
  r->prompt_tokens = 20;
  EXPECT_THROW(engine.add(r, 0), InternalError);  // no hashes
  compute_block_hashes(*r, 32);
  EXPECT_THROW(engine.add(r, 0), InternalError);  // hashes at another block size
}

TEST(Engine, AStepUnderWayKeepsItsRequestsOutOfTheNextPlan) {
  // A pipeline-parallel pod plans its next microbatch while this one runs: a prompt's next chunk
  // may follow the one under way, but a request waits for its token before it decodes again.
  Engine engine(config(64), 64);
  engine.add(make_request(1, 40, 3), 0);
  engine.add(make_request(2, 40, 3), 0);
  const StepPlan first = engine.plan_step();
  ASSERT_EQ(first.scheduled.size(), 2u);  // 40 + 24 of 64
  EXPECT_EQ(first.scheduled[1].new_tokens, 24);
  EXPECT_TRUE(engine.in_flight(1, 1));
  engine.add(make_request(3, 10, 3), 0);
  const StepPlan second = engine.plan_step();
  // Request 2's last 16 prompt tokens, after the 24 under way, and request 3's prompt; request 1
  // waits for its first token.
  ASSERT_EQ(second.scheduled.size(), 2u);
  EXPECT_EQ(second.scheduled[0].seq->request->id, 2);
  EXPECT_EQ(second.scheduled[0].new_tokens, 16);
  EXPECT_EQ(second.scheduled[0].context_tokens, 24);
  EXPECT_EQ(second.scheduled[1].seq->request->id, 3);
  EXPECT_TRUE(engine.plan_step().empty());  // everything is under way
  engine.finish_step(first);
  EXPECT_FALSE(engine.in_flight(1, 1));
  EXPECT_TRUE(engine.in_flight(2, 1));  // its second chunk still is
  const StepPlan third = engine.plan_step();
  ASSERT_EQ(third.scheduled.size(), 1u);
  EXPECT_EQ(third.scheduled[0].seq->request->id, 1);
  EXPECT_EQ(third.scheduled[0].new_tokens, 1);
  // Request 2's first token comes with its last chunk, not its first.
  const StepOutcome out = engine.finish_step(second);
  ASSERT_EQ(out.first_tokens.size(), 2u);
  EXPECT_EQ(out.first_tokens[0]->request->id, 2);
  engine.finish_step(third);
  EXPECT_FALSE(engine.in_flight(3, 1));
}

TEST(Engine, AChunkUnderWayWaitsForBlocksInsteadOfPreemptingThisStep) {
  // 8 blocks of 16 tokens. Request 1 decodes; request 2's first 64-token chunk is under way when
  // the next step is planned, and its next chunk needs more blocks than are free. The only
  // request not under way is request 1, already in this step: it stays, and request 2 waits.
  Engine engine(config(64), 8);
  engine.add(make_request(1, 16, 10), 0);
  engine.finish_step(engine.plan_step());
  const StepPlan decode = engine.plan_step();  // request 1 under way
  engine.add(make_request(2, 200, 3), 0);
  const StepPlan chunk = engine.plan_step();  // request 2's first chunk under way
  ASSERT_EQ(chunk.scheduled.size(), 1u);
  engine.finish_step(decode);
  const StepPlan next = engine.plan_step();
  ASSERT_EQ(next.scheduled.size(), 1u);
  EXPECT_EQ(next.scheduled[0].seq->request->id, 1);
  EXPECT_EQ(engine.counters().num_preemptions, 0);
  engine.finish_step(chunk);
  engine.finish_step(next);
  engine.cache().check_invariants();
}

TEST(Engine, SingleRequestPrefillThenDecodes) {
  Engine engine(config(), 64);
  // Prompt 100 + 30 = 130 tokens, 4 output tokens.
  engine.add(make_request(1, {{11, 100}, {12, 30}}, 4), 0);
  EXPECT_TRUE(engine.has_work());
  EXPECT_EQ(engine.num_waiting(), 1);

  // Step 1: the whole prompt (130 <= 2048) in one entry from context 0; the step samples token 1.
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 130, 0}}));
  EXPECT_EQ(s.admitted, (std::map<std::int64_t, std::int32_t>{{1, 0}}));
  EXPECT_EQ(s.num_tokens, 130);
  EXPECT_EQ(s.num_prefill, 1);
  EXPECT_EQ(s.num_decode, 0);
  EXPECT_EQ(s.first_tokens, Ids{1});
  EXPECT_TRUE(s.finished.empty());
  EXPECT_EQ(engine.num_running(), 1);
  EXPECT_EQ(engine.num_waiting(), 0);
  EXPECT_EQ(engine.cache().blocks_held(1), 9);      // ceil(130 / 16) = 9
  EXPECT_EQ(engine.cache().num_free_blocks(), 55);  // 64 - 9

  // Steps 2..4: one decode token each, context = prompt + outputs so far - 1 = 130, 131, 132.
  for (std::int32_t k = 0; k < 3; ++k) {
    s = run_step(engine);
    EXPECT_EQ(s.entries, (Entries{{1, 1, 130 + k}})) << "decode " << k;
    EXPECT_EQ(s.num_decode, 1);
    EXPECT_EQ(s.num_prefill, 0);
    EXPECT_TRUE(s.admitted.empty());
    EXPECT_TRUE(s.first_tokens.empty());
    EXPECT_EQ(s.finished, k == 2 ? Ids{1} : Ids{});
  }
  expect_drained(engine);
  // Freed blocks keep their hashes: full blocks of 133 tokens = 8 (the 9th holds 5 tokens).
  EXPECT_EQ(engine.cache().num_cached_blocks(), 8);
  const EngineCounters& c = engine.counters();
  EXPECT_EQ(c.prompt_tokens, 130);
  EXPECT_EQ(c.generation_tokens, 4);
  EXPECT_EQ(c.request_success, 1);
  EXPECT_EQ(c.steps, 4);
  EXPECT_EQ(c.num_preemptions, 0);
  EXPECT_EQ(c.prefix_cache_queries, 130);
  EXPECT_EQ(c.prefix_cache_hits, 0);
  EXPECT_TRUE(engine.plan_step().empty());
}

TEST(Engine, ChunkedPrefillWithWholePromptAdmissionSplitsLongPromptAcrossSteps) {
  EngineConfig c = config(2048);
  c.admit_whole_prompt = true;
  Engine engine(c, 400);
  engine.add(make_request(1, 5000, 2), 0);
  // 5000 = 2048 + 2048 + 904; no token until the last chunk.
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 2048, 0}}));
  EXPECT_TRUE(s.first_tokens.empty());
  // admit_whole_prompt: ceil(5000 / 16) = 313 blocks at admission, 400 - 313 = 87 free.
  EXPECT_EQ(engine.cache().blocks_held(1), 313);
  EXPECT_EQ(engine.cache().num_free_blocks(), 87);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 2048, 2048}}));
  EXPECT_EQ(s.num_prefill, 1);
  EXPECT_TRUE(s.first_tokens.empty());
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 904, 4096}}));
  EXPECT_EQ(s.num_prefill, 1);
  EXPECT_EQ(s.first_tokens, Ids{1});
  EXPECT_EQ(engine.counters().generation_tokens, 1);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 5000}}));
  EXPECT_EQ(s.finished, Ids{1});
  expect_drained(engine);
  EXPECT_EQ(engine.counters().prompt_tokens, 5000);
  EXPECT_EQ(engine.counters().generation_tokens, 2);
  EXPECT_EQ(engine.counters().steps, 4);
}

TEST(Engine, ChunkedPrefillHoldsOnlyTheChunksScheduledSoFar) {
  Engine engine(config(2048), 400);
  engine.add(make_request(1, 5000, 1), 0);
  run_step(engine);
  EXPECT_EQ(engine.cache().blocks_held(1), 128);  // 2048 / 16
  run_step(engine);
  EXPECT_EQ(engine.cache().blocks_held(1), 256);  // 4096 / 16
  const Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 904, 4096}}));
  EXPECT_EQ(s.finished, Ids{1});
  expect_drained(engine);
}

TEST(Engine, DecodesComeFirstAndPrefillGetsTheRestOfTheBudget) {
  Engine engine(config(64), 100);
  engine.add(make_request(1, 20, 5), 0);
  engine.add(make_request(2, 20, 5), 0);
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 20, 0}, {2, 20, 0}}));
  EXPECT_EQ(s.num_tokens, 40);
  engine.add(make_request(3, 100, 2), 0);
  // Two decodes take 2 tokens; the new prompt gets 64 - 2 = 62.
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 20}, {2, 1, 20}, {3, 62, 0}}));
  EXPECT_EQ(s.num_tokens, 64);
  EXPECT_EQ(s.num_decode, 2);
  EXPECT_EQ(s.num_prefill, 1);
  EXPECT_TRUE(s.first_tokens.empty());
  // Then the rest of it: 100 - 62 = 38, after the two decodes.
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 21}, {2, 1, 21}, {3, 38, 62}}));
  EXPECT_EQ(s.num_tokens, 40);
  EXPECT_EQ(s.first_tokens, Ids{3});
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 22}, {2, 1, 22}, {3, 1, 100}}));
  EXPECT_EQ(s.finished, Ids{3});
}

TEST(Engine, RunningPartialPrefillGoesBeforeWaitingRequests) {
  Engine engine(config(64), 100);
  engine.add(make_request(1, 100, 1), 0);
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 64, 0}}));
  engine.add(make_request(2, 50, 1), 0);
  // Request 1 (running) takes its remaining 36; request 2 gets 64 - 36 = 28.
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 36, 64}, {2, 28, 0}}));
  EXPECT_EQ(s.num_prefill, 2);
  EXPECT_EQ(s.first_tokens, Ids{1});
  EXPECT_EQ(s.finished, Ids{1});
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 22, 28}}));
  EXPECT_EQ(s.finished, Ids{2});
  expect_drained(engine);
}

TEST(Engine, MaxNumSeqsLimitsAdmission) {
  Engine engine(config(2048, 2), 100);
  engine.add(make_request(1, 16, 2), 0);
  engine.add(make_request(2, 16, 3), 0);
  engine.add(make_request(3, 16, 1), 0);
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 16, 0}, {2, 16, 0}}));
  EXPECT_EQ(engine.num_running(), 2);
  EXPECT_EQ(engine.num_waiting(), 1);
  // Still two running while this step is planned: request 3 waits though budget is left.
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 16}, {2, 1, 16}}));
  EXPECT_EQ(s.finished, Ids{1});
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 1, 17}, {3, 16, 0}}));
  EXPECT_EQ(s.finished, (Ids{2, 3}));
  expect_drained(engine);
  EXPECT_EQ(engine.counters().steps, 3);
  EXPECT_EQ(engine.counters().request_success, 3);
  EXPECT_EQ(engine.counters().generation_tokens, 6);  // 2 + 3 + 1
}

TEST(Engine, PrefixCacheHitOnSharedPrefix) {
  Engine engine(config(), 64);
  // A 64-token shared prefix (4 blocks of 16), then distinct questions.
  constexpr std::uint64_t kPrefix = 7;
  engine.add(make_request(1, {{kPrefix, 64}, {11, 20}}, 3), 0);  // 84 tokens
  Step s = run_step(engine);
  EXPECT_EQ(s.admitted, (std::map<std::int64_t, std::int32_t>{{1, 0}}));
  while (engine.has_work()) run_step(engine);

  // 94 tokens: lookup cap floor(93 / 16) = 5 blocks; blocks 0..3 hit, block 4 (question) misses.
  engine.add(make_request(2, {{kPrefix, 64}, {21, 30}}, 2), 0);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 30, 64}}));
  EXPECT_EQ(s.admitted, (std::map<std::int64_t, std::int32_t>{{2, 64}}));
  EXPECT_EQ(engine.counters().prefix_cache_queries, 84 + 94);
  EXPECT_EQ(engine.counters().prefix_cache_hits, 64);
  while (engine.has_work()) run_step(engine);

  // Exactly the prefix (64 tokens): cap floor(63 / 16) = 3 blocks = 48 tokens, so the last
  // block (16 tokens) is recomputed.
  engine.add(make_request(3, {{kPrefix, 64}}, 1), 0);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{3, 16, 48}}));
  EXPECT_EQ(s.admitted, (std::map<std::int64_t, std::int32_t>{{3, 48}}));
  EXPECT_EQ(s.finished, Ids{3});
  expect_drained(engine);
  const EngineCounters& c = engine.counters();
  EXPECT_EQ(c.prefix_cache_queries, 84 + 94 + 64);
  EXPECT_EQ(c.prefix_cache_hits, 64 + 48);
  // prompt_tokens_total counts whole prompts, cached tokens included (as vLLM does).
  EXPECT_EQ(c.prompt_tokens, 84 + 94 + 64);
  EXPECT_EQ(c.generation_tokens, 3 + 2 + 1);
}

TEST(Engine, PrefixCachingOffNeverHits) {
  EngineConfig cfg = config();
  cfg.enable_prefix_caching = false;
  Engine engine(cfg, 64);
  engine.add(make_request(1, {{7, 64}, {11, 20}}, 1), 0);
  while (engine.has_work()) run_step(engine);
  engine.add(make_request(2, {{7, 64}, {21, 30}}, 1), 0);
  const Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 94, 0}}));
  EXPECT_EQ(engine.counters().prefix_cache_hits, 0);
  EXPECT_EQ(engine.cache().num_cached_blocks(), 0);
}

// 6 blocks. A = [sys 32, qA 32] (64 tokens, 4 blocks) with 4 outputs; B = [sys 32, qB 40]
// (72 tokens, 5 blocks) shares A's two system blocks. While A runs, B needs 5 - 2 = 3 new blocks:
//   step 1: A takes 4 (free 2): B's lookup hits 2 blocks (32 tokens), needs 3 > 2: waits.
//   step 2: A decodes at 65 tokens -> 5 blocks (free 1): B waits.   steps 3, 4: same; A
//   finishes at step 4 (4th token) and frees its 5 blocks.
//   step 5: B hits 32 tokens again; needs 5 - 2 new + 2 reused free = 5 <= 6: admitted.
// So B is looked up at steps 1..5: five times.
struct CountingRun {
  EngineCounters counters;
  std::int32_t b_cached = -1;
  std::int64_t evictions = 0;
};

CountingRun run_counting(PrefixCountingMode mode) {
  EngineConfig cfg = config();
  cfg.counting = mode;
  Engine engine(cfg, 6);
  engine.add(make_request(1, {{100, 32}, {101, 32}}, 4), 0);
  engine.add(make_request(2, {{100, 32}, {201, 40}}, 2), 0);
  CountingRun out;
  std::vector<Entries> steps;
  while (engine.has_work()) {
    const Step s = run_step(engine);
    steps.push_back(s.entries);
    if (s.admitted.contains(2)) out.b_cached = s.admitted.at(2);
  }
  const std::vector<Entries> expected = {
      {{1, 64, 0}}, {{1, 1, 64}}, {{1, 1, 65}}, {{1, 1, 66}}, {{2, 40, 32}}, {{2, 1, 72}},
  };
  EXPECT_EQ(steps, expected);
  expect_drained(engine);
  out.counters = engine.counters();
  out.evictions = engine.cache().evictions();
  return out;
}

TEST(Engine, PerRequestCountingCountsAWaitingRequestOnce) {
  const CountingRun r = run_counting(PrefixCountingMode::kPerRequest);
  EXPECT_EQ(r.b_cached, 32);
  EXPECT_EQ(r.counters.prefix_cache_queries, 64 + 72);
  EXPECT_EQ(r.counters.prefix_cache_hits, 0 + 32);
  EXPECT_EQ(r.counters.steps, 6);
  EXPECT_EQ(r.counters.prompt_tokens, 64 + 72);
  // Free queue after A leaves: [5, 4, 3, 2, 1, 0] (A freed 4..0 tail first). B reuses 0 and 1
  // and pops 5 and 4 (never hashed) and 3 (A's hashed block 3): one eviction.
  EXPECT_EQ(r.evictions, 1);
}

TEST(Engine, PerLookupCountingCountsAWaitingRequestEveryStep) {
  const CountingRun r = run_counting(PrefixCountingMode::kPerLookup);
  EXPECT_EQ(r.b_cached, 32);
  EXPECT_EQ(r.counters.prefix_cache_queries, 64 + 5 * 72);  // 424
  EXPECT_EQ(r.counters.prefix_cache_hits, 0 + 5 * 32);      // 160
  EXPECT_EQ(r.counters.steps, 6);
}

// 10 blocks. A (80 tokens, 5 blocks, 3 outputs) runs; B (100 tokens, 7 blocks) waits at the head
// because only 5 then 4 blocks are free; C (16 tokens, 1 block) would fit but waits behind B.
TEST(Engine, HeadOfLineBlockingHoldsBackSmallerRequests) {
  Engine engine(config(), 10);
  engine.add(make_request(1, 80, 3), 0);
  engine.add(make_request(2, 100, 1), 0);
  engine.add(make_request(3, 16, 1), 0);
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 80, 0}}));
  EXPECT_EQ(engine.cache().num_free_blocks(), 5);
  EXPECT_EQ(engine.num_waiting(), 2);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 80}}));
  EXPECT_EQ(engine.cache().num_free_blocks(), 4);  // 81 tokens -> 6 blocks
  EXPECT_EQ(engine.num_waiting(), 2);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 81}}));
  EXPECT_EQ(s.finished, Ids{1});
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 100, 0}, {3, 16, 0}}));
  EXPECT_EQ(s.first_tokens, (Ids{2, 3}));
  EXPECT_EQ(s.finished, (Ids{2, 3}));
  expect_drained(engine);
}

TEST(Engine, SmallRequestAheadOfTheBlockedOneIsAdmitted) {
  // Control for the test above: with C ahead of B, C fits into the 5 free blocks at once.
  Engine engine(config(), 10);
  engine.add(make_request(1, 80, 3), 0);
  engine.add(make_request(3, 16, 1), 0);
  engine.add(make_request(2, 100, 1), 0);
  const Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 80, 0}, {3, 16, 0}}));
  EXPECT_EQ(engine.num_waiting(), 1);
}

// No prefix caching, 5 blocks. A and B have 32-token prompts (2 blocks each); A makes 4 tokens,
// B 3. D (16 tokens, 1 token out) arrives after step 1.
//   step 1: A, B prefill (4 blocks, free 1); both emit their first token.
//   step 2: A grows to 33 tokens (3rd block, free 0); B needs a 3rd block: B is the newest
//           running request, so B itself is preempted (frees 2) and goes in front of D.
//           No admission in a step that preempted.
//   step 3: A decodes; B (33 tokens = 32 prompt + 1 output) needs 3 blocks > 2 free, and D
//           (1 block, would fit) waits behind it.
//   step 4: A decodes its 4th token and finishes (frees 3).
//   step 5: B recomputes 33 tokens from 0 and samples its 2nd token (no new first token);
//           D prefills and finishes.
//   step 6: B decodes its 3rd token.
TEST(Engine, PreemptsNewestRunningAndRecomputesIt) {
  EngineConfig cfg = config();
  cfg.enable_prefix_caching = false;
  Engine engine(cfg, 5);
  engine.add(make_request(1, 32, 4), 0);
  engine.add(make_request(2, 32, 3), 0);
  std::map<std::int64_t, int> first_tokens;
  auto step = [&]() {
    Step s = run_step(engine);
    for (const auto id : s.first_tokens) ++first_tokens[id];
    return s;
  };
  Step s = step();
  EXPECT_EQ(s.entries, (Entries{{1, 32, 0}, {2, 32, 0}}));
  EXPECT_EQ(s.first_tokens, (Ids{1, 2}));
  engine.add(make_request(3, 16, 1), 0);

  s = step();
  EXPECT_EQ(s.entries, (Entries{{1, 1, 32}}));
  EXPECT_EQ(engine.counters().num_preemptions, 1);
  EXPECT_EQ(engine.num_running(), 1);
  EXPECT_EQ(engine.num_waiting(), 2);
  EXPECT_EQ(engine.cache().blocks_held(2), 0);
  EXPECT_EQ(engine.cache().num_free_blocks(), 2);

  s = step();
  EXPECT_EQ(s.entries, (Entries{{1, 1, 33}}));  // D is not admitted: B is ahead of it
  s = step();
  EXPECT_EQ(s.entries, (Entries{{1, 1, 34}}));
  EXPECT_EQ(s.finished, Ids{1});

  s = step();
  EXPECT_EQ(s.entries, (Entries{{2, 33, 0}, {3, 16, 0}}));
  EXPECT_EQ(s.num_prefill, 2);
  EXPECT_EQ(s.admitted, (std::map<std::int64_t, std::int32_t>{{3, 0}}));  // B not re-admitted
  EXPECT_EQ(s.first_tokens, Ids{3});
  EXPECT_EQ(s.finished, Ids{3});
  s = step();
  EXPECT_EQ(s.entries, (Entries{{2, 1, 33}}));
  EXPECT_EQ(s.finished, Ids{2});

  expect_drained(engine);
  EXPECT_EQ(first_tokens, (std::map<std::int64_t, int>{{1, 1}, {2, 1}, {3, 1}}));
  const EngineCounters& c = engine.counters();
  EXPECT_EQ(c.num_preemptions, 1);
  EXPECT_EQ(c.steps, 6);
  EXPECT_EQ(c.request_success, 3);
  EXPECT_EQ(c.generation_tokens, 4 + 3 + 1);
  EXPECT_EQ(c.prompt_tokens, 32 + 32 + 16);  // B's recomputed prompt is not counted again
  // B's lookup after preemption is not exported.
  EXPECT_EQ(c.prefix_cache_queries, 32 + 32 + 16);
}

// Prefix caching on, 4 blocks. A = 32 tokens (2 blocks), B = 24 tokens (2 blocks, one full),
// both 2 outputs.
//   step 1: both prefill; free 0. B's full block 0 is hashed.
//   step 2: A needs a 3rd block; the newest running request, B, is preempted (not A itself),
//           which frees B's blocks (tail first: the unhashed one is reused by A). A finishes.
//   step 3: B is readmitted with 24 + 1 = 25 tokens; its hashed block 0 is still cached:
//           cap floor(24 / 16) = 1 block, so it recomputes 25 - 16 = 9 tokens and finishes.
TEST(Engine, PreemptsNewestToMakeRoomForAnOlderRequest) {
  Engine engine(config(), 4);
  engine.add(make_request(1, 32, 2), 0);
  engine.add(make_request(2, 24, 2), 0);
  Step s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 32, 0}, {2, 24, 0}}));
  EXPECT_EQ(s.first_tokens, (Ids{1, 2}));
  EXPECT_EQ(engine.cache().num_free_blocks(), 0);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{1, 1, 32}}));
  EXPECT_EQ(s.finished, Ids{1});
  EXPECT_EQ(engine.counters().num_preemptions, 1);
  EXPECT_EQ(engine.num_waiting(), 1);
  s = run_step(engine);
  EXPECT_EQ(s.entries, (Entries{{2, 9, 16}}));
  EXPECT_EQ(s.num_prefill, 1);
  EXPECT_TRUE(s.admitted.empty());
  EXPECT_TRUE(s.first_tokens.empty());
  EXPECT_EQ(s.finished, Ids{2});
  expect_drained(engine);
  const EngineCounters& c = engine.counters();
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.generation_tokens, 4);
  EXPECT_EQ(c.prompt_tokens, 32 + 24);
  EXPECT_EQ(c.prefix_cache_queries, 32 + 24);
  EXPECT_EQ(c.prefix_cache_hits, 0);
}

// The run above with vLLM 0.10's counting: B's lookup when it resumes is counted too, with its
// 25 tokens and the one block of them still cached. Its lookup at step 3 is what vLLM's log
// shows as hits in a run that preempts and has no shared prefixes at all.
TEST(Engine, PerLookupCountingCountsTheLookupOfAPreemptedRequest) {
  EngineConfig cfg = config();
  cfg.counting = PrefixCountingMode::kPerLookup;
  Engine engine(cfg, 4);
  engine.add(make_request(1, 32, 2), 0);
  engine.add(make_request(2, 24, 2), 0);
  while (engine.has_work()) run_step(engine);
  expect_drained(engine);
  const EngineCounters& c = engine.counters();
  EXPECT_EQ(c.num_preemptions, 1);
  EXPECT_EQ(c.prefix_cache_queries, 32 + 24 + 25);
  EXPECT_EQ(c.prefix_cache_hits, 16);
}

TEST(Engine, AbortAllReturnsEveryRequestAndFreesBlocks) {
  Engine engine(config(), 10);
  engine.add(make_request(1, 80, 3), 0);
  engine.add(make_request(2, 100, 1), 0);
  run_step(engine);
  const std::vector<RequestPtr> aborted = engine.abort_all();
  ASSERT_EQ(aborted.size(), 2u);
  EXPECT_EQ(aborted[0]->id, 1);  // running first, then waiting
  EXPECT_EQ(aborted[1]->id, 2);
  expect_drained(engine);
}

TEST(Engine, ConfigDefaultsDependOnTheGpu) {
  const Params defaults = server_spec().defaults();
  const EngineConfig a100 = engine_config_from(defaults, 79.25, "A100-SXM4-80GB");
  EXPECT_EQ(a100.max_num_batched_tokens, 2048);
  EXPECT_EQ(a100.max_num_seqs, 256);
  const EngineConfig a100_lower = engine_config_from(defaults, 79.25, "nvidia a100 80gb");
  EXPECT_EQ(a100_lower.max_num_batched_tokens, 2048);
  const EngineConfig h100 = engine_config_from(defaults, 79.11, "H100-SXM5-80GB");
  EXPECT_EQ(h100.max_num_batched_tokens, 8192);
  EXPECT_EQ(h100.max_num_seqs, 1024);
  const EngineConfig l40s = engine_config_from(defaults, 44.4, "L40S");
  EXPECT_EQ(l40s.max_num_batched_tokens, 2048);
  EXPECT_EQ(l40s.max_num_seqs, 256);
  // The rest comes from the spec's defaults.
  EXPECT_EQ(h100.block_size, 16);
  EXPECT_TRUE(h100.enable_prefix_caching);
  EXPECT_TRUE(h100.enable_chunked_prefill);
  EXPECT_FALSE(h100.admit_whole_prompt);
  EXPECT_EQ(h100.counting, PrefixCountingMode::kPerRequest);
}

TEST(Engine, ExplicitServerSettingsWin) {
  Params p = server_spec().defaults();
  p.set("max_num_batched_tokens", std::int64_t{4096});
  p.set("max_num_seqs", std::int64_t{64});
  p.set("block_size", std::int64_t{32});
  p.set("enable_prefix_caching", false);
  p.set("admit_whole_prompt", true);
  p.set("prefix_counting", std::string("per_lookup"));
  for (const auto& [gib, name] :
       std::vector<std::pair<double, std::string>>{{79.25, "A100"}, {79.11, "H100"}}) {
    const EngineConfig c = engine_config_from(p, gib, name);
    EXPECT_EQ(c.max_num_batched_tokens, 4096) << name;
    EXPECT_EQ(c.max_num_seqs, 64) << name;
    EXPECT_EQ(c.block_size, 32);
    EXPECT_FALSE(c.enable_prefix_caching);
    EXPECT_TRUE(c.admit_whole_prompt);
    EXPECT_EQ(c.counting, PrefixCountingMode::kPerLookup);
  }
}

// vLLM's abort (the client went away): the request leaves the queue it is in, running or
// waiting, its blocks go back to the free queue and stay cached.
TEST(Engine, AnAbortedRequestLeavesItsQueueAndFreesItsBlocks) {
  Engine engine(config(2048, 1), 64);
  engine.add(make_request(1, 100, 50), 0);  // runs: 7 blocks
  engine.add(make_request(2, 100, 50), 0);  // waits behind max_num_seqs 1
  StepPlan p = engine.plan_step(0);
  ASSERT_EQ(p.scheduled.size(), 1U);
  engine.finish_step(p);
  EXPECT_EQ(engine.num_running(), 1);
  EXPECT_EQ(engine.num_waiting(), 1);
  EXPECT_FALSE(engine.abort(2, 2));  // another attempt
  EXPECT_FALSE(engine.abort(3, 1));  // not here
  EXPECT_TRUE(engine.abort(2, 1));
  EXPECT_EQ(engine.num_waiting(), 0);
  EXPECT_TRUE(engine.abort(1, 1));
  EXPECT_FALSE(engine.abort(1, 1));
  expect_drained(engine);
  // Its prompt's full blocks stay in the prefix cache for whoever sends it again.
  EXPECT_EQ(engine.cache().lookup(*make_request(1, 100, 1)->block_hashes, 100), 6);
}

}  // namespace
}  // namespace fleetsim
