#include "sim/fleet/workloads/workload_util.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/errors.h"
#include "sim/fleet/workloads/workload_test_util.h"

namespace fleetsim {
namespace {

std::string scenario_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScenarioError";
  return "";
}

TEST(RateSchedule, ConstantRate) {
  const RateSchedule s(2.0);
  EXPECT_DOUBLE_EQ(s.rate_at(100), 2.0);
  EXPECT_DOUBLE_EQ(*s.advance(3, 5), 5.5);
}

TEST(RateSchedule, LinearRampIntegratesExactly) {
  const RateSchedule s = RateSchedule::parse("0:0, 10:10", 0, "f");
  EXPECT_DOUBLE_EQ(s.rate_at(5), 5);
  EXPECT_DOUBLE_EQ(s.rate_at(-1), 0);
  EXPECT_DOUBLE_EQ(s.rate_at(50), 10);
  EXPECT_NEAR(*s.advance(0, 5), std::sqrt(10.0), 1e-12);  // t^2 / 2 = 5
  EXPECT_NEAR(*s.advance(0, 50), 10, 1e-12);
  EXPECT_NEAR(*s.advance(0, 60), 11, 1e-12);               // then flat at 10
  EXPECT_NEAR(*s.advance(4, 10), std::sqrt(36.0), 1e-12);  // (t^2 - 16) / 2 = 10
}

TEST(RateSchedule, RateThatEndsAtZeroStops) {
  const RateSchedule s = RateSchedule::parse("0:1, 10:0", 0, "f");
  EXPECT_NEAR(*s.advance(0, 5), 10, 1e-6);  // the whole area under the ramp
  EXPECT_FALSE(s.advance(0, 5.1).has_value());
  EXPECT_FALSE(s.advance(20, 0.1).has_value());
}

TEST(RateSchedule, DailyCurveRepeats) {
  // 0 at midnight, 10 at noon, back to 0 at the next midnight: 120 expected arrivals a day.
  const RateSchedule s = RateSchedule::parse("0:0, 12:10", 24, "f");
  EXPECT_DOUBLE_EQ(s.rate_at(6), 5);
  EXPECT_DOUBLE_EQ(s.rate_at(18), 5);
  EXPECT_DOUBLE_EQ(s.rate_at(30), 5);
  EXPECT_NEAR(*s.advance(0, 120), 24, 1e-9);
  EXPECT_NEAR(*s.advance(0, 240), 48, 1e-9);
  EXPECT_NEAR(*s.advance(24, 60), 36, 1e-9);
  EXPECT_FALSE(RateSchedule(0.0).advance(0, 1).has_value());
}

TEST(RateSchedule, BadTextNamesTheField) {
  EXPECT_EQ(scenario_error_of([] { RateSchedule::parse("0:1, 0:2", 0, "workload.rate_schedule"); }),
            "workload.rate_schedule: times must increase at '0:2' in '0:1, 0:2'; expected "
            "'time_s:rate, time_s:rate, ...' with increasing times, e.g. '0:2, 600:10, 1200:2'");
  for (const char* bad : {"a:b", "0:-1", "1", "0:1:2", ""}) {
    EXPECT_THROW(RateSchedule::parse(bad, 0, "f"), ScenarioError) << bad;
  }
  EXPECT_THROW(RateSchedule::parse("0:1, 30:2", 24, "f"), ScenarioError);
  EXPECT_NE(scenario_error_of([] {
              RateSchedule::parse("0:0, 5:0", 10, "f");
            }).find("f: every rate is 0, so no request would ever arrive"),
            std::string::npos);
}

struct GapStats {
  double mean = 0, cv = 0;
};

GapStats gaps(const ArrivalProcess& p, int n) {
  Rng rng = make_rng(3, "gaps");
  double t = 0, sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double next = *p.next(t, rng);
    sum += next - t;
    sum_sq += (next - t) * (next - t);
    t = next;
  }
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean)) / mean};
}

