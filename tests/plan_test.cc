// `fleetsim plan`: the smallest pod count meeting the SLO target, found by doubling and
// bisection, the same at any thread count; refusals name what to fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/plan/pair_plan.h"
#include "sim/fleet/plan/plan.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

class Plan : public testing::TempDirTest {
 protected:
  Plan() : TempDirTest("fleetsim-plan-") {}

  // 48 chats at once on a 7B model: one L40S pod queues them well past a 300 ms TTFT.
  std::string scenario(const std::string& slo = "slo: {ttft_ms: 300}\n") {
    std::string y = testing::small_scenario_yaml("round_robin");
    y.replace(y.find("conversations: 12"), 17, "conversations: 96");
    y.replace(y.find("concurrency: 6"), 14, "concurrency: 48");
    y += "  - {name: lor, policy: least_outstanding}\n" + slo;
    return testing::write_file(dir_ / "s.yaml", y);
  }

  static double attainment_at(const std::string& path, int pods, const std::string& arm) {
    const Scenario s = load_scenario(path, {"fleet.pods=" + std::to_string(pods)});
    for (const auto& a : s.arms) {
      if (a.name == arm) return 100.0 * run_arm(s, a).summary.goodput->attainment;
    }
    return -1;
  }
};

TEST_F(Plan, FindsTheSmallestCountThatMeetsTheTarget) {
  const std::string path = scenario();
  PlanOptions o;
  o.max_pods = 64;
  const PlanResult r = run_plan(path, o);
  ASSERT_EQ(r.arms.size(), 2u);
  for (const auto& a : r.arms) {
    ASSERT_TRUE(a.pods_needed.has_value()) << a.arm;
    const int n = *a.pods_needed;
    ASSERT_GT(n, 1) << "the test needs a fleet larger than one pod";
    EXPECT_GE(attainment_at(path, n, a.arm), 90.0) << a.arm;
    EXPECT_LT(attainment_at(path, n - 1, a.arm), 90.0) << a.arm;
    // Doubling reached a count at or above n, and every count run is listed once, in order.
    ASSERT_GE(a.evaluated.size(), 2u);
    for (size_t i = 1; i < a.evaluated.size(); ++i) {
      EXPECT_LT(a.evaluated[i - 1].pods, a.evaluated[i].pods);
    }
    EXPECT_EQ(a.evaluated.front().pods, 1);
  }
}

TEST_F(Plan, APercentileTargetMustHoldToo) {
  const std::string path = scenario("slo: {p95_ttft_ms: 300}\n");
  PlanOptions o;
  o.max_pods = 64;
  const PlanResult r = run_plan(path, o);
  EXPECT_EQ(r.percentile_targets, std::vector<std::string>{"p95_ttft_ms <= 300"});
  const auto p95_at = [&](int pods) {
    const Scenario s = load_scenario(path, {"fleet.pods=" + std::to_string(pods)});
    return run_arm(s, s.arms[0]).summary.goodput->percentiles.at(0).value_ms;
  };
  ASSERT_TRUE(r.arms[0].pods_needed.has_value());
  const int n = *r.arms[0].pods_needed;
  ASSERT_GT(n, 1);
  EXPECT_LE(p95_at(n), 300);
  EXPECT_GT(p95_at(n - 1), 300);
  std::ostringstream table;
  write_plan_report(table, r);
  EXPECT_NE(table.str().find("with SLO attainment >= 90% and p95_ttft_ms <= 300"),
            std::string::npos)
      << table.str();
}

