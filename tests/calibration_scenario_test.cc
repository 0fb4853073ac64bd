// A scenario's fleet.cost_model.calibration: the file `fleetsim calibrate` writes, found beside
// the scenario, under the scenario's own fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/cost_model.h"
#include "sim/errors.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

const char* kCalibration =
    "cost_model:\n"
    "  type: roofline\n"
    "  compute_efficiency: 0.61\n"
    "  bandwidth_efficiency: 0.69\n"
    "  step_overhead_ms: 2.5\n"
    "fit:\n"
    "  form: roofline\n"
    "  gpu: \"A100-80GB-SXM\"\n"
    "  model: \"Llama-3.1-8B\"\n"
    "  tensor_parallel_size: 1\n";

std::string scenario(const std::string& cost_model) {
  return "name: calibrated\n"
         "fleet:\n"
         "  pods: 1\n"
         "  gpu: A100-80GB-SXM\n"
         "  model: Llama-3.1-8B\n"
         "  cost_model: " +
         cost_model +
         "\n"
         "workload: {type: multi_turn_chat, conversations: 2, turns: 2, concurrency: 1}\n"
         "arms: [{name: rr, policy: round_robin}]\n";
}

// A folder holding calibration.yaml, and scenario.yaml with `cost_model`.
fs::path folder(const std::string& name, const std::string& cost_model) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("calibration-" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "calibration.yaml") << kCalibration;
  std::ofstream(dir / "scenario.yaml") << scenario(cost_model);
  return dir;
}

std::string load_error(const std::string& path, const std::vector<std::string>& sets = {}) {
  try {
    load_scenario(path, sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationScenario, FileBesideTheScenarioSetsTheCostModel) {
  const fs::path dir = folder("beside", "{calibration: calibration.yaml}");
  const Scenario s = load_scenario((dir / "scenario.yaml").string());
  const Params& cm = s.fleet.cost_model;
  EXPECT_EQ(cm.get_string("type"), "roofline");
  EXPECT_DOUBLE_EQ(cm.get_double("compute_efficiency"), 0.61);
  EXPECT_DOUBLE_EQ(cm.get_double("bandwidth_efficiency"), 0.69);
  EXPECT_DOUBLE_EQ(cm.get_double("step_overhead_ms"), 2.5);
  EXPECT_EQ(cm.get_string("calibration"), "calibration.yaml");
  // What the file leaves out keeps the spec's default.
  EXPECT_DOUBLE_EQ(cm.get_double("allreduce_bandwidth_gbs"),
                   cost_model_spec().defaults().get_double("allreduce_bandwidth_gbs"));
}

TEST(CalibrationScenario, ScenarioFieldsOverrideTheFile) {
  const fs::path dir = folder("override", "{calibration: calibration.yaml, step_overhead_ms: 9}");
  const Scenario s = load_scenario((dir / "scenario.yaml").string(),
                                   {"fleet.cost_model.bandwidth_efficiency=0.5"});
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("step_overhead_ms"), 9);
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("bandwidth_efficiency"), 0.5);
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("compute_efficiency"), 0.61);
}

TEST(CalibrationScenario, SetNamesAFileFromTheCurrentDirectoryOrAnAbsolutePath) {
  const fs::path dir = folder("set", "{}");
  const std::string abs = (dir / "calibration.yaml").string();
  const Scenario s =
      load_scenario((dir / "scenario.yaml").string(), {"fleet.cost_model.calibration=" + abs});
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("step_overhead_ms"), 2.5);
  // Empty means none.
  const Scenario none =
      load_scenario((dir / "scenario.yaml").string(), {"fleet.cost_model.calibration="});
  EXPECT_DOUBLE_EQ(none.fleet.cost_model.get_double("step_overhead_ms"), kDefaultStepOverheadMs);
}

TEST(CalibrationScenario, PoolsInheritTheFleetsCalibrationOrNameTheirOwn) {
  const fs::path dir = folder("pools", "{}");
  std::ofstream(dir / "other.yaml") << "cost_model: {type: roofline, step_overhead_ms: 7}\n";
  std::ofstream(dir / "pooled.yaml")
      << "fleet:\n"
         "  cost_model: {calibration: calibration.yaml, compute_efficiency: 0.5}\n"
         "  pools:\n"
         "    - {name: a, pods: 1, gpu: A100-80GB-SXM, model: Llama-3.1-8B}\n"
         "    - {name: b, pods: 1, gpu: A100-80GB-SXM, model: Llama-3.1-8B,\n"
         "       cost_model: {calibration: other.yaml}}\n"
         "workload: {type: multi_turn_chat, conversations: 2, turns: 2, concurrency: 1}\n"
         "arms: [{name: rr, policy: round_robin}]\n";
  const Scenario s = load_scenario((dir / "pooled.yaml").string());
  ASSERT_EQ(s.fleet.pools.size(), 2u);
  const Params& a = s.fleet.pools[0].cost_model;
  EXPECT_DOUBLE_EQ(a.get_double("step_overhead_ms"), 2.5);
  EXPECT_DOUBLE_EQ(a.get_double("compute_efficiency"), 0.5);
  // Pool b: its own file over the fleet level's values.
  const Params& b = s.fleet.pools[1].cost_model;
  EXPECT_DOUBLE_EQ(b.get_double("step_overhead_ms"), 7);
  EXPECT_DOUBLE_EQ(b.get_double("compute_efficiency"), 0.5);
  EXPECT_DOUBLE_EQ(b.get_double("bandwidth_efficiency"), 0.69);
  EXPECT_EQ(b.get_string("calibration"), "other.yaml");
}

TEST(CalibrationScenario, TheCommittedExampleLoads) {
  const Scenario s = load_scenario(testing::source_path("examples/calibration/scenario.yaml"));
  EXPECT_EQ(s.fleet.cost_model.get_string("type"), "roofline");
  EXPECT_NEAR(s.fleet.cost_model.get_double("compute_efficiency"), 0.6, 0.02);
  EXPECT_NEAR(s.fleet.cost_model.get_double("bandwidth_efficiency"), 0.7, 0.02);
}

TEST(CalibrationScenario, MissingOrBadFilesNameTheScenarioFieldAndTheFile) {
  const fs::path dir = folder("bad", "{calibration: nope.yaml}");
  const std::string path = (dir / "scenario.yaml").string();
  std::string e = load_error(path);
  EXPECT_NE(e.find(path +
                   ":6: fleet.cost_model.calibration: cannot open the calibration file "
                   "'nope.yaml' (looked in " +
                   dir.string() + "/"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("fleetsim calibrate"), std::string::npos) << e;

  std::ofstream(dir / "broken.yaml") << "cost_model:\n  type: roofline\n  step_overhead_ms: -1\n";
  e = load_error(path, {"fleet.cost_model.calibration=" + (dir / "broken.yaml").string()});
  EXPECT_NE(e.find("fleet.cost_model.calibration: " + (dir / "broken.yaml").string() +
                   ":3: cost_model.step_overhead_ms: expected float in [0, 1e+12], got '-1'"),
            std::string::npos)
      << e;

  e = load_error(path, {"fleet.cost_model.calibration=[a, b]"});
  EXPECT_NE(e.find("fleet.cost_model.calibration: expected the path of a file"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace fleetsim
