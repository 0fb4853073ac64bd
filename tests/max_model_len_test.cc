// vLLM's max_model_len through whole runs: a request longer than it is answered HTTP 400 by the
// API server and never retried, and a pod whose KV cache cannot hold one such request does not
// start.
#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Conversations whose turns grow by 520 tokens (question 300, answer 200, template 20) from a
// 2,000-token system prompt: prompt + answer is 2,500 + 520 (k - 1) at turn k, so turns 1-4
// (at most 4,060) fit a max_model_len of 4,096 and turns 5-6 (4,580, 5,100) do not.
std::string chat_yaml(const std::string& server) {
  return "name: ctx\nseed: 3\nfleet:\n  pods: 1\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n"
         "  server: " +
         server +
         "\nworkload:\n  type: multi_turn_chat\n  conversations: 4\n  turns: 6\n"
         "  concurrency: 4\n  system_prompt_tokens: {dist: constant, value: 2000}\n"
         "  question_tokens: {dist: constant, value: 300}\n"
         "  answer_tokens: {dist: constant, value: 200}\n  template_tokens_per_turn: 20\n"
         "client: {retry: exponential, max_attempts: 3}\n"
         "arms:\n  - name: a\n    policy: round_robin\n";
}

TEST(MaxModelLen, ALongerRequestGetsHttp400AtOnceAndIsNotRetried) {
  const Scenario s = parse_scenario(chat_yaml("{max_model_len: 4096}"), "ctx.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.requests, 24);
  EXPECT_EQ(a.summary.completed, 16);
  EXPECT_EQ(a.summary.failed, 8);
  for (const RequestRecord& r : a.records) {
    const bool too_long = r.prompt_tokens + 200 > 4096;
    EXPECT_EQ(too_long, r.turn >= 5) << "turn " << r.turn << ": " << r.prompt_tokens;
    EXPECT_EQ(r.outcome, too_long ? Outcome::kBadRequest400 : Outcome::kOk) << "turn " << r.turn;
    EXPECT_EQ(r.attempts, 1) << "a 400 is not retried";
    if (too_long) {
      // Refused by the API server after its own overhead, with no engine step: at most the four
      // clients' requests queue at the one API server, each at most 9 ms + 1.5 ms per 1,000 of
      // its (at most 5,100) tokens.
      EXPECT_LE(r.finished - r.arrival, 4 * ms_to_ns(9.0 + 1.5 * 5.1)) << "turn " << r.turn;
      EXPECT_EQ(r.first_token, -1);
    }
  }
}

TEST(MaxModelLen, TheModelsOwnLengthIsTheDefault) {
  const Scenario s = parse_scenario(chat_yaml("{}"), "ctx.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.failed, 0);  // 131,072 tokens for Llama 3.1
}

std::string error_of(const std::string& yaml) {
  try {
    fleet_facts(parse_scenario(yaml, "ctx.yaml", {}));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(MaxModelLen, LongerThanTheModelNeedsVllmsEnvironmentVariable) {
  const std::string err = error_of(chat_yaml("{max_model_len: 200000}"));
  EXPECT_NE(err.find("server.max_model_len 200000 is longer than Llama-3.1-8B's "
                     "max_position_embeddings (131072)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("allow_long_max_model_len"), std::string::npos) << err;
  EXPECT_EQ(error_of(chat_yaml("{max_model_len: 200000, allow_long_max_model_len: true}")), "");
}

// Qwen3-32B-FP8 on one L40S: ~32 GiB of weights leave less KV than one 40,960-token request
// needs (256 KiB a token: 10 GiB), so vLLM stops at startup; a shorter max_model_len starts.
TEST(MaxModelLen, APodWhoseKvCannotHoldOneRequestDoesNotStart) {
  std::string yaml = chat_yaml("{}");
  yaml.replace(yaml.find("H100-SXM"), 8, "L40S");
  yaml.replace(yaml.find("Llama-3.1-8B"), 12, "Qwen3-32B-FP8");
  const std::string err = error_of(yaml);
  // The error points at the section describing the deployment, and keeps its reason apart for
  // a sweep's cell.
  EXPECT_EQ(err.rfind("ctx.yaml:4: fleet: model Qwen3-32B-FP8 on L40S (tp=1): vLLM would not "
                      "start: one request of max_model_len 40960 tokens needs 10.00 GiB of KV "
                      "cache per GPU",
                      0),
            0u)
      << err;
  try {
    fleet_facts(parse_scenario(yaml, "ctx.yaml", {}));
  } catch (const DeploymentError& e) {
    EXPECT_EQ(e.reason().rfind("model Qwen3-32B-FP8 on L40S", 0), 0u) << e.reason();
  }
  EXPECT_NE(err.find("set server.max_model_len to at most that"), std::string::npos) << err;
  const auto at = err.find("the longest that fits is ") + 25;
  const std::string longest = err.substr(at, err.find(' ', at) - at);
  std::string fits = yaml;
  fits.replace(fits.find("server: {}"), 10, "server: {max_model_len: " + longest + "}");
  EXPECT_EQ(error_of(fits), "") << longest;
  std::string over = yaml;
  over.replace(over.find("server: {}"), 10,
               "server: {max_model_len: " + std::to_string(std::stoi(longest) + 1) + "}");
  EXPECT_NE(error_of(over), "") << longest;
}

TEST(MaxModelLen, WithoutChunkedPrefillTheStepBudgetCoversIt) {
  const FleetFacts f = fleet_facts(parse_scenario(
      chat_yaml("{max_model_len: 20000, enable_chunked_prefill: false}"), "ctx.yaml", {}));
  EXPECT_EQ(f.max_num_batched_tokens, 20000);
  const std::string err = error_of(chat_yaml(
      "{max_model_len: 20000, enable_chunked_prefill: false, max_num_batched_tokens: 8192}"));
  EXPECT_EQ(err.rfind("ctx.yaml:4: fleet: pool 'default': server.max_num_batched_tokens 8192 is "
                      "below max_model_len 20000",
                      0),
            0u)
      << err;
}

}  // namespace
}  // namespace fleetsim