TEST(ArrivalProcess, PoissonGammaConstant) {
  const GapStats poisson =
      gaps(ArrivalProcess(ArrivalProcess::Kind::kPoisson, 1, RateSchedule(10)), 40000);
  EXPECT_NEAR(poisson.mean, 0.1, 0.002);
  EXPECT_NEAR(poisson.cv, 1.0, 0.03);
  const GapStats bursty =
      gaps(ArrivalProcess(ArrivalProcess::Kind::kGamma, 3, RateSchedule(10)), 40000);
  EXPECT_NEAR(bursty.mean, 0.1, 0.005);
  EXPECT_NEAR(bursty.cv, 3.0, 0.15);
  const GapStats smooth =
      gaps(ArrivalProcess(ArrivalProcess::Kind::kGamma, 0.25, RateSchedule(10)), 40000);
  EXPECT_NEAR(smooth.cv, 0.25, 0.01);
  const GapStats constant =
      gaps(ArrivalProcess(ArrivalProcess::Kind::kConstant, 1, RateSchedule(10)), 100);
  EXPECT_NEAR(constant.mean, 0.1, 1e-12);
  EXPECT_NEAR(constant.cv, 0, 1e-6);
}

TEST(ArrivalProcess, FollowsAScheduledStep) {
  // 2/s for 100 s, then 20/s: evenly spaced arrivals count the integral exactly.
  const ArrivalProcess p(ArrivalProcess::Kind::kConstant, 1,
                         RateSchedule::parse("0:2, 100:2, 100.000001:20", 0, "f"));
  Rng rng(1);
  int before = 0, after = 0;
  for (double t = 0; t < 200;) {
    t = *p.next(t, rng);
    (t < 100 ? before : after) += t < 200 ? 1 : 0;
  }
  EXPECT_EQ(before, 199);  // arrivals at 0.5, 1.0, ..., 99.5
  EXPECT_EQ(after, 2000);  // 100 (area 200) ... 199.95: 2,000 more
}

TEST(CategoricalMix, ParsesAndDraws) {
  const CategoricalMix m = CategoricalMix::parse("small:0.7, big : 0.3", "workload.tier_mix");
  ASSERT_EQ(m.names(), (std::vector<std::string>{"small", "big"}));
  Rng rng(5);
  int small = 0;
  for (int i = 0; i < 20000; ++i) small += m.sample(rng) == "small" ? 1 : 0;
  EXPECT_NEAR(small / 20000.0, 0.7, 0.015);
  EXPECT_TRUE(CategoricalMix::parse(" ", "f").empty());
  EXPECT_EQ(scenario_error_of([] { CategoricalMix::parse("small:0.7,big", "workload.tier_mix"); }),
            "workload.tier_mix: 'big' in 'small:0.7,big' is not name:weight with a positive "
            "weight; expected e.g. 'small:0.7, big:0.3'");
  EXPECT_THROW(CategoricalMix::parse("a:0", "f"), ScenarioError);
  EXPECT_THROW(CategoricalMix::parse("a:1,a:2", "f"), ScenarioError);
}

TEST(RequestTagger, WarmupTierAndSloClass) {
  const Params p = testing::workload_params(
      "open_loop", "{tier_mix: 'small:1', slo_class_mix: 'batch:1', warmup_s: 2}");
  RequestTagger tagger(p, 1);
  Request early;
  tagger.tag(early, sec_to_ns(1.999));
  EXPECT_FALSE(early.measured);
  EXPECT_EQ(early.tier, "small");
  EXPECT_EQ(early.slo_class, "batch");
  Request late;
  late.tier = "big";  // a trace's own value wins
  tagger.tag(late, sec_to_ns(2));
  EXPECT_TRUE(late.measured);
  EXPECT_EQ(late.tier, "big");
}

}  // namespace
}  // namespace fleetsim
