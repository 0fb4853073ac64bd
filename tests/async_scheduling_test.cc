// vLLM's --async-scheduling overlaps the host work of the next step with the GPU work of this
// one: each decode step gets shorter by the host overhead, and nothing else changes.
#include <gtest/gtest.h>

#include "models/cost_model.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

TEST(AsyncScheduling, OverlapKeepsTheSlowerOfHostAndGpu) {
  EXPECT_EQ(overlapped_step_time(ms_to_ns(25.0), ms_to_ns(1.5)), ms_to_ns(23.5));
  // A host-bound step (0.5 ms of GPU work) still takes its host time.
  EXPECT_EQ(overlapped_step_time(ms_to_ns(2.0), ms_to_ns(1.5)), ms_to_ns(1.5));
  EXPECT_EQ(overlapped_step_time(0, ms_to_ns(1.5)), 0);
}

TEST(AsyncScheduling, DecodeStepsLoseTheHostOverhead) {
  const std::string yaml = testing::small_scenario_yaml("least_outstanding");
  const Scenario sync = parse_scenario(yaml, "small.yaml");
  const Scenario async = parse_scenario(yaml, "small.yaml", {"fleet.server.async_scheduling=true"});
  const RunResult a = run_scenario(sync, 1);
  const RunResult b = run_scenario(async, 1);
  const ArmSummary& s = a.arms[0].summary;
  const ArmSummary& t = b.arms[0].summary;
  EXPECT_EQ(s.requests, t.requests);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(t.failed, 0);
  // Default roofline step overhead: 1.5 ms a step, all of it host work.
  const double saved = s.tpot_ms.p50 - t.tpot_ms.p50;
  EXPECT_GT(saved, 1.0);
  EXPECT_LT(saved, 1.6);
  EXPECT_LT(t.e2e_ms.p50, s.e2e_ms.p50);
}

}  // namespace
}  // namespace fleetsim
