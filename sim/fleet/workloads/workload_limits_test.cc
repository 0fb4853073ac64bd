// Out-of-range lengths, counts, delays and rates of the workload generators: each is an error at
// the scenario line that names the field and the valid range, never a silent clamp, an overflow
// or a run that hangs on a billion-token prompt.
#include <gtest/gtest.h>

#include <utility>

#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/fleet/workloads/workload_test_util.h"

namespace fleetsim {
namespace {

using testing::WorkloadHarness;

// The message of the ScenarioError building workload `type` with `yaml` raises, or "".
std::string error_of(const std::string& type, const std::string& yaml) {
  try {
    WorkloadHarness h(type, yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

struct Field {
  const char* type;
  const char* name;
  const char* range;  // as the message writes it
};

constexpr char kTokens0[] = "[0, 10000000]";
constexpr char kTokens1[] = "[1, 10000000]";
constexpr char kDelay[] = "[0, 1000000000000]";

const std::vector<Field> kFields = {
    {"multi_turn_chat", "system_prompt_tokens", kTokens0},
    {"multi_turn_chat", "question_tokens", kTokens1},
    {"multi_turn_chat", "answer_tokens", kTokens1},
    {"multi_turn_chat", "think_time_ms", kDelay},
    {"concurrency_streams", "system_prompt_tokens", kTokens0},
    {"concurrency_streams", "question_tokens", kTokens1},
    {"concurrency_streams", "answer_tokens", kTokens1},
    {"concurrency_streams", "think_time_ms", kDelay},
    {"open_loop", "prompt_tokens", kTokens1},
    {"open_loop", "output_tokens", kTokens1},
    {"shared_prefix", "prefix_tokens", kTokens0},
    {"shared_prefix", "question_tokens", kTokens1},
    {"shared_prefix", "output_tokens", kTokens1},
    {"prefix_burst", "prefix_tokens", kTokens0},
    {"prefix_burst", "question_tokens", kTokens1},
    {"prefix_burst", "output_tokens", kTokens1},
    {"prefix_burst", "burst_size", "requests per burst in [1, 1000000]"},
    {"agent_sessions", "system_prompt_tokens", kTokens0},
    {"agent_sessions", "task_tokens", kTokens0},
    {"agent_sessions", "steps", "model calls per session in [1, 1000000]"},
    {"agent_sessions", "action_tokens", kTokens1},
    {"agent_sessions", "tool_output_tokens", kTokens1},
    {"agent_sessions", "tool_latency_ms", kDelay},
};

TEST(WorkloadLimits, NegativeValuesNameLineFieldAndRange) {
  for (const Field& f : kFields) {
    const std::string msg = error_of(f.type, "\n{" + std::string(f.name) + ": -1}");
    EXPECT_NE(msg.find("test.yaml:2: workload." + std::string(f.name) + ": -1 is out of range"),
              std::string::npos)
        << f.type << " " << f.name << ": " << msg;
    EXPECT_NE(msg.find(f.range), std::string::npos) << f.type << " " << f.name << ": " << msg;
  }
}

TEST(WorkloadLimits, HugeValuesAreErrors) {
  for (const Field& f : kFields) {
    for (const char* big : {"1e13", "1e308", "{dist: uniform, low: 1, high: 1e13}",
                            "{dist: lognormal, mean: 1e13, std: 1}"}) {
      const std::string msg = error_of(f.type, "{" + std::string(f.name) + ": " + big + "}");
      EXPECT_NE(msg.find("test.yaml:1: workload." + std::string(f.name)), std::string::npos)
          << f.type << " " << f.name << " " << big << ": " << msg;
      EXPECT_NE(msg.find(f.range), std::string::npos) << msg;
    }
  }
}

TEST(WorkloadLimits, EveryDrawInvalidIsAnError) {
  const std::string msg =
      error_of("multi_turn_chat", "{answer_tokens: {dist: uniform, low: -9, high: 0.4}}");
  EXPECT_NE(msg.find("test.yaml:1: workload.answer_tokens: every draw lies in [-9, 0.4]"),
            std::string::npos)
      << msg;
  // A request generates at least one token; a chat may have no system prompt.
  EXPECT_NE(error_of("open_loop", "{output_tokens: 0}").find("0 is out of range"),
            std::string::npos);
  EXPECT_EQ(error_of("multi_turn_chat", "{system_prompt_tokens: 0}"), "");
  EXPECT_EQ(error_of("shared_prefix", "{prefix_tokens: 0}"), "");
}

TEST(WorkloadLimits, TheLimitsThemselvesAreValid) {
  EXPECT_EQ(error_of("open_loop", "{prompt_tokens: 10000000, output_tokens: 1, max_requests: 1}"),
            "");
  EXPECT_EQ(error_of("agent_sessions", "{steps: 1000000, tool_latency_ms: 1e12}"), "");
  EXPECT_EQ(error_of("prefix_burst", "{burst_size: 1000000}"), "");
  // Uniforms partly below the floor are clamped per draw, as documented.
  WorkloadHarness h("open_loop",
                    "{max_requests: 200, prompt_tokens: {dist: uniform, low: -50, high: 150}, "
                    "output_tokens: {dist: normal, mean: 1e7, std: 1e5}}");
  int at_max = 0;
  for (const Request& r : h.run()) {
    EXPECT_GE(r.prompt_tokens, 1);
    EXPECT_LE(r.output_tokens, 10000000);
    at_max += r.output_tokens == 10000000;
  }
  EXPECT_GT(at_max, 50);
}

TEST(WorkloadLimits, TemplateTokensHaveTheTokenMaximum) {
  const std::string msg = error_of("multi_turn_chat", "{template_tokens_per_turn: 20000000}");
  EXPECT_NE(msg.find("test.yaml:1: workload.template_tokens_per_turn"), std::string::npos) << msg;
}

TEST(WorkloadLimits, ClosedLoopClientsStopAtAMillion) {
  for (const auto& [type, field] :
       {std::pair{"multi_turn_chat", "concurrency"}, std::pair{"concurrency_streams", "streams"},
        std::pair{"agent_sessions", "concurrency"}}) {
    const std::string msg = error_of(type, "{" + std::string(field) + ": 1000001}");
    EXPECT_NE(msg.find("test.yaml:1: workload." + std::string(field)), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1, 1000000]"), std::string::npos) << msg;
    EXPECT_EQ(error_of(type, "{" + std::string(field) + ": 1000000}"), "");
  }
}

TEST(WorkloadLimits, RatesOutsideOneGapPerMicrosecondToElevenDaysAreErrors) {
  for (const char* type : {"open_loop", "shared_prefix", "prefix_burst"}) {
    for (const char* rate : {"1e-320", "0", "1e-7", "-1", "1e300", "2e6"}) {
      const std::string msg = error_of(type, "{rate: " + std::string(rate) + "}");
      EXPECT_NE(msg.find("test.yaml:1: workload.rate"), std::string::npos) << msg;
      EXPECT_NE(msg.find("in [1e-06, 1e+06]"), std::string::npos) << msg;
    }
    EXPECT_EQ(error_of(type, "{rate: 1e6, max_requests: 1}"), "");
    EXPECT_EQ(error_of(type, "{rate: 1e-6, max_requests: 1}"), "");
  }
  EXPECT_NE(
      error_of("open_loop", "{rate_schedule: '0:2, 60:1e-320'}").find("workload.rate_schedule"),
      std::string::npos);
  const std::string msg = error_of("open_loop", "{rate_schedule: '0:2, 60:1e-9'}");
  EXPECT_NE(msg.find("workload.rate_schedule"), std::string::npos) << msg;
  EXPECT_NE(msg.find("below 1e-06"), std::string::npos) << msg;
  EXPECT_NE(error_of("open_loop", "{rate_schedule: '0:2, 60:1e300'}").find("above 1e+06"),
            std::string::npos);
  // 0 still stops the arrivals.
  EXPECT_EQ(error_of("open_loop", "{rate_schedule: '0:2, 60:0'}"), "");
}

}  // namespace
}  // namespace fleetsim
