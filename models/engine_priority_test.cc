// vLLM's --scheduling-policy priority in the engine: the waiting queue in order of priority then
// arrival, and the lowest-priority running request preempted first, even one already in the
// step being planned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "models/engine.h"
#include "models/engine_test_util.h"

namespace fleetsim {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr std::int32_t kBlock = 16;

EngineConfig config(bool priority, std::int32_t max_seqs = 256) {
  EngineConfig c;
  c.block_size = kBlock;
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = max_seqs;
  c.priority_scheduling = priority;
  return c;
}

RequestPtr request(std::int64_t id, std::int32_t prompt, std::int32_t output,
                   std::int32_t priority) {
  RequestPtr r =
      engine_request(id, {{1000 + static_cast<std::uint64_t>(id), prompt}}, output, kBlock);
  r->priority = priority;
  return r;
}

// (id, new tokens) of each sequence a step schedules; the step is then finished.
std::vector<std::pair<std::int64_t, std::int32_t>> step(Engine& engine) {
  const StepPlan plan = engine.plan_step();
  std::vector<std::pair<std::int64_t, std::int32_t>> out;
  for (const ScheduledSeq& e : plan.scheduled) out.emplace_back(e.seq->request->id, e.new_tokens);
  engine.finish_step(plan);
  engine.cache().check_invariants();
  return out;
}

// One sequence a step: requests 1 (priority 0), 2 and 3 (priority 5), 4 (0), sent in that order.
std::vector<std::int64_t> admission_order(bool priority) {
  Engine engine(config(priority, 1), 64);
  const int priorities[] = {0, 5, 5, 0};
  for (int id = 1; id <= 4; ++id) engine.add(request(id, 20, 1, priorities[id - 1]), id);
  std::vector<std::int64_t> order;
  while (engine.has_work()) {
    for (const auto& [id, tokens] : step(engine)) order.push_back(id);
  }
  return order;
}

TEST(PriorityScheduling, AdmitsByPriorityThenArrivalWhereFcfsTakesArrivalOrder) {
  EXPECT_THAT(admission_order(true), ElementsAre(2, 3, 1, 4));
  EXPECT_THAT(admission_order(false), ElementsAre(1, 2, 3, 4));
}

// Four blocks. Request 1 (32 tokens, priority 0) then 2 (24 tokens, priority 5) both prefill and
// fill the cache; request 1's first decode needs a third block. FCFS preempts the newest (2) and
// 1 decodes; priority scheduling (which admitted 2 first) preempts the lowest priority, 1, and 2
// decodes.
TEST(PriorityScheduling, PreemptsTheLowestPriorityRequestNotTheNewest) {
  for (const bool priority : {true, false}) {
    Engine engine(config(priority), 4);
    engine.add(request(1, 32, 3, 0), 0);
    engine.add(request(2, 24, 3, 5), 1);
    if (priority) {
      EXPECT_THAT(step(engine), ElementsAre(Pair(2, 24), Pair(1, 32)));
      EXPECT_THAT(step(engine), ElementsAre(Pair(2, 1)));
    } else {
      EXPECT_THAT(step(engine), ElementsAre(Pair(1, 32), Pair(2, 24)));
      EXPECT_THAT(step(engine), ElementsAre(Pair(1, 1)));
    }
    EXPECT_EQ(engine.counters().num_preemptions, 1);
    EXPECT_EQ(engine.num_waiting(), 1);
    while (engine.has_work()) step(engine);
    EXPECT_EQ(engine.counters().request_success, 2);
  }
}

// Request 1 (24 tokens, priority 0) runs before request 2 (32 tokens, priority 5) arrives, so it
// comes first in the running list. When 2 needs a third block, 1 (decoding within its second)
// is already in the plan; as the lowest priority it is the victim all the same: it leaves the
// plan, its token goes back to the budget, and request 2 takes its blocks.
TEST(PriorityScheduling, AVictimAlreadyScheduledInTheStepLeavesIt) {
  Engine engine(config(true), 4);
  engine.add(request(1, 24, 5, 0), 0);
  EXPECT_THAT(step(engine), ElementsAre(Pair(1, 24)));
  engine.add(request(2, 32, 3, 5), 1);
  EXPECT_THAT(step(engine), ElementsAre(Pair(1, 1), Pair(2, 32)));
  EXPECT_THAT(step(engine), ElementsAre(Pair(2, 1)));
  EXPECT_EQ(engine.counters().num_preemptions, 1);
  while (engine.has_work()) step(engine);
  EXPECT_EQ(engine.counters().request_success, 2);
  EXPECT_EQ(engine.cache().num_free_blocks(), 4);
}

}  // namespace
}  // namespace fleetsim
