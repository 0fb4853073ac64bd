// Inter-token latency: each request's longest gap between two streamed tokens, from the engine
// steps that emit its tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/fleet/metrics.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

TEST(StreamingMetrics, ChunksEmitNothingTheLastChunkAndDecodesEmitATokenEach) {
  auto r = std::make_shared<Request>();
  r->id = 0;
  r->prompt_tokens = 100;
  r->output_tokens = 3;
  Sequence seq;
  seq.bind(r);
  RecordCollector c;
  c.on_arrival(*r, 0);
  c.on_dispatch(*r, 0, 0);
  auto step = [&](std::int32_t context, std::int32_t fresh, TimeNs start, TimeNs dt) {
    StepPlan plan;
    plan.scheduled.push_back(ScheduledSeq{.seq = &seq,
                                          .new_tokens = fresh,
                                          .context_tokens = context,
                                          .id = 0,
                                          .seq_tokens = seq.num_tokens()});
    c.on_step(0, plan, start, dt);
  };
  step(0, 60, 0, 50);  // a prefill chunk: no token
  EXPECT_EQ(c.records()[0].last_token, -1);
  step(60, 40, 50, 40);  // the last chunk: the first token at 90
  EXPECT_EQ(c.records()[0].last_token, 90);
  EXPECT_EQ(c.records()[0].max_itl, 0);
  seq.num_output = 1;
  step(100, 1, 90, 10);  // a decode: token 2 at 100, gap 10
  seq.num_output = 2;
  step(101, 1, 100, 35);  // a decode slowed by someone's prefill: token 3 at 135, gap 35
  EXPECT_EQ(c.records()[0].max_itl, 35);
  // A retry streams afresh.
  c.on_dispatch(*r, 1, 200);
  EXPECT_EQ(c.records()[0].max_itl, 0);
  EXPECT_EQ(c.records()[0].last_token, -1);
}

TEST(StreamingMetrics, WorstGapIsAtLeastTheMeanGapAndSummarised) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("round_robin"), "small.yaml");
  const RunResult r = run_scenario(s, 1);
  const auto& arm = r.arms[0];
  std::int64_t checked = 0;
  for (const auto& q : arm.records) {
    if (q.arrival < 0 || q.outcome != Outcome::kOk || q.output_tokens < 2) continue;
    const double mean_gap = tpot_ms(q);
    EXPECT_GE(ns_to_ms(q.max_itl) + 1e-6, mean_gap) << "request " << q.id;
    EXPECT_LE(ns_to_ms(q.max_itl), ns_to_ms(q.finished - q.first_token) + 1e-6);
    ++checked;
  }
  EXPECT_GT(checked, 20);
  EXPECT_EQ(arm.summary.max_itl_ms.count, checked);
  EXPECT_GE(arm.summary.max_itl_ms.p95, arm.summary.tpot_ms.p95);
}

}  // namespace
}  // namespace fleetsim
