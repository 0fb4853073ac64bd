#include "sim/fleet/arm_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "sim/errors.h"

namespace fleetsim {
namespace {

RequestRecord turn(std::int32_t t, std::int32_t prompt, std::int32_t cached) {
  RequestRecord r;
  r.turn = t;
  r.arrival = 0;
  r.done = true;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  return r;
}

TEST(ArmMetrics, NamesAreUniqueAndEachHasALabelAndHelp) {
  std::set<std::string> seen;
  for (const auto& m : arm_metrics()) {
    EXPECT_TRUE(seen.insert(m.name).second) << m.name;
    EXPECT_NE(std::string(m.label), "");
    EXPECT_NE(std::string(m.help), "");
  }
}

TEST(ArmMetrics, UnknownNameListsTheValidOnes) {
  try {
    arm_metric("warm_ttft_p99");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("warm_ttft_p99"), std::string::npos);
    EXPECT_NE(what.find("warm_ttft_p95_ms"), std::string::npos);
    EXPECT_NE(what.find("first_turn_hit_rate_pct"), std::string::npos);
  }
}

TEST(ArmMetrics, SummaryFiguresReadTheSummary) {
  ArmResult a;
  a.summary.prefix_cache_reuse = 0.9;
  a.summary.warm_ttft_ms.p95 = 412;
  a.summary.warm_ttft_ms.count = 20;
  a.summary.failed = 3;
  EXPECT_DOUBLE_EQ(arm_metric("prefix_cache_reuse_pct").value(a), 90.0);
  EXPECT_DOUBLE_EQ(arm_metric("warm_ttft_p95_ms").value(a), 412.0);
  EXPECT_DOUBLE_EQ(arm_metric("errors").value(a), 3.0);
}

TEST(ArmMetrics, AFigureOfNoRequestsIsUndefinedNotZero) {
  ArmResult a;  // no second turns, no conversations of two turns
  EXPECT_TRUE(std::isnan(arm_metric("warm_ttft_p50_ms").value(a)));
  EXPECT_TRUE(std::isnan(arm_metric("same_pod_as_previous_turn_pct").value(a)));
  a.summary.routing.later_turns = 4;
  EXPECT_DOUBLE_EQ(arm_metric("same_pod_as_previous_turn_pct").value(a), 0.0);
}

TEST(ArmMetrics, EveryMetricSaysWhichWayIsBetter) {
  for (const ArmMetric& m : arm_metrics()) {
    const std::string name = m.name;
    const bool latency = name.size() > 3 && name.compare(name.size() - 3, 3, "_ms") == 0;
    if (latency || name == "errors" || name == "unfinished") {
      EXPECT_EQ(m.better, Better::kLower) << name;
    }
  }
  EXPECT_EQ(arm_metric("prefix_cache_reuse_pct").better, Better::kHigher);
  EXPECT_EQ(arm_metric("concentration_peak_mean").better, Better::kLower);
  EXPECT_EQ(arm_metric("same_pod_as_previous_turn_pct").better, Better::kNeither);
}

TEST(ArmMetrics, TurnHitRatesSkipWarmUpAndFailedRequests) {
  ArmResult a;
  a.name = "epp";
  a.records = {turn(1, 1000, 0), turn(1, 1000, 500), turn(2, 1000, 990), turn(3, 2000, 1980)};
  RequestRecord warmup = turn(2, 1000, 0);
  warmup.measured = false;
  RequestRecord failed = turn(2, 1000, 0);
  failed.outcome = Outcome::kNoPod503;
  a.records.push_back(warmup);
  a.records.push_back(failed);
  EXPECT_DOUBLE_EQ(arm_metric("first_turn_hit_rate_pct").value(a), 25.0);  // mean of 0 and 50
  EXPECT_DOUBLE_EQ(arm_metric("warm_min_hit_rate_pct").value(a), 99.0);    // min of 99 and 99
}

TEST(ArmMetrics, TurnHitRateWithoutSuchTurnsIsAnError) {
  ArmResult a;
  a.name = "rr";
  a.records = {turn(1, 100, 0)};
  EXPECT_THROW(arm_metric("warm_min_hit_rate_pct").value(a), ScenarioError);
}

}  // namespace
}  // namespace fleetsim
