// `fleetsim plan --window`: the fewest pods per window of an open-loop burst, made a schedule
// that the arm's run with it confirms, the same at any thread count; refusals name what to fix.
#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"
#include "sim/fleet/plan/window_plan.h"
#include "sim/fleet/pod_schedule.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

class WindowPlan : public testing::TempDirTest {
 protected:
  WindowPlan() : TempDirTest("fleetsim-window-plan-") {}

  // 2 req/s, 60 req/s from 100 s to 200 s, 2 again: one L40S pod carries the quiet windows,
  // not the burst.
  std::string scenario(const std::string& slo = "slo: {ttft_ms: 300}\n") {
    return testing::write_file(
        dir_ / "burst.yaml",
        "name: burst\nseed: 3\n"
        "fleet: {pods: 1, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
        "workload:\n  type: open_loop\n  rate_schedule: '0:2, 100:2, 101:60, 200:60, 201:2'\n"
        "  duration_s: 300\n  max_requests: 0\n"
        "  prompt_tokens: {dist: uniform, low: 200, high: 1200}\n"
        "  output_tokens: {dist: uniform, low: 50, high: 150}\n" +
            slo +
            "autoscaling: {provision_s: 10, load_time_s: 20}\n"
            "arms:\n  - {name: lo, policy: least_outstanding}\n");
  }
};

TEST_F(WindowPlan, TheBurstWindowGetsMorePodsAndTheScheduleMeetsTheTarget) {
  PlanOptions o;
  o.max_pods = 16;
  const WindowPlanResult r = run_window_plan(scenario(), o, 100);
  ASSERT_EQ(r.arms.size(), 1u);
  const ArmWindowPlan& a = r.arms.front();
  ASSERT_EQ(a.windows.size(), 3u);
  for (const PlanWindow& w : a.windows) {
    ASSERT_TRUE(w.pods_needed.has_value());
    EXPECT_GE(w.attainment_pct, 90.0);
    EXPECT_GE(w.scheduled_attainment_pct, 90.0);
  }
  EXPECT_EQ(*a.windows[0].pods_needed, 1);
  EXPECT_GT(*a.windows[1].pods_needed, 1);
  EXPECT_GT(a.windows[1].requests, 10 * a.windows[0].requests);
  // One pod fewer in the burst, on a static fleet, misses it.
  const Scenario fewer =
      load_scenario(scenario(), {"fleet.pods=" + std::to_string(*a.windows[1].pods_needed - 1)});
  std::int64_t good = 0, total = 0;
  for (const RequestRecord& rec : run_arm(fewer, fewer.arms.front()).records) {
    if (rec.arrival < sec_to_ns(100) || rec.arrival >= sec_to_ns(200)) continue;
    ++total;
    good += meets_slo(rec, fewer.slo.targets) ? 1 : 0;
  }
  EXPECT_LT(100.0 * static_cast<double>(good) / static_cast<double>(total), 90.0);
  // The rise comes early by the sync period, provisioning and load (15 + 10 + 20 s).
  EXPECT_DOUBLE_EQ(a.lead_s, 45.0);
  EXPECT_EQ(a.schedule.rfind("0:1, 55:" + std::to_string(a.windows[1].scheduled_pods), 0), 0u)
      << a.schedule;
  const PodSchedule parsed = PodSchedule::parse(a.schedule, 0, o.max_pods, "schedule");
  EXPECT_EQ(parsed.at(sec_to_ns(150)), a.windows[1].scheduled_pods);
  ASSERT_TRUE(a.check.has_value());
  EXPECT_GE(a.check->attainment_pct, 90.0);
  EXPECT_LT(a.check->pod_hours, a.check->static_pod_hours);
}

TEST_F(WindowPlan, ThreadsGiveTheSameResult) {
  const std::string path = scenario();
  PlanOptions o;
  o.max_pods = 8;
  o.threads = 1;
  o.overrides = {"arms=[{name: lo, policy: least_outstanding}, {name: rr, policy: round_robin}]"};
  const nlohmann::json one = window_plan_json(run_window_plan(path, o, 100));
  o.threads = 0;
  EXPECT_EQ(window_plan_json(run_window_plan(path, o, 100)), one);
}

TEST_F(WindowPlan, AWindowNotMetGivesNoSchedule) {
  PlanOptions o;
  o.max_pods = 2;
  const WindowPlanResult r = run_window_plan(scenario(), o, 100);
  const ArmWindowPlan& a = r.arms.front();
  EXPECT_FALSE(a.windows[1].pods_needed.has_value());
  EXPECT_TRUE(a.schedule.empty());
  EXPECT_FALSE(a.check.has_value());
}

