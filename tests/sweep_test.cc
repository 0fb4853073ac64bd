#include "sim/fleet/sweep.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/errors.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

TEST(Sweep, ParsesVaryLists) {
  const SweepAxis a = parse_vary("workload.concurrency=1,4,16");
  EXPECT_EQ(a.first, "workload.concurrency");
  EXPECT_EQ(a.second, (std::vector<std::string>{"1", "4", "16"}));
  const SweepAxis b = parse_vary("workload.answer_tokens=[5, {dist: constant, value: 7}]");
  ASSERT_EQ(b.second.size(), 2u);
  EXPECT_EQ(b.second[1], "{dist: constant, value: 7}");
  EXPECT_THROW(parse_vary("nope"), ScenarioError);
  EXPECT_THROW(parse_vary("a="), ScenarioError);
  for (const char* empty : {"a=1,,2", "a=1,2,", "a=,1"}) {
    try {
      parse_vary(empty);
      ADD_FAILURE() << empty << " was accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("an empty value"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_vary("a=[1, 2"), ScenarioError);
  EXPECT_THROW(parse_vary("a=[1, 2]x"), ScenarioError);
}

TEST(Sweep, AGridTooLargeToHoldIsRefusedBeforeAnythingRuns) {
  std::string values = "1";
  for (int i = 2; i <= 101; ++i) values += "," + std::to_string(i);
  const std::vector<SweepAxis> axes = {parse_vary("workload.turns=" + values),
                                       parse_vary("workload.conversations=" + values)};
  try {
    run_sweep(testing::source_path("scenarios/loxilb-3pod-long.yaml"), {}, axes, 1);
    ADD_FAILURE() << "a 10,201-point grid ran";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10000 points"), std::string::npos) << e.what();
  }
}

TEST(Sweep, GridIsTheCartesianProductAndThreadsDoNotChangeIt) {
  const std::string path = testing::source_path("scenarios/loxilb-3pod-long.yaml");
  const std::vector<std::string> small = {"workload.conversations=6", "workload.turns=3"};
  const std::vector<SweepAxis> axes = {parse_vary("fleet.pods=2,3"),
                                       parse_vary("workload.concurrency=1,4")};
  const SweepResult serial = run_sweep(path, small, axes, 1);
  const SweepResult parallel = run_sweep(path, small, axes, 3);
  ASSERT_EQ(serial.points.size(), 4u);
  EXPECT_EQ(serial.points[1].vary[0].second, "2");
  EXPECT_EQ(serial.points[1].vary[1].second, "4");
  EXPECT_EQ(serial.points[1].scenario.fleet.pods, 2);
  EXPECT_EQ(sweep_json(serial).dump(), sweep_json(parallel).dump());
}

TEST(Sweep, AutoscaledArmsShowTheirPodHours) {
  const SweepResult r = run_sweep(testing::source_path("scenarios/scale-to-zero.yaml"), {},
                                  {parse_vary("autoscaling.cooldown_s=60,900")}, 2);
  std::ostringstream table, csv;
  write_sweep_table(table, r);
  write_sweep_csv(csv, r);
  EXPECT_NE(table.str().find("SLO% podh"), std::string::npos) << table.str();
  const std::string header = csv.str().substr(0, csv.str().find('\n'));
  EXPECT_NE(header.find(",pod_hours"), std::string::npos) << header;
  // A shorter cooldown gives the idle pod back sooner.
  const auto hours = [&](size_t point) {
    return r.points[point].result.arms[1].summary.autoscaling->fleet.pod_seconds;
  };
  EXPECT_LT(hours(0), hours(1));
}

TEST(Sweep, ScenarioGridIsUsedWithoutFlags) {
  const SweepResult r =
      run_sweep(testing::source_path("scenarios/loxilb-3pod-sweep.yaml"), {}, {}, 2);
  ASSERT_EQ(r.points.size(), 6u);
  EXPECT_EQ(r.points.back().vary[0].second, "64");
  // More streams, more throughput for the prefix-affine EPP.
  EXPECT_GT(r.points.back().result.arms[0].summary.throughput_req_s,
            r.points.front().result.arms[0].summary.throughput_req_s);
}

TEST(Sweep, NothingToSweepIsAnError) {
  EXPECT_THROW(run_sweep(testing::source_path("scenarios/loxilb-3pod-long.yaml"), {}, {}, 1),
               ScenarioError);
}

}  // namespace
}  // namespace fleetsim