TEST_F(Plan, SaysWhenAttainmentFallsAsPodsAreAdded) {
  // Capacity-bound arms gain with every pod: nothing to say.
  PlanOptions o;
  o.max_pods = 64;
  for (const auto& a : run_plan(scenario(), o).arms) EXPECT_FALSE(a.falls.has_value()) << a.arm;
  // The flagship's round robin spreads each conversation thinner with every pod added.
  PlanOptions f;
  f.max_pods = 16;
  f.overrides = {"slo={ttft_ms: 1000, tpot_ms: 60}"};
  const PlanResult r = run_plan(testing::source_path("scenarios/loxilb-3pod-long.yaml"), f);
  ASSERT_EQ(r.arms.back().arm, "rr");
  const ArmPlan& rr = r.arms.back();
  ASSERT_TRUE(rr.falls.has_value());
  EXPECT_LT(rr.falls->best.pods, rr.falls->worst.pods);
  EXPECT_GT(rr.falls->best.attainment_pct, rr.falls->worst.attainment_pct + 1.0);
  double best = 0;
  for (const auto& p : rr.evaluated) best = std::max(best, p.attainment_pct);
  EXPECT_EQ(rr.falls->best.attainment_pct, best);
  EXPECT_FALSE(r.arms.front().falls.has_value()) << "the picker gains with every pod";
  std::ostringstream report;
  write_plan_report(report, r);
  EXPECT_NE(report.str().find("attainment falls as pods are added"), std::string::npos);
  EXPECT_TRUE(plan_json(r)["arms"][2]["attainment_falls"].is_object());
  EXPECT_TRUE(plan_json(r)["arms"][0]["attainment_falls"].is_null());
}

TEST_F(Plan, ThreadsAndRepeatsGiveTheSameResult) {
  const std::string path = scenario();
  PlanOptions one;
  one.threads = 1;
  PlanOptions many;
  many.threads = 2;
  EXPECT_EQ(plan_json(run_plan(path, one)).dump(), plan_json(run_plan(path, many)).dump());
}

TEST_F(Plan, SeveralSeedsAverageTheAttainment) {
  PlanOptions o;
  o.seeds = 3;
  const PlanResult r = run_plan(scenario(), o);
  EXPECT_EQ(r.seeds, (std::vector<std::uint64_t>{7, 8, 9}));
  EXPECT_TRUE(r.arms[0].pods_needed.has_value());
}

TEST_F(Plan, ATargetNotMetUpToTheCapSaysSo) {
  PlanOptions o;
  o.max_pods = 3;
  const PlanResult r = run_plan(scenario("slo: {ttft_ms: 1}\n"), o);
  for (const auto& a : r.arms) {
    EXPECT_FALSE(a.pods_needed.has_value()) << a.arm;
    EXPECT_EQ(a.evaluated.back().pods, 3);
  }
}

