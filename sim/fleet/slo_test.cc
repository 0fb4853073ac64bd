#include "sim/fleet/slo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

SloSpec slo_from(const std::string& yaml) {
  return parse_slo(parse_yaml(yaml, "s.yaml"), YamlWhere{"s.yaml", "slo"});
}

std::string slo_error(const std::string& yaml) {
  try {
    slo_from(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// A completed request: TTFT `ttft_ms`, then `tokens` output tokens `tpot` ms apart.
RequestRecord request(double ttft_ms, std::int32_t tokens, double tpot,
                      std::string slo_class = "") {
  RequestRecord r;
  r.arrival = 1'000'000'000;
  r.first_token = r.arrival + static_cast<TimeNs>(ttft_ms * 1e6);
  r.finished = r.first_token + static_cast<TimeNs>(tpot * 1e6) * (tokens - 1);
  r.output_tokens = tokens;
  r.done = true;
  r.slo_class = std::move(slo_class);
  return r;
}

TEST(Slo, ClassesInheritTheTargetsTheyDoNotSet) {
  const SloSpec s = slo_from(
      "{ttft_ms: 500, tpot_ms: 50, classes: {batch: {ttft_ms: 20000}, chat: {e2e_ms: 3000}}}");
  EXPECT_TRUE(s.enabled);
  EXPECT_DOUBLE_EQ(s.for_class("").ttft_ms, 500);
  EXPECT_DOUBLE_EQ(s.for_class("unlisted").tpot_ms, 50);
  EXPECT_DOUBLE_EQ(s.for_class("batch").ttft_ms, 20000);
  EXPECT_DOUBLE_EQ(s.for_class("batch").tpot_ms, 50);
  EXPECT_DOUBLE_EQ(s.for_class("chat").ttft_ms, 500);
  EXPECT_DOUBLE_EQ(s.for_class("chat").e2e_ms, 3000);
}

TEST(Slo, AClassMayCarryAPriorityForTheEnginesQueue) {
  const SloSpec s = slo_from(
      "{ttft_ms: 500, classes: {chat: {ttft_ms: 300, priority: 10}, batch: {priority: -1},"
      " bulk: {e2e_ms: 9000}}}");
  EXPECT_EQ(s.priority_of("chat"), 10);
  EXPECT_EQ(s.priority_of("batch"), -1);
  EXPECT_EQ(s.priority_of("bulk"), 0);
  EXPECT_EQ(s.priority_of("unlisted"), 0);
  EXPECT_DOUBLE_EQ(s.for_class("batch").ttft_ms, 500);  // a priority is no target
  EXPECT_THAT(slo_error("{ttft_ms: 1, classes: {a: {priority: high}}}"),
              ::testing::HasSubstr("s.yaml:1: slo.classes.a.priority: expected int"));
  EXPECT_THAT(slo_error("{ttft_ms: 1, classes: {a: {priority: 1.5}}}"),
              ::testing::HasSubstr("slo.classes.a.priority"));
}

TEST(Slo, BadSectionsNameTheFieldAndTheValidKeys) {
  EXPECT_NE(slo_error("{ttft: 500}")
                .find("s.yaml:1: slo.ttft: unknown parameter; valid "
                      "parameters: ttft_ms, tpot_ms, e2e_ms, p50_ttft_ms, p90_ttft_ms, "
                      "p95_ttft_ms, p99_ttft_ms, p50_tpot_ms,"),
            std::string::npos);
  EXPECT_NE(slo_error("{ttft_ms: -1}").find("slo.ttft_ms"), std::string::npos);
  EXPECT_NE(slo_error("{ttft_ms: fast}").find("slo.ttft_ms"), std::string::npos);
  EXPECT_NE(slo_error("[500]").find("expected a map"), std::string::npos);
  EXPECT_NE(slo_error("{ttft_ms: 1, classes: [a]}").find("slo.classes"), std::string::npos);
  EXPECT_NE(slo_error("{ttft_ms: 1, classes: {a: 5}}").find("slo.classes.a"), std::string::npos);
  EXPECT_NE(slo_error("{ttft_ms: 1, classes: {a: {tbt_ms: 5}}}").find("slo.classes.a.tbt_ms"),
            std::string::npos);
  // Nothing bounded is no objective at all.
  EXPECT_NE(slo_error("{ttft_ms: 0}").find("no target set"), std::string::npos);
  EXPECT_NE(slo_error("{classes: {a: {ttft_ms: 0}}}").find("no target set"), std::string::npos);
  EXPECT_EQ(slo_error("{classes: {a: {ttft_ms: 100}}}"), "");
}

TEST(Slo, ARequestIsGoodWhenEveryBoundedFigureIsWithinItsTarget) {
  const SloTargets t{500, 50, 0};
  EXPECT_TRUE(meets_slo(request(500, 10, 50), t));   // both exactly at the target
  EXPECT_FALSE(meets_slo(request(501, 10, 50), t));  // TTFT over
  EXPECT_FALSE(meets_slo(request(100, 10, 51), t));  // TPOT over
  // One output token has no TPOT to bound.
  EXPECT_TRUE(meets_slo(request(100, 1, 0), t));
  // E2E: 100 + 9 x 50 = 550 ms.
  EXPECT_TRUE(meets_slo(request(100, 10, 50), SloTargets{0, 0, 550}));
  EXPECT_FALSE(meets_slo(request(100, 10, 50), SloTargets{0, 0, 549}));
  RequestRecord failed = request(100, 10, 10);
  failed.outcome = Outcome::kTimeout;
  EXPECT_FALSE(meets_slo(failed, t));
  RequestRecord unfinished = request(100, 10, 10);
  unfinished.done = false;
  EXPECT_FALSE(meets_slo(unfinished, t));
}

TEST(Slo, GoodputCountsMeasuredRequestsPerClass) {
  const SloSpec s = slo_from("{ttft_ms: 500, classes: {batch: {ttft_ms: 5000}}}");
  RequestRecord warmup = request(9000, 2, 10);
  warmup.measured = false;
  RequestRecord failed = request(100, 2, 10, "batch");
  failed.outcome = Outcome::kNoPod503;
  const std::vector<RequestRecord> records = {
      request(400, 2, 10),           // good
      request(600, 2, 10),           // over 500
      request(600, 2, 10, "batch"),  // good under the batch target
      request(6000, 2, 10, "batch"), failed, warmup};
  const GoodputSummary g = summarize_goodput(records, s, 4.0);
  EXPECT_EQ(g.requests, 5);
  EXPECT_EQ(g.good, 2);
  EXPECT_DOUBLE_EQ(g.attainment, 0.4);
  EXPECT_DOUBLE_EQ(g.goodput_req_s, 0.5);
  ASSERT_EQ(g.per_class.size(), 2u);
  EXPECT_EQ(g.per_class[0].slo_class, "");
  EXPECT_EQ(g.per_class[0].requests, 2);
  EXPECT_EQ(g.per_class[0].good, 1);
  EXPECT_EQ(g.per_class[1].slo_class, "batch");
  EXPECT_EQ(g.per_class[1].requests, 3);
  EXPECT_EQ(g.per_class[1].good, 1);
  // Without classes on the requests there is no per-class breakdown.
  const GoodputSummary plain = summarize_goodput({request(400, 2, 10)}, s, 1.0);
  EXPECT_TRUE(plain.per_class.empty());
  EXPECT_DOUBLE_EQ(plain.attainment, 1.0);
}

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

TEST(SloPercentiles, ASectionMayBoundPercentilesAloneInVllmBenchNames) {
  const SloSpec s = slo_from("{p95_ttft_ms: 2000, p99_tpot_ms: 100}");
  EXPECT_THAT(s.percentiles, ElementsAre(Field(&PercentileTarget::key, "p95_ttft_ms"),
                                         Field(&PercentileTarget::key, "p99_tpot_ms")));
  EXPECT_DOUBLE_EQ(s.percentiles[0].quantile, 0.95);
  EXPECT_FALSE(s.targets.any());
}

TEST(SloPercentiles, AClassCannotSetOne) {
  EXPECT_THAT(slo_error("{ttft_ms: 1, classes: {a: {p95_ttft_ms: 5}}}"),
              HasSubstr("slo.classes.a.p95_ttft_ms: a percentile target bounds the arm's requests "
                        "together; set it at the top of the slo section"));
}

TEST(SloPercentiles, AFailedRequestIsAMissThatPushesThePercentileUp) {
  const SloSpec s = slo_from("{p50_ttft_ms: 300, p95_ttft_ms: 300}");
  std::vector<RequestRecord> records;
  for (int i = 1; i <= 19; ++i) records.push_back(request(10.0 * i, 2, 10));  // 10 .. 190 ms
  RequestRecord failed = request(10, 2, 10);
  failed.outcome = Outcome::kTimeout;
  records.push_back(failed);
  const GoodputSummary g = summarize_goodput(records, s, 1.0);
  ASSERT_EQ(g.percentiles.size(), 2u);
  EXPECT_DOUBLE_EQ(g.percentiles[0].value_ms, 105);  // type 7 over 10..190 and +inf: the 10th/11th
  EXPECT_TRUE(g.percentiles[0].met);
  EXPECT_TRUE(std::isinf(g.percentiles[1].value_ms));  // between 190 and the miss
  EXPECT_FALSE(g.percentiles[1].met);
  EXPECT_FALSE(g.percentiles_met());
  EXPECT_DOUBLE_EQ(g.attainment, 0.95);  // with no per-request target, good = completed
}

TEST(SloPercentiles, APercentileOfNoRequestsIsUndefinedAndNotMet) {
  const SloSpec s = slo_from("{p50_tpot_ms: 300}");
  // One-token answers have no TPOT.
  const GoodputSummary g = summarize_goodput({request(10, 1, 1), request(20, 1, 1)}, s, 1.0);
  ASSERT_EQ(g.percentiles.size(), 1u);
  EXPECT_TRUE(std::isnan(g.percentiles[0].value_ms));
  EXPECT_FALSE(g.percentiles_met());
}

}  // namespace
}  // namespace fleetsim
