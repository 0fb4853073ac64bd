// A bad scenario is refused with a message naming the file, the line, the field, what was
// expected and the valid names; --set overrides reach any field.
#include <gtest/gtest.h>

#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    parse_scenario(yaml, "bad.yaml", sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string with(const std::string& from, const std::string& to) {
  std::string y = testing::small_scenario_yaml("round_robin");
  const auto at = y.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return y.replace(at, from.size(), to);
}

TEST(Scenario, SmallScenarioParses) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("epp"), "small.yaml");
  EXPECT_EQ(s.fleet.pods, 3);
  EXPECT_EQ(s.arms.size(), 1u);
  EXPECT_EQ(s.arms[0].policy, "epp");
  EXPECT_EQ(s.workload.get_int("conversations"), 12);
}

TEST(Scenario, UnknownPolicyListsValidOnes) {
  const std::string e = error_of(testing::small_scenario_yaml("no_such_policy"));
  EXPECT_NE(e.find("bad.yaml:20: arms.0.policy"), std::string::npos) << e;
  EXPECT_NE(e.find("valid policies:"), std::string::npos) << e;
  EXPECT_NE(e.find("round_robin"), std::string::npos) << e;
}

TEST(Scenario, UnknownGpuAndModelListValidOnes) {
  std::string e = error_of(with("gpu: L40S", "gpu: L41S"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.gpu"), std::string::npos) << e;
  EXPECT_NE(e.find("A100-80GB-PCIe"), std::string::npos) << e;
  e = error_of(with("model: Qwen2.5-7B-Instruct", "model: Qwen9"));
  EXPECT_NE(e.find("fleet.model"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen3-32B-FP8"), std::string::npos) << e;
}

TEST(Scenario, WrongTypesAndRangesNameTheField) {
  std::string e = error_of(with("pods: 3", "pods: three"));
  EXPECT_NE(e.find("bad.yaml:4: fleet.pods: expected an integer"), std::string::npos) << e;
  e = error_of(with("concurrency: 6", "concurrency: 0"));
  EXPECT_NE(e.find("workload.concurrency: expected int >= 1, got '0'"), std::string::npos) << e;
  e = error_of(with("max_num_batched_tokens: 1024", "max_num_batched_tokenz: 1024"));
  EXPECT_NE(e.find("fleet.server.max_num_batched_tokenz"), std::string::npos) << e;
  EXPECT_NE(e.find("valid parameters: "), std::string::npos) << e;
}

TEST(Scenario, UnknownTopLevelFieldAndMissingSections) {
  std::string e = error_of("name: x\nfleat: {}\n");
  EXPECT_NE(e.find("bad.yaml:2: fleat: unknown field; valid fields:"), std::string::npos) << e;
  e = error_of("name: x\n");
  EXPECT_NE(e.find("missing field 'fleet'"), std::string::npos) << e;
  e = error_of("name: [x\n");
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}

TEST(Scenario, BadDistributionListsKinds) {
  const std::string e = error_of(with("{dist: uniform, low: 20, high: 200}", "{dist: gauss}"));
  EXPECT_NE(e.find("workload.question_tokens.dist"), std::string::npos) << e;
  EXPECT_NE(e.find("lognormal"), std::string::npos) << e;
}

TEST(Scenario, SetOverridesAnyField) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("epp"), "small.yaml",
                                    {"fleet.pods=5", "arms.a.params.tie_break=rotation",
                                     "workload.question_tokens={dist: constant, value: 7}",
                                     "fleet.cost_model.compute_efficiency=0.5", "seed=9"});
  EXPECT_EQ(s.fleet.pods, 5);
  EXPECT_EQ(s.arms[0].params.get_string("tie_break"), "rotation");
  EXPECT_DOUBLE_EQ(s.workload.get_distribution("question_tokens").mean(), 7.0);
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("compute_efficiency"), 0.5);
  EXPECT_EQ(s.seed, 9u);
}

TEST(Scenario, BadSetIsRefused) {
  EXPECT_NE(error_of(testing::small_scenario_yaml("epp"), {"fleet.pods"}).find("PATH=VALUE"),
            std::string::npos);
  EXPECT_NE(error_of(testing::small_scenario_yaml("epp"), {"arms.zz.policy=epp"})
                .find("no list element 'zz'"),
            std::string::npos);
}

TEST(Scenario, MeasuredMetricsAreValidated) {
  std::string y = testing::small_scenario_yaml("epp") + "measured:\n  a: {reuse: 3}\n";
  EXPECT_NE(error_of(y).find("valid metrics: prefix_cache_reuse_pct"), std::string::npos);
  y = testing::small_scenario_yaml("epp") + "measured:\n  b: {errors: 0}\n";
  EXPECT_NE(error_of(y).find("no arm named 'b'"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim
