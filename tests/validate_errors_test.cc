// Bad validation files and sweep grids: each error names the file, the line and the field, and
// nothing is skipped or collapsed without a word.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "sim/errors.h"
#include "sim/fleet/sweep.h"
#include "sim/fleet/validate.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

using testing::write_file;

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class ValidateErrors : public testing::TempDirTest {
 protected:
  ValidateErrors() : TempDirTest("fleetsim-validate-errors-") {}
  void SetUp() override {
    TempDirTest::SetUp();
    scenario_ = write_file(dir_ / "small.yaml", testing::small_scenario_yaml("round_robin"));
    sweep_ =
        write_file(dir_ / "sweep.yaml", testing::small_scenario_yaml("round_robin") +
                                            "sweep:\n  vary:\n    workload.concurrency: [1, 2]\n");
  }

  // The ScenarioError that validating `text` (as checks.yaml) throws; it must name `where`
  // ("checks.yaml:LINE: path") and contain `what`.
  std::string expect_error(const std::string& text, const std::string& where,
                           const std::string& what = "") {
    const std::string file = write_file(dir_ / "checks.yaml", text);
    try {
      validate({file}, 1);
    } catch (const ScenarioError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(file + ":" + where, 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      return msg;
    }
    ADD_FAILURE() << "expected a ScenarioError at " << where;
    return "";
  }

  std::string scenario_;
  std::string sweep_;
};

TEST_F(ValidateErrors, UnknownFieldsListTheValidOnes) {
  expect_error("source: x\nbogus: 1\nchecks: []\n", "2: bogus",
               "unknown field; valid fields: source, checks");
  expect_error(
      "checks:\n  - scenario: " + scenario_ + "\n    sett: [workload.turns=2]\n    figures: []\n",
      "3: checks.0.sett", "valid fields: scenario, sweep, set, figures, shapes");
}

TEST_F(ValidateErrors, AFileOrCheckWithNothingToCheckIsAnError) {
  expect_error("source: x\nchecks: []\n", "2: checks", "no checks; give at least one");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    figures: []\n", "2: checks.0",
               "nothing to check; give figures");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n", "2: checks.0", "nothing to check");
}

TEST_F(ValidateErrors, SetMustBeAListOfOverrides) {
  expect_error(
      "checks:\n  - scenario: " + scenario_ + "\n    set: workload.turns=2\n    figures: []\n",
      "3: checks.0.set", "expected a list");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    set: [[]]\n    figures: []\n",
               "3: checks.0.set.0", "PATH=VALUE");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    set: [turns]\n    figures: []\n",
               "3: checks.0.set.0", "got 'turns'");
}

TEST_F(ValidateErrors, UnknownMetricAndFiguresNotAList) {
  expect_error("checks:\n  - scenario: " + scenario_ +
                   "\n    figures:\n"
                   "      - {arm: a, metric: completed, measured: 48, abs: 0}\n"
                   "      - {arm: a, metric: nope, measured: 1, abs: 0}\n",
               "5: checks.0.figures.1.metric", "unknown metric 'nope'; valid metrics: completed");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    figures: {a: 1}\n",
               "3: checks.0.figures", "expected a list");
}

TEST_F(ValidateErrors, UnknownArmListsTheArms) {
  expect_error("checks:\n  - scenario: " + scenario_ +
                   "\n    figures:\n      - {arm: nope, metric: completed, measured: 1, abs: 0}\n",
               "4: checks.0.figures.0.arm", "no arm 'nope' in scenario small; arms: a");
}

TEST_F(ValidateErrors, FigureErrorsCiteTheFiguresLine) {
  expect_error("checks:\n\n\n  - scenario: " + scenario_ +
                   "\n    figures:\n"
                   "      - {arm: a, metric: completed, measured: 4, abs: 0, bogus: 1}\n",
               "6: checks.0.figures.0.bogus", "valid fields: arm, metric, measured, abs, rel");
  // A sweep figure's `point` is not a parameter; the other fields keep their lines.
  expect_error("checks:\n  - sweep: " + sweep_ +
                   "\n    figures:\n"
                   "      - point: {workload.concurrency: 1}\n"
                   "        arm: a\n"
                   "        metric: completed\n"
                   "        measured: lots\n"
                   "        abs: 0\n",
               "7: checks.0.figures.0.measured", "expected float");
  expect_error("checks:\n  - scenario: " + scenario_ +
                   "\n    figures:\n      - {arm: a, metric: completed, measured: 4}\n",
               "4: checks.0.figures.0", "give one of abs or rel");
  expect_error("checks:\n  - scenario: " + scenario_ +
                   "\n    figures:\n      - {arm: a, metric: completed, abs: 1}\n",
               "4: checks.0.figures.0", "missing field 'measured'");
}

TEST_F(ValidateErrors, SyntaxErrorsAndMissingFiles) {
  expect_error("checks:\n  - {scenario: x, figures: [{arm: a}]\n", "3", "invalid YAML");
  try {
    validate({(dir_ / "none.yaml").string()}, 1);
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("none.yaml: cannot open"), std::string::npos) << e.what();
  }
}

