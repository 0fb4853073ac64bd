// `fleetsim validate --set PATH=VALUE`: one override applied to every check's scenario, after the
// check's own set:, to see what a constant does to every record at once.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/validate.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

class ValidateOverrides : public testing::TempDirTest {
 protected:
  ValidateOverrides() : TempDirTest("fleetsim-validate-set-") {}

  // A check of the small scenario's TTFT p95, its own set: holding the API server's cost at
  // `api_ms`.
  std::string checks_file(const std::string& api_ms) {
    const std::string scenario =
        testing::write_file(dir_ / "s.yaml", testing::small_scenario_yaml("round_robin"));
    return testing::write_file(
        dir_ / "checks.yaml",
        "checks:\n  - scenario: " + scenario +
            "\n    set: [fleet.server.api_overhead_ms=" + api_ms +
            "]\n    figures:\n"
            "      - {arm: a, metric: ttft_p95_ms, measured: 1, rel: 1000}\n");
  }

  double run_ttft_p95(const std::vector<std::string>& sets) {
    const Scenario s = load_scenario((dir_ / "s.yaml").string(), sets);
    return arm_metric("ttft_p95_ms").value(run_scenario(s).arms[0]);
  }
};

TEST_F(ValidateOverrides, EveryCheckRunsWithTheOverridesAfterItsOwn) {
  const std::string checks = checks_file("9");
  const ValidationReport plain = validate({checks}, 1);
  const ValidationReport slower =
      validate({checks}, 1, 1, {"fleet.cost_model.compute_efficiency=0.3"});
  ASSERT_EQ(slower.figures.size(), 1u);
  // The override joins the check's own set: ...
  EXPECT_DOUBLE_EQ(
      slower.figures[0].simulated,
      run_ttft_p95({"fleet.server.api_overhead_ms=9", "fleet.cost_model.compute_efficiency=0.3"}));
  EXPECT_GT(slower.figures[0].simulated, plain.figures[0].simulated);
  // ... and wins where both set the same field.
  const ValidationReport both = validate({checks}, 1, 1, {"fleet.server.api_overhead_ms=500"});
  EXPECT_DOUBLE_EQ(both.figures[0].simulated, run_ttft_p95({"fleet.server.api_overhead_ms=500"}));
  // The rows keep the check's label; the report names the overrides once.
  EXPECT_EQ(both.figures[0].label, plain.figures[0].label);
  EXPECT_EQ(both.sets, std::vector<std::string>{"fleet.server.api_overhead_ms=500"});
  EXPECT_EQ(validation_json(both)["set"][0], "fleet.server.api_overhead_ms=500");
  EXPECT_FALSE(validation_json(plain).contains("set"));
  std::ostringstream table;
  write_validation_table(table, both);
  EXPECT_NE(table.str().find("every check with fleet.server.api_overhead_ms=500"),
            std::string::npos);
}

TEST_F(ValidateOverrides, ABadOverrideNamesTheCheckAndTheField) {
  const std::string checks = checks_file("9");
  try {
    validate({checks}, 1, 1, {"fleet.cost_model.compute_efficiency=2"});
    FAIL() << "an efficiency above 1 was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("checks.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("compute_efficiency"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fleetsim
