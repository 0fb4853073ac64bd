// The measured failure outcomes of ../shared/validation/measured-3pod-a100.yaml
// (results.failures), reproduced by their scenarios.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

double counter(const ArmSummary& s, const std::string& name) {
  for (const auto& c : s.gateway_counters) {
    if (c.name == name) return c.value;
  }
  return -1;
}

TEST(FailureScenarios, EppOutageFailCloseAnswers503InOneToThreeMs) {
  const Scenario s = load_scenario(testing::source_path("scenarios/epp-outage.yaml"));
  const ArmResult a = run_arm(s, s.arms[0]);
  ASSERT_EQ(a.name, "failclose");
  EXPECT_EQ(a.failures["errors_by_class"]["http_503"], 20);  // 20 of 20 during the outage
  for (const auto& r : a.records) {
    if (r.outcome != Outcome::kNoPod503) continue;
    EXPECT_GE(r.finished - r.arrival, 1 * kNsPerMs);
    EXPECT_LE(r.finished - r.arrival, 3 * kNsPerMs);
  }
  EXPECT_EQ(a.summary.completed, 8);  // 8 of 8 after the picker returns
  EXPECT_EQ(counter(a.summary, "routed_by_policy"), 8);
}

TEST(FailureScenarios, EppOutageFailOpenServesThroughRoundRobin) {
  const Scenario s = load_scenario(testing::source_path("scenarios/epp-outage.yaml"));
  const ArmResult a = run_arm(s, s.arms[1]);
  ASSERT_EQ(a.name, "failopen");
  EXPECT_EQ(a.summary.completed, 28);
  EXPECT_EQ(a.summary.failed, 0);
  EXPECT_EQ(counter(a.summary, "routed_by_fallback"), 20);
  EXPECT_EQ(counter(a.summary, "routed_by_policy"), 8);
  // The 20 fallback requests (the first 20) spread 7/7/6 in some order by round robin.
  std::vector<int> per_pod(3, 0);
  for (const auto& r : a.records) {
    if (r.id < 20) ++per_pod[static_cast<size_t>(r.pod)];
  }
  std::sort(per_pod.begin(), per_pod.end());
  EXPECT_EQ(per_pod, (std::vector<int>{6, 7, 7}));
}

TEST(FailureScenarios, PodForceDeletedUnderLoadLosesNothing) {
  const Scenario s = load_scenario(testing::source_path("scenarios/epp-pod-deleted.yaml"));
  const ArmResult a = run_arm(s, s.arms[0]);
  EXPECT_EQ(a.summary.requests, 299);
  EXPECT_EQ(a.summary.completed, 299);
  EXPECT_EQ(a.failures["requests_lost"], 0);
  const auto& fault = a.failures["faults"][0];
  EXPECT_EQ(fault["requests_per_pod_after"][1], 0) << "nothing routed to the deleted pod";
  EXPECT_GT(fault["requests_per_pod_before"][1].get<int>(), 0);
  // Measured latency 0.243-0.290 s, with prompt and answer lengths the record does not give
  // (the scenario's are a guess): the simulated median within the 30% the issue allows a median
  // latency, of the range's middle, and no request slowed past the 50% it allows a tail, as a
  // retry or a wait for the deleted pod would.
  EXPECT_NEAR(a.summary.e2e_ms.p50, 266.5, 0.30 * 266.5);
  EXPECT_LE(a.summary.e2e_ms.p99, 1.5 * 290);
}

TEST(FailureScenarios, HrwPodKillIsDetectedWithinFallTimesInterval) {
  const Scenario s = load_scenario(testing::source_path("scenarios/hrw-pod-kill.yaml"));
  const ArmResult a = run_arm(s, s.arms[0]);
  const auto& fault = a.failures["faults"][0];
  // Probes every 10 s, fall 3: the third failed probe comes 20 to 30 s after the kill.
  EXPECT_GE(fault["detection_latency_s"].get<double>(), 20.0);
  EXPECT_LE(fault["detection_latency_s"].get<double>(), 30.0 + 0.01);
  // Requests fail only while the gateway still believes the pod is up.
  EXPECT_EQ(fault["errors_before_detection"], a.failures["errors_by_class"]["http_502"]);
  EXPECT_FALSE(fault["recovery_s"].is_null());
}

// A pipeline-parallel pod killed with microbatches under way: their requests fail, nothing of
// them stays in the pod (run_arm checks every block came back), and it serves again after.
TEST(FailureScenarios, APipelineKilledMidStepLosesItsMicrobatchesCleanly) {
  const Scenario s =
      load_scenario(testing::source_path("scenarios/hrw-pod-kill.yaml"),
                    {"fleet.pods_per_gpu=1", "fleet.server.gpu_memory_utilization=0.9",
                     "fleet.server.pipeline_parallel_size=2"});
  const ArmResult a = run_arm(s, s.arms[0]);
  EXPECT_GT(a.summary.failed, 0);
  EXPECT_EQ(a.summary.completed + a.summary.failed, a.summary.requests);
  EXPECT_FALSE(a.failures["faults"][0]["recovery_s"].is_null());
}

// A horizon that cuts the node-loss run mid-outage: every request is completed, failed or
// unfinished, and one waiting between a failed attempt and its retry is unfinished, not failed.
TEST(FailureScenarios, AHorizonCutLeavesRequestsUnfinishedAndRetriesNotFailed) {
  const Scenario s =
      load_scenario(testing::source_path("scenarios/node-loss.yaml"), {"sim.horizon_s=45"});
  std::int64_t between_attempts = 0;
  for (const ArmSpec& spec : s.arms) {
    const ArmResult a = run_arm(s, spec);
    SCOPED_TRACE(a.name);
    EXPECT_GT(a.summary.unfinished, 0);
    EXPECT_EQ(a.summary.requests, a.summary.completed + a.summary.failed + a.summary.unfinished);
    EXPECT_EQ(a.summary.failed, a.failures["requests_lost"].get<std::int64_t>());
    for (const auto& r : a.records) {
      if (r.arrival < 0 || r.done) continue;
      EXPECT_EQ(r.finished, -1) << "unfinished request " << r.id;
      // A failed attempt's outcome on an unfinished request: its retry waits or runs.
      between_attempts += r.outcome != Outcome::kOk;
    }
  }
  EXPECT_GT(between_attempts, 0) << "no request was between a failed attempt and its end";
}

}  // namespace
}  // namespace fleetsim
