// Speculative decoding in the engine: a decode verifies its drafts in one step, takes 1 + k of
// the token budget, and yields the accepted drafts plus one token, as vLLM V1 does.
#include <gtest/gtest.h>

#include "models/block_hash.h"
#include "models/engine.h"

namespace fleetsim {
namespace {

constexpr std::int32_t kBlock = 16;

RequestPtr make_request(std::int64_t id, std::int32_t prompt_tokens, std::int32_t output_tokens) {
  auto r = std::make_shared<Request>();
  r->id = id;
  r->prompt = {{500 + static_cast<std::uint64_t>(id), prompt_tokens}};
  r->prompt_tokens = prompt_tokens;
  r->output_tokens = output_tokens;
  r->output_content_id = 900000 + static_cast<std::uint64_t>(id);
  compute_block_hashes(*r, kBlock);
  return r;
}

EngineConfig spec_config(std::int32_t k, double acceptance) {
  EngineConfig c;
  c.block_size = kBlock;
  c.max_num_batched_tokens = 512;
  c.num_speculative_tokens = k;
  c.spec_acceptance = acceptance;
  c.spec_seed = 7;
  return c;
}

TEST(EngineSpecDecode, AllAcceptedYieldsKPlusOneTokensAStep) {
  Engine e(spec_config(3, 1.0), 64);
  e.add(make_request(1, 40, 11), 0);
  StepPlan p = e.plan_step();
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].drafts, 0);  // the prefill samples one token and drafts
  e.finish_step(p);
  p = e.plan_step();
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 4);  // the last token and three drafts
  EXPECT_EQ(p.scheduled[0].context_tokens, 40);
  EXPECT_EQ(p.num_tokens, 4);
  e.finish_step(p);
  EXPECT_EQ(e.counters().generation_tokens, 1 + 4);
  // 5 of 11 out: one more full step (4), then only 1 draft is worth verifying for the last 2.
  e.finish_step(e.plan_step());
  p = e.plan_step();
  EXPECT_EQ(p.scheduled[0].drafts, 1);
  EXPECT_EQ(p.scheduled[0].new_tokens, 2);
  const StepOutcome out = e.finish_step(p);
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(e.counters().generation_tokens, 11);
  EXPECT_EQ(e.counters().spec_num_drafts, 3);
  EXPECT_EQ(e.counters().spec_num_draft_tokens, 3 + 3 + 1);
  EXPECT_EQ(e.counters().spec_num_accepted_tokens, 7);
  EXPECT_FALSE(e.has_work());
  e.cache().check_invariants();
}

TEST(EngineSpecDecode, NoneAcceptedYieldsOneTokenAStepAndKeepsNoDraftKv) {
  Engine e(spec_config(2, 0.0), 64);
  e.add(make_request(1, 32, 4), 0);
  e.finish_step(e.plan_step());
  for (int step = 0; step < 3; ++step) {
    const StepPlan p = e.plan_step();
    ASSERT_EQ(p.scheduled.size(), 1u);
    // The context grows by one token a step: rejected drafts leave nothing computed.
    EXPECT_EQ(p.scheduled[0].context_tokens, 32 + step);
    e.finish_step(p);
  }
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(e.counters().spec_num_accepted_tokens, 0);
  EXPECT_EQ(e.counters().generation_tokens, 4);
}

TEST(EngineSpecDecode, DraftsShareTheTokenBudget) {
  EngineConfig c = spec_config(3, 1.0);
  c.max_num_batched_tokens = 6;
  Engine e(c, 64);
  e.add(make_request(1, 5, 20), 0);
  e.finish_step(e.plan_step());  // 5 prompt tokens
  e.add(make_request(2, 5, 20), 0);
  StepPlan p = e.plan_step();
  ASSERT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 4);  // 1 + 3 drafts
  EXPECT_EQ(p.scheduled[1].new_tokens, 2);  // what is left goes to the new prompt
  e.finish_step(p);
  p = e.plan_step();  // both decode: 4 + the 2 left (1 + 1 draft)
  ASSERT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(p.scheduled[0].new_tokens, 4);
  EXPECT_EQ(p.scheduled[0].new_tokens + p.scheduled[1].new_tokens, 6);
}

TEST(EngineSpecDecode, TheMeanAcceptanceLengthFollowsTheAcceptanceRate) {
  // Geometric acceptance: 1 + a + a^2 + a^3 tokens a verifying step on average.
  const double a = 0.71;
  Engine e(spec_config(3, a), 4096);
  for (std::int64_t id = 1; id <= 40; ++id) e.add(make_request(id, 64, 400), 0);
  for (int i = 0; i < 2000 && e.has_work(); ++i) e.finish_step(e.plan_step());
  const auto& c = e.counters();
  ASSERT_GT(c.spec_num_drafts, 1000);
  const double length = 1.0 + static_cast<double>(c.spec_num_accepted_tokens) /
                                  static_cast<double>(c.spec_num_drafts);
  EXPECT_NEAR(length, 1 + a + a * a + a * a * a, 0.08);
}

}  // namespace
}  // namespace fleetsim
