// Inputs a fuzzer found slipping through: values that overflowed the clock or a 32-bit field,
// fields of the wrong shape, and policy parameters checked only when the policy is built. Each
// must be refused with its file, line and field.
#include <gtest/gtest.h>

#include <filesystem>

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

// Found by tests/python/test_fuzz.py: refusals made while an arm is built or run, which used to
// name neither the file nor the line.
TEST(InputLimits, RefusalsMadeWhenAnArmRunsNameTheFile) {
  // An API server that takes 31 years before the engine sees a request.
  std::string e = error_of(kSmall, {"fleet.server.api_overhead_ms=1e12"});
  EXPECT_EQ(e.rfind("bad.yaml: arm 'a': simulated time would pass 31 years", 0), 0u) << e;
  const std::string open_loop =
      "name: o\nfleet: {pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\nworkload:\n"
      "  type: open_loop\n  rate: 2\n  duration_s: 0\n  max_requests: 0\n"
      "arms: [{name: a, policy: round_robin}]\n";
  e = error_of(open_loop);
  EXPECT_EQ(e,
            "bad.yaml:4: workload: open_loop needs max_requests or duration_s (with both 0 "
            "it never ends)");
  // A field checked when the workload is built gets its own line (its --set when it came by one).
  e = error_of(open_loop, {"workload.duration_s=10", "workload.rate_schedule=oops"});
  EXPECT_EQ(e.rfind("bad.yaml: --set workload.rate_schedule: 'oops' is not time_s:rate", 0), 0u)
      << e;
  std::string scheduled = open_loop;
  scheduled.replace(scheduled.find("  rate: 2\n"), 10, "  rate: 2\n  rate_schedule: oops\n");
  e = error_of(scheduled, {"workload.duration_s=10"});
  EXPECT_EQ(e.rfind("bad.yaml:6: workload.rate_schedule: 'oops' is not time_s:rate", 0), 0u) << e;
}

TEST(InputLimits, AReplayWindowEndingBeforeItStartsIsRefusedAtLoad) {
  const std::string yaml =
      "name: t\nfleet: {pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\nworkload:\n"
      "  type: mooncake_trace\n  file: " +
      testing::write_file(testing::unique_temp_path("InputLimits.window.jsonl"), "") +
      "\n  start_s: 10\n  end_s: 5\narms: [{name: a, policy: round_robin}]\n";
  const std::string e = error_of(yaml);
  EXPECT_EQ(e, "bad.yaml:7: workload.end_s: 5 must be after workload.start_s (10)");
}

TEST(InputLimits, RequestsABlackHoleKeepsForeverAreTheFilesError) {
  try {
    const Scenario s = parse_scenario(
        kSmall + "faults: [{kind: pod_kill, target: pod-0, at_s: 0, mode: black_hole}]\n",
        "bad.yaml", {"gateway.request_timeout_s=0"});
    (void)run_scenario(s, 1);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.yaml: arm 'a': ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("never ended before the run's end"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
