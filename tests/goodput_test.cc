// goodput@SLO through a whole run: the scenario's slo section reaches the JSON, the table, the
// CSV and the named metrics, and agrees with the request records it is computed from.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

std::string with_slo(const std::string& slo_yaml) {
  std::string y = testing::small_scenario_yaml("round_robin");
  y.replace(y.find("  answer_tokens:"), 0, "  slo_class_mix: 'chat:3, batch:1'\n");
  return y + "slo: " + slo_yaml + "\n";
}

TEST(Goodput, ReachesEveryOutputAndMatchesTheRecords) {
  const Scenario s = parse_scenario(
      with_slo("{ttft_ms: 50, tpot_ms: 60, classes: {batch: {ttft_ms: 5000}}}"), "slo.yaml");
  const RunResult r = run_scenario(s, 1);
  ASSERT_EQ(r.arms.size(), 1u);
  const ArmResult& a = r.arms.front();
  ASSERT_TRUE(a.summary.goodput.has_value());
  const GoodputSummary& g = *a.summary.goodput;

  // Recount from the records with the scenario's own targets.
  std::int64_t requests = 0, good = 0;
  for (const auto& q : a.records) {
    if (q.arrival < 0 || !q.measured) continue;
    ++requests;
    const double ttft = ns_to_ms(q.first_token - q.arrival);
    const double limit = q.slo_class == "batch" ? 5000 : 50;
    const bool ok = q.done && q.outcome == Outcome::kOk && ttft <= limit &&
                    (q.output_tokens < 2 || tpot_ms(q) <= 60);
    good += ok ? 1 : 0;
  }
  EXPECT_EQ(g.requests, requests);
  EXPECT_EQ(g.good, good);
  // The targets bind: some requests miss them, some meet them.
  EXPECT_GT(g.good, 0);
  EXPECT_LT(g.good, g.requests);
  EXPECT_DOUBLE_EQ(g.goodput_req_s, static_cast<double>(good) / a.summary.duration_s);
  ASSERT_EQ(g.per_class.size(), 2u);
  EXPECT_EQ(g.per_class[0].slo_class, "batch");
  EXPECT_EQ(g.per_class[1].slo_class, "chat");
  EXPECT_EQ(g.per_class[0].requests + g.per_class[1].requests, g.requests);
  EXPECT_DOUBLE_EQ(arm_metric("slo_attainment_pct").value(a), 100.0 * g.attainment);

  const nlohmann::json j = result_json(r, s);
  EXPECT_EQ(j["arms"][0]["summary"]["goodput"]["good"], good);
  EXPECT_EQ(j["slo"]["classes"]["batch"]["ttft_ms"], 5000);
  EXPECT_EQ(j["slo"]["classes"]["batch"]["tpot_ms"], 60);
  std::ostringstream table, csv;
  write_table(table, r, s);
  write_summary_csv(csv, r);
  EXPECT_NE(table.str().find("SLO attainment %"), std::string::npos);
  EXPECT_NE(table.str().find("  batch SLO attainment %"), std::string::npos);
  EXPECT_NE(csv.str().find(",slo_attainment,goodput_req_s\n"), std::string::npos);
  // Same scenario, same bytes.
  EXPECT_EQ(j.dump(), result_json(run_scenario(s, 1), s).dump());
}

TEST(Goodput, AbsentWithoutAnSloSectionAndItsMetricsSaySo) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("round_robin"), "plain.yaml");
  const RunResult r = run_scenario(s, 1);
  EXPECT_FALSE(r.arms.front().summary.goodput.has_value());
  const nlohmann::json j = result_json(r, s);
  EXPECT_FALSE(j["arms"][0]["summary"].contains("goodput"));
  EXPECT_FALSE(j.contains("slo"));
  try {
    arm_metric("goodput_req_s").value(r.arms.front());
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("needs an slo section"), std::string::npos);
  }
}

TEST(Goodput, TargetsCanBeSetFromTheCommandLine) {
  const Scenario s = parse_scenario(with_slo("{ttft_ms: 400}"), "slo.yaml",
                                    {"slo.ttft_ms=100000", "slo.tpot_ms=100000"});
  EXPECT_DOUBLE_EQ(s.slo.targets.ttft_ms, 100000);
  const RunResult r = run_scenario(s, 1);
  // Loose enough for every completed request.
  EXPECT_EQ(r.arms.front().summary.goodput->good, r.arms.front().summary.completed);
}

}  // namespace
}  // namespace fleetsim