TEST_F(Plan, RefusalsNameWhatToFix) {
  auto error_of = [&](const std::string& path, const PlanOptions& o) -> std::string {
    try {
      run_plan(path, o);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of(scenario(""), {});
  EXPECT_NE(e.find("the plan needs an slo section"), std::string::npos) << e;
  const std::string pooled =
      testing::write_file(dir_ / "pooled.yaml", testing::small_pooled_scenario_yaml("round_robin") +
                                                    "slo: {ttft_ms: 500}\n");
  e = error_of(pooled, {});
  EXPECT_NE(e.find("--path fleet.pools.small.pods or --path fleet.pools.big.pods"),
            std::string::npos)
      << e;
  PlanOptions bad_path;
  bad_path.path = "workload.turns";
  e = error_of(scenario(), bad_path);
  EXPECT_NE(e.find("--path workload.turns: expected a pod count"), std::string::npos) << e;
  bad_path.path = "fleet.pools.huge.pods";
  e = error_of(pooled, bad_path);
  EXPECT_NE(e.find("no list element 'huge'"), std::string::npos) << e;
}

// Two pools searched together: 1P1D-style, one prefill pod of TP 1 and one decode pod of TP 2.
class PairPlan : public Plan {
 protected:
  std::string pd_scenario() {
    return testing::write_file(
        dir_ / "pd.yaml",
        "name: pd\nseed: 3\n"
        "fleet:\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n  pools:\n"
        "    - {name: prefill, role: prefill, pods: 1}\n"
        "    - {name: decode, role: decode, pods: 1, server: {tensor_parallel_size: 2}}\n"
        "workload: {type: open_loop, rate: 12, max_requests: 240,\n"
        "  prompt_tokens: {dist: uniform, low: 6000, high: 8000}, output_tokens: 200}\n"
        "slo: {ttft_ms: 1500, tpot_ms: 40}\n"
        "arms:\n  - {name: pd, policy: least_outstanding}\n"
        "  - {name: agg, policy: least_outstanding, gateway: {disaggregate: false}}\n");
  }
  static const std::array<std::string, 2>& paths() {
    static const std::array<std::string, 2> p = {"fleet.pools.prefill.pods",
                                                 "fleet.pools.decode.pods"};
    return p;
  }
};

TEST_F(PairPlan, FindsTheFrontierAndItsCheapestPair) {
  PlanOptions o;
  o.max_pods = 8;
  const PairPlanResult r = run_pair_plan(pd_scenario(), o, paths());
  ASSERT_EQ(r.arms.size(), 2u);
  for (const auto& a : r.arms) {
    ASSERT_TRUE(a.cheapest.has_value()) << a.arm;
    ASSERT_FALSE(a.frontier.empty()) << a.arm;
    auto meets = [&](const PairPoint& p) { return p.figures.attainment_pct >= 90.0; };
    auto find = [&](int x, int y) -> const PairPoint* {
      for (const auto& p : a.evaluated) {
        if (p.pods[0] == x && p.pods[1] == y) return &p;
      }
      return nullptr;
    };
    for (size_t i = 0; i < a.frontier.size(); ++i) {
      const PairPoint& f = a.frontier[i];
      const PairPoint* run = find(f.pods[0], f.pods[1]);
      ASSERT_NE(run, nullptr);
      EXPECT_TRUE(meets(*run)) << a.arm;
      // One decode pod fewer was run and missed, unless one is the least there is.
      if (f.pods[1] > 1) {
        const PairPoint* fewer = find(f.pods[0], f.pods[1] - 1);
        ASSERT_NE(fewer, nullptr) << a.arm << " " << f.pods[0] << "+" << f.pods[1] - 1;
        EXPECT_FALSE(meets(*fewer)) << a.arm;
      }
      if (i > 0) {
        EXPECT_LE(f.pods[1], a.frontier[i - 1].pods[1]) << a.arm;  // a staircase
      }
    }
    // No pair run that meets the target takes fewer GPUs than the one named.
    for (const auto& p : a.evaluated) {
      if (meets(p)) {
        EXPECT_GE(p.gpus, a.cheapest->gpus) << a.arm;
      }
    }
    // A prefill pod takes one GPU, a decode pod two.
    EXPECT_EQ(a.cheapest->gpus, a.cheapest->pods[0] + 2 * a.cheapest->pods[1]) << a.arm;
  }
  // Prompts of 7,000 tokens at 12 a second need more than one prefill GPU.
  EXPECT_GT(r.arms[0].cheapest->pods[0], 1);
  std::ostringstream report;
  write_pair_plan_report(report, r);
  EXPECT_NE(report.str().find("<- cheapest"), std::string::npos) << report.str();
  const nlohmann::json j = pair_plan_json(r);
  EXPECT_EQ(j["paths"][1], "fleet.pools.decode.pods");
  EXPECT_EQ(j["arms"][0]["cheapest"]["gpus"], r.arms[0].cheapest->gpus);
  o.threads = 1;
  PlanOptions many = o;
  many.threads = 4;
  EXPECT_EQ(pair_plan_json(run_pair_plan(pd_scenario(), o, paths())).dump(),
            pair_plan_json(run_pair_plan(pd_scenario(), many, paths())).dump());
}

TEST_F(PairPlan, RefusalsNameWhatToFix) {
  auto error_of = [&](const std::array<std::string, 2>& p) -> std::string {
    try {
      run_pair_plan(pd_scenario(), {}, p);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of({paths()[0], paths()[0]});
  EXPECT_NE(e.find("given twice: name two different pools"), std::string::npos) << e;
  e = error_of({paths()[0], "fleet.pools.big.pods"});
  EXPECT_NE(e.find("no list element 'big'"), std::string::npos) << e;
  e = error_of({paths()[0], "fleet.pods"});
  EXPECT_NE(e.find("the fleet has pools"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
