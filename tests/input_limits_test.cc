// Inputs a fuzzer found slipping through: values that overflowed the clock or a 32-bit field,
// fields of the wrong shape, and policy parameters checked only when the policy is built. Each
// must be refused with its file, line and field.
#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/event_loop.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    const Scenario s = parse_scenario(yaml, "bad.yaml", sets);
    (void)run_scenario(s, 1);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kSmall = testing::small_scenario_yaml("round_robin");

TEST(InputLimits, TimeConversionsSaturateInsteadOfOverflowing) {
  EXPECT_EQ(ms_to_ns(1e308), kTimeLimit);
  EXPECT_EQ(sec_to_ns(-1e300), -kTimeLimit);
  EXPECT_EQ(scale_ns(kTimeLimit, 1e6), kTimeLimit);
  EXPECT_EQ(ms_to_ns(1.5), 1'500'000);
}

TEST(InputLimits, EventsPastTheClocksReachAreScenarioErrors) {
  EventLoop loop;
  EXPECT_THROW(loop.schedule_in(ms_to_ns(1e300), [] {}), ScenarioError);
  EXPECT_NO_THROW(loop.schedule_in(kTimeLimit - 1, [] {}));
}

TEST(InputLimits, DurationsAreCappedAtTheClocksReach) {
  const std::string e =
      error_of(kSmall + "faults: [{kind: pod_kill, target: pod-0, at_s: 1e10}]\n");
  EXPECT_NE(e.find("bad.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("faults.0.at_s: expected float in [0, 1e+09], got '1e10'"), std::string::npos)
      << e;
  EXPECT_NE(error_of(kSmall, {"fleet.server.api_overhead_ms=1e19"})
                .find("fleet.server.api_overhead_ms: expected float in [0, 1e+12]"),
            std::string::npos);
}

TEST(InputLimits, AHugeSlowdownIsAnErrorNotAWrappedClock) {
  const std::string e =
      error_of(kSmall + "faults: [{kind: slow_pod, target: pod-0, at_s: 0, factor: 1e300}]\n");
  EXPECT_NE(e.find("faults.0.factor"), std::string::npos) << e;
}

TEST(InputLimits, IntegersAreRefusedNotCutTo32Bits) {
  const std::string e = error_of(kSmall, {"workload.turns=4294967297"});
  EXPECT_NE(e.find("workload.turns: expected int in [1, 2147483647], got '4294967297'"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of(kSmall, {"fleet.server.num_gpu_blocks_override=2147483648"})
                .find("fleet.server.num_gpu_blocks_override: expected int in [0, 100000000]"),
            std::string::npos);
}

TEST(InputLimits, WrongShapesOfTextFieldsNameTheField) {
  EXPECT_NE(error_of(kSmall + "description: {a: 1}\n").find("bad.yaml:"), std::string::npos);
  EXPECT_NE(error_of(kSmall + "description: {a: 1}\n").find("description: expected a text"),
            std::string::npos);
  const std::string m = error_of(kSmall + "measured: {a: 5}\n");
  EXPECT_NE(m.find("measured.a: expected a map metric -> measured value"), std::string::npos) << m;
}

TEST(InputLimits, PolicyParametersCheckedAtBuildTimeNameTheArm) {
  const std::string e =
      error_of(testing::small_scenario_yaml("epp"), {"arms.0.params={filters: bogus}"});
  EXPECT_NE(e.find("arms.0.params: unknown EPP filter 'bogus'"), std::string::npos) << e;
  EXPECT_NE(e.find("prefix-cache-affinity-filter"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