TEST_F(ValidateErrors, WrongShapes) {
  expect_error("42\n", "1: <root>", "expected a map with fields source, checks");
  expect_error("checks: [5]\n", "1: checks.0", "expected a map");
  expect_error("checks:\n  - sweep: " + sweep_ + "\n    figures:\n      - 5\n",
               "4: checks.0.figures.0", "expected a map");
  expect_error("checks:\n  - sweep: " + sweep_ + "\n    shapes: [[]]\n", "3: checks.0.shapes.0",
               "expected a map");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    sweep: " + sweep_ + "\n",
               "2: checks.0", "give one of scenario or sweep, not both");
  expect_error("checks:\n  - scenario: " + scenario_ + "\n    shapes: []\n", "3: checks.0.shapes",
               "need a sweep");
}

TEST_F(ValidateErrors, SweepPointsMustMatchTheGrid) {
  expect_error("checks:\n  - sweep: " + sweep_ +
                   "\n    figures:\n"
                   "      - {point: {workload.concurrency: 3}, arm: a, metric: completed, "
                   "measured: 48, abs: 0}\n",
               "4: checks.0.figures.0.point",
               "points: workload.concurrency=1, workload.concurrency=2");
  expect_error("checks:\n  - sweep: " + sweep_ +
                   "\n    figures:\n"
                   "      - {point: {workload.turns: 4}, arm: a, metric: completed, "
                   "measured: 48, abs: 0}\n",
               "4: checks.0.figures.0.point.workload.turns", "valid fields: workload.concurrency");
}

TEST_F(ValidateErrors, ScenarioErrorsNameTheCheck) {
  expect_error(
      "checks:\n  - {scenario: -1.0, figures: [{arm: a, metric: completed, measured: 1, abs: "
      "0}]}\n",
      "2: checks.0.scenario", "cannot open the scenario file '-1.0'");
  expect_error("checks:\n  - {scenario: [a], figures: []}\n", "2: checks.0.scenario",
               "expected the path of a scenario file");
  // The scenario's own error, with its file and line, once, after the check that named it.
  const std::string bad = write_file(
      dir_ / "bad.yaml", testing::small_scenario_yaml("round_robin") + "sim: {horizon_s: -1}\n");
  const std::string msg =
      expect_error("checks:\n  - scenario: " + bad +
                       "\n    figures: [{arm: a, metric: completed, measured: 1, abs: 0}]\n",
                   "2: checks.0.scenario: " + bad + ":", "sim.horizon_s");
  EXPECT_EQ(count_of(msg, "checks.0.scenario"), 1u) << msg;
}

TEST_F(ValidateErrors, ValidSweepFiguresStillMatchTheirPoint) {
  const std::string file =
      write_file(dir_ / "checks.yaml",
                 "source: test\nchecks:\n  - sweep: " + sweep_ +
                     "\n    figures:\n"
                     "      - {point: {workload.concurrency: 2}, arm: a, metric: completed, "
                     "measured: 48, abs: 0}\n");
  const ValidationReport r = validate({file}, 2);
  ASSERT_EQ(r.figures.size(), 1u);
  EXPECT_EQ(r.figures[0].label, "small workload.concurrency=2");
  EXPECT_TRUE(r.figures[0].ok) << r.figures[0].simulated;
  EXPECT_EQ(r.sources, std::vector<std::string>{"test"});
}

TEST(SweepGridErrors, APathOrValueGivenTwiceIsAnError) {
  const fs::path dir = testing::unique_temp_path("fleetsim-sweep-grid-errors");
  fs::create_directories(dir);
  const std::string scenario =
      write_file(dir / "small.yaml", testing::small_scenario_yaml("round_robin"));
  auto error_of = [&](const std::vector<std::string>& sets, const std::vector<SweepAxis>& axes) {
    try {
      run_sweep(scenario, sets, axes, 1);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string twice = error_of(
      {}, {parse_vary("workload.conversations=1,2"), parse_vary("workload.conversations=3")});
  EXPECT_NE(twice.find("--vary workload.conversations: the path is varied twice"),
            std::string::npos)
      << twice;
  const std::string value = error_of({}, {parse_vary("workload.conversations=1,1")});
  EXPECT_NE(value.find("the value '1' is given twice"), std::string::npos) << value;
  const std::string set =
      error_of({"workload.conversations=3"}, {parse_vary("workload.conversations=1,2")});
  EXPECT_NE(set.find("--set workload.conversations=3: workload.conversations is also varied"),
            std::string::npos)
      << set;
  const std::string point = error_of({}, {parse_vary("workload.conversations=[1, {a: 1}]")});
  EXPECT_NE(point.find("sweep point workload.conversations={a: 1}: "), std::string::npos) << point;
  fs::remove_all(dir);
}

TEST(SweepGridErrors, ABadValueOfTheScenariosOwnGridNamesItsLine) {
  const fs::path dir = testing::unique_temp_path("fleetsim-sweep-grid-lines");
  fs::create_directories(dir);
  const std::string base = testing::small_scenario_yaml("round_robin");
  const std::string scenario =
      write_file(dir / "small.yaml",
                 base + "sweep:\n  vary:\n    workload.conversations:\n      - 2\n      - -3\n");
  try {
    run_sweep(scenario, {}, {}, 1);
    ADD_FAILURE() << "a negative conversation count was accepted";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    // The value -3 is the second list item, on the file's last line.
    const std::string line = std::to_string(std::count(base.begin(), base.end(), '\n') + 5);
    EXPECT_NE(what.find("sweep point workload.conversations=-3 (written at " + scenario + ":" +
                        line + ")"),
              std::string::npos)
        << what;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fleetsim
