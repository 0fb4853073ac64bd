// `fleetsim validate --seeds N`: every check runs with the scenario's seed and the next ones; the
// mean is judged, and each seed's own figure is kept.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/validate.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

class ValidateSeeds : public testing::TempDirTest {
 protected:
  ValidateSeeds() : TempDirTest("fleetsim-seeds-") {}
};

TEST_F(ValidateSeeds, TheMeanOfTheSeedsIsJudgedAndEachSeedIsKept) {
  const std::string scenario =
      testing::write_file(dir_ / "s.yaml", testing::small_scenario_yaml("round_robin"));
  const std::string checks = testing::write_file(
      dir_ / "checks.yaml", "checks:\n  - scenario: " + scenario +
                                "\n    figures:\n"
                                "      - {arm: a, metric: ttft_p95_ms, measured: 1, rel: 1000}\n");
  const ValidationReport one = validate({checks}, 1, 1);
  const ValidationReport three = validate({checks}, 2, 3);
  ASSERT_EQ(three.figures.size(), 1u);
  const FigureCheck& f = three.figures[0];
  ASSERT_EQ(f.per_seed.size(), 3u);
  // The first seed is the scenario's own: the one-seed report's figure.
  EXPECT_EQ(f.per_seed[0], one.figures[0].simulated);
  // The others are what a run with the next seeds gives.
  Scenario s = load_scenario(scenario);
  for (std::uint64_t i = 1; i < 3; ++i) {
    s.seed = 7 + i;
    EXPECT_DOUBLE_EQ(f.per_seed[i], arm_metric("ttft_p95_ms").value(run_scenario(s).arms[0]));
  }
  EXPECT_NE(f.per_seed[1], f.per_seed[0]);
  EXPECT_DOUBLE_EQ(f.simulated, std::accumulate(f.per_seed.begin(), f.per_seed.end(), 0.0) / 3.0);
  EXPECT_EQ(f.seeds_inside, 3);
  EXPECT_TRUE(f.ok);
  EXPECT_EQ(three.seeds, 3);
}

TEST_F(ValidateSeeds, ASweepShapeIsJudgedOnTheMeanCurve) {
  std::string yaml = testing::small_scenario_yaml("round_robin");
  yaml += "sweep:\n  vary:\n    workload.concurrency: [1, 2, 4]\n";
  const std::string scenario = testing::write_file(dir_ / "sweep.yaml", yaml);
  const std::string checks = testing::write_file(
      dir_ / "checks.yaml", "checks:\n  - sweep: " + scenario +
                                "\n    figures:\n"
                                "      - {arm: a, point: {workload.concurrency: 2}, metric: "
                                "throughput_req_s, measured: 1, rel: 1000}\n"
                                "    shapes:\n"
                                "      - {arm: a, metric: throughput_req_s, peak_at: 4}\n");
  const ValidationReport r = validate({checks}, 2, 2);
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].per_seed.size(), 2u);
  EXPECT_EQ(r.figures[1].per_seed, (std::vector<double>{4.0, 4.0}));
  EXPECT_EQ(r.figures[1].seeds_inside, 2);
  EXPECT_TRUE(r.figures[1].ok);
}

// The checks run side by side; the report is the same, row for row, at any thread count, and the
// error of a check that cannot run names that check even when others ran beside it.
TEST_F(ValidateSeeds, ChecksSideBySideGiveTheOneThreadReport) {
  std::string yaml = testing::small_scenario_yaml("round_robin");
  const std::string plain = testing::write_file(dir_ / "plain.yaml", yaml);
  yaml += "sweep:\n  vary:\n    workload.concurrency: [1, 4]\n";
  const std::string sweep = testing::write_file(dir_ / "sweep.yaml", yaml);
  std::string text = "checks:\n";
  for (int k = 0; k < 3; ++k) {
    text += "  - scenario: " + plain +
            "\n    set: [fleet.server.api_overhead_ms=" + std::to_string(k + 1) +
            "]\n    figures:\n      - {arm: a, metric: ttft_p95_ms, measured: 1, rel: 1000}\n"
            "  - sweep: " +
            sweep + "\n    set: [fleet.server.api_overhead_ms=" + std::to_string(k + 1) +
            "]\n    figures:\n      - {arm: a, point: {workload.concurrency: 4}, metric: "
            "throughput_req_s, measured: 1, rel: 1000}\n";
  }
  const std::string checks = testing::write_file(dir_ / "checks.yaml", text);
  const std::string one = validation_json(validate({checks}, 1, 2)).dump();
  EXPECT_EQ(validation_json(validate({checks}, 4, 2)).dump(), one);
  EXPECT_EQ(validation_json(validate({checks}, 0, 2)).dump(), one);

  const std::string broken = testing::write_file(
      dir_ / "broken.yaml", text + "  - scenario: " + (dir_ / "none.yaml").string() +
                                "\n    figures:\n      - {arm: a, metric: ttft_p95_ms, "
                                "measured: 1, rel: 1000}\n");
  try {
    validate({broken}, 4);
    FAIL() << "a check naming a missing scenario ran";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.yaml:26: checks.6.scenario"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