TEST_F(WindowPlan, RefusalsNameWhatToFix) {
  auto error_of = [&](const std::string& path, const PlanOptions& o, double window) {
    try {
      run_window_plan(path, o, window);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of(scenario(), {}, 0).find("--window: expected seconds in (0, 1e9]"),
            std::string::npos);
  EXPECT_NE(error_of(scenario(), {}, 0.01).find("--window 0.01: the workload spans"),
            std::string::npos);
  EXPECT_NE(error_of(scenario(""), {}, 100).find("the plan needs an slo section"),
            std::string::npos);
  const std::string pooled =
      testing::write_file(dir_ / "pooled.yaml", testing::small_pooled_scenario_yaml("round_robin") +
                                                    "slo: {ttft_ms: 500}\n");
  EXPECT_NE(error_of(pooled, {}, 100)
                .find("the fleet has pools; search one pool's pod count: --path "
                      "fleet.pools.small.pods or --path fleet.pools.big.pods"),
            std::string::npos);
}

// The burst over a pool "a" of one pod and a pool "b" of two; least-outstanding spreads the
// requests over all of them.
std::string two_pools(const std::string& autoscaling) {
  return "name: pools\nseed: 3\n"
         "fleet:\n  gpu: L40S\n  model: Qwen2.5-7B-Instruct\n"
         "  pools:\n    - {name: a, pods: 1}\n    - {name: b, pods: 2}\n"
         "workload:\n  type: open_loop\n  rate_schedule: '0:2, 100:2, 101:90, 200:90, 201:2'\n"
         "  duration_s: 300\n  max_requests: 0\n"
         "  prompt_tokens: {dist: uniform, low: 200, high: 1200}\n"
         "  output_tokens: {dist: uniform, low: 50, high: 150}\n"
         "slo: {ttft_ms: 300}\n"
         "autoscaling: " +
         autoscaling + "\narms:\n  - {name: lo, policy: least_outstanding}\n";
}

TEST_F(WindowPlan, OnePoolAmongSeveralGetsItsOwnSchedule) {
  // The plan sizes pool a; pool b's two pods stay as they are.
  const std::string path = testing::write_file(
      dir_ / "pools.yaml", two_pools("{provision_s: 10, load_time_s: 20, max_pods: 2}"));
  PlanOptions o;
  o.path = "fleet.pools.a.pods";
  o.max_pods = 16;
  const WindowPlanResult r = run_window_plan(path, o, 100);
  EXPECT_EQ(r.path, "fleet.pools.a.pods");
  const ArmWindowPlan& a = r.arms.front();
  ASSERT_EQ(a.windows.size(), 3u);
  for (const PlanWindow& w : a.windows) ASSERT_TRUE(w.pods_needed.has_value());
  EXPECT_EQ(*a.windows[0].pods_needed, 1);
  // The scenario's max_pods (2) bounds its HPAs, not the plan.
  EXPECT_GT(*a.windows[1].pods_needed, 2);
  ASSERT_TRUE(a.check.has_value());
  EXPECT_GE(a.check->attainment_pct, 90.0);
  // The GPU time is pool a's: its peak held all along would cost more, and pool b's two pods for
  // the run (300 s) are not in it.
  EXPECT_LT(a.check->pod_hours, a.check->static_pod_hours);
  EXPECT_DOUBLE_EQ(a.check->peak_pods, a.windows[1].scheduled_pods);
  const nlohmann::json j = window_plan_json(r);
  EXPECT_EQ(j["path"], "fleet.pools.a.pods");
}

TEST_F(WindowPlan, AScenarioWhoseHpaNamesOnePoolPlansThatPoolOrSaysHowToWriteIt) {
  // One HPA, for pool b: its pool is planned through that HPA's place; pool a, planned beside
  // it, would need the pools form.
  const std::string path = testing::write_file(
      dir_ / "one-hpa.yaml",
      two_pools("{pool: b, metric: request_rate, target: 4, provision_s: 10, load_time_s: 20}"));
  PlanOptions o;
  o.path = "fleet.pools.b.pods";
  o.max_pods = 16;
  const WindowPlanResult r = run_window_plan(path, o, 100);
  ASSERT_TRUE(r.arms.front().check.has_value());
  EXPECT_GT(*r.arms.front().windows[1].pods_needed, 2);
  o.path = "fleet.pools.a.pods";
  try {
    run_window_plan(path, o, 100);
    ADD_FAILURE() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("to plan --path fleet.pools.a.pods beside pool b's HPA, "
                                         "write the autoscaling as pools: {b: {...}}"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
