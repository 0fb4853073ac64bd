// Contract tests over the whole policy registry: whatever the policy, no request is lost, no KV
// block leaks, time never goes back, and a run is deterministic.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "policies/policy.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

class EveryPolicy : public ::testing::TestWithParam<std::string> {};

void expect_sane_records(const ArmResult& arm) {
  std::int64_t seen = 0;
  for (const auto& r : arm.records) {
    if (r.arrival < 0) continue;
    ++seen;
    ASSERT_TRUE(r.done) << "request " << r.id << " never ended";
    ASSERT_EQ(r.outcome, Outcome::kOk) << "request " << r.id;
    EXPECT_LE(r.arrival, r.dispatched);
    EXPECT_LT(r.dispatched, r.first_token);
    EXPECT_LE(r.first_token, r.finished);
    EXPECT_GE(r.cached_tokens, 0);
    EXPECT_LT(r.cached_tokens, r.prompt_tokens);
    EXPECT_EQ(r.cached_tokens % 16, 0);
  }
  EXPECT_EQ(seen, 48);
  EXPECT_EQ(arm.summary.completed, 48);
  EXPECT_EQ(arm.summary.failed, 0);
}

TEST_P(EveryPolicy, CompletesEveryRequestWithoutLeaks) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml(GetParam()), "small.yaml");
  // run_arm itself throws InternalError on a leaked block or a request that never ended.
  const ArmResult arm = run_arm(s, s.arms[0]);
  expect_sane_records(arm);
  std::int64_t hits = 0;
  for (const auto& p : arm.summary.per_pod) {
    EXPECT_LE(p.prefix_cache_hits, p.prefix_cache_queries);
    EXPECT_GE(p.prefix_cache_hits, 0);
    hits += p.prefix_cache_hits;
  }
  EXPECT_GT(hits, 0) << "multi-turn chats must reuse some prefix";
  EXPECT_TRUE(arm.warnings.empty()) << "a healthy run of shared prompts has no hazard to name";
}

TEST_P(EveryPolicy, SurvivesKvPressureWithPreemption) {
  // 150 blocks of 16 tokens cannot hold six live conversations: evictions and preemptions.
  const Scenario s = parse_scenario(testing::small_scenario_yaml(GetParam(), 150), "small.yaml");
  const ArmResult arm = run_arm(s, s.arms[0]);
  expect_sane_records(arm);
}

TEST_P(EveryPolicy, CompletesOnTwoPoolsBehindTwoGatewayReplicas) {
  // A heterogeneous fleet (pools of different GPUs and models) and a gateway of two replicas,
  // each with its own instance of the policy: the same contract holds.
  const Scenario s =
      parse_scenario(testing::small_pooled_scenario_yaml(GetParam(), 0, 2), "pooled.yaml");
  const ArmResult arm = run_arm(s, s.arms[0]);
  expect_sane_records(arm);
  ASSERT_EQ(arm.summary.per_pool.size(), 2u);
  EXPECT_EQ(arm.summary.per_pool[0].requests + arm.summary.per_pool[1].requests, 48);
  ASSERT_EQ(arm.summary.replicas.routed.size(), 2u);
  EXPECT_EQ(arm.summary.replicas.routed[0] + arm.summary.replicas.routed[1], 48);
}

TEST_P(EveryPolicy, RoutesOnlyToThePodsAnAutoscalerKeepsInService) {
  // One pod to start, an HPA on in-flight requests adding pods within seconds and removing them
  // as the conversations end, with a preStop hook longer than the endpoints' propagation: a
  // policy that routes only among the candidates it is given loses nothing.
  std::string yaml = testing::small_scenario_yaml(GetParam());
  yaml.replace(yaml.find("pods: 3"), 7, "pods: 1");
  yaml +=
      "autoscaling: {metric: inflight, target: 1.5, min_pods: 1, max_pods: 4, "
      "sync_period_s: 1, scrape_interval_s: 1, policy_period_s: 1, load_time_s: 2, "
      "scale_down_stabilization_s: 3, prestop_s: 1}\n";
  const Scenario s = parse_scenario(yaml, "autoscaled.yaml");
  const ArmResult arm = run_arm(s, s.arms[0]);
  expect_sane_records(arm);
  ASSERT_TRUE(arm.summary.autoscaling.has_value());
  EXPECT_GT(arm.summary.autoscaling->fleet.pods_added, 0);
  EXPECT_GT(arm.summary.autoscaling->fleet.pods_removed, 0);
}

TEST_P(EveryPolicy, IsDeterministic) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml(GetParam()), "small.yaml");
  const RunResult a = run_scenario(s, 1);
  const RunResult b = run_scenario(s, 1);
  EXPECT_EQ(result_json(a, s).dump(), result_json(b, s).dump());
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryPolicy,
                         ::testing::ValuesIn(PolicyRegistry::instance().names()),
                         [](const auto& p) {
                           // gtest names take letters, digits and '_' only.
                           std::string name = p.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(Contract, ThreadCountDoesNotChangeResults) {
  std::string yaml = testing::small_scenario_yaml("round_robin");
  yaml += "  - name: b\n    policy: chwbl\n  - name: c\n    policy: epp\n";
  const Scenario s = parse_scenario(yaml, "small.yaml");
  EXPECT_EQ(result_json(run_scenario(s, 1), s).dump(), result_json(run_scenario(s, 3), s).dump());
}

}  // namespace
}  // namespace fleetsim
