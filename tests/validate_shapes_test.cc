// Shape checks of `fleetsim validate`: where a swept curve peaks and whether it still rises.
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/errors.h"
#include "sim/fleet/validate.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

using testing::write_file;

// More streams on one pod: throughput rises along 1, 2, 4.
std::string sweep_scenario(const fs::path& dir, const std::string& vary) {
  std::string yaml = testing::small_scenario_yaml("round_robin");
  yaml += "sweep:\n  vary:\n" + vary;
  return write_file(dir / "sweep.yaml", yaml);
}

ValidationReport run_checks(const fs::path& dir, const std::string& scenario,
                            const std::string& shapes) {
  const std::string file =
      write_file(dir / "checks.yaml",
                 "checks:\n  - sweep: " + scenario + "\n    figures: []\n    shapes:\n" + shapes);
  return validate({file}, 2);
}

class ValidateShapes : public testing::TempDirTest {
 protected:
  ValidateShapes() : TempDirTest("fleetsim-shapes-") {}
};

TEST_F(ValidateShapes, PeakAndRiseOfARisingCurve) {
  const std::string s = sweep_scenario(dir_, "    workload.concurrency: [1, 2, 4]\n");
  const ValidationReport r =
      run_checks(dir_, s,
                 "      - {arm: a, metric: throughput_req_s, peak_at: 4}\n"
                 "      - {arm: a, metric: throughput_req_s, peak_at: 1}\n"
                 "      - {arm: a, metric: throughput_req_s, rising_at_end: 0.5}\n");
  ASSERT_EQ(r.figures.size(), 3u);
  EXPECT_TRUE(r.figures[0].ok);
  EXPECT_DOUBLE_EQ(r.figures[0].simulated, 4.0);
  EXPECT_FALSE(r.figures[1].ok);  // the simulated peak is at 4, not 1
  EXPECT_TRUE(r.figures[2].ok);
  EXPECT_GT(r.figures[2].simulated, 0.0);
  EXPECT_EQ(r.figures[2].rule, FigureCheck::Rule::kRisingAtEnd);
  EXPECT_EQ(r.figures[0].gpu, "L40S");  // the GPU every point ran on
}

TEST_F(ValidateShapes, AFigureNamesTheGpuOfItsPoint) {
  const std::string s = sweep_scenario(dir_, "    fleet.gpu: [L40S, H100-SXM]\n");
  const std::string file = write_file(
      dir_ / "gpus.yaml",
      "checks:\n  - sweep: " + s +
          "\n    figures:\n"
          "      - {point: {fleet.gpu: H100-SXM}, arm: a, metric: errors, measured: 0, abs: 0}\n"
          "      - {point: {fleet.gpu: L40S}, arm: a, metric: errors, measured: 0, abs: 0}\n");
  const ValidationReport r = validate({file}, 2);
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].gpu, "H100-SXM");
  EXPECT_EQ(r.figures[1].gpu, "L40S");
}

TEST_F(ValidateShapes, BadShapesAreClearErrors) {
  const std::string one = sweep_scenario(dir_, "    workload.concurrency: [1, 2]\n");
  EXPECT_THROW(run_checks(dir_, one,
                          "      - {arm: a, metric: throughput_req_s, peak_at: 2, "
                          "rising_at_end: 1}\n"),
               ScenarioError);
  EXPECT_THROW(run_checks(dir_, one, "      - {arm: a, metric: throughput_req_s}\n"),
               ScenarioError);
  // An unknown metric is an error at its line, as the scenario loader reports unknown names.
  EXPECT_THROW(run_checks(dir_, one, "      - {arm: a, metric: speed, peak_at: 2}\n"),
               ScenarioError);
  const std::string two =
      sweep_scenario(dir_, "    workload.concurrency: [1, 2]\n    fleet.pods: [1, 2]\n");
  EXPECT_THROW(run_checks(dir_, two, "      - {arm: a, metric: throughput_req_s, peak_at: 2}\n"),
               ScenarioError);
}

}  // namespace
}  // namespace fleetsim
