// Priority scheduling and shedding through whole runs: an interactive class with a priority keeps
// its TTFT when batch requests of the same pods crowd the engines' queues, which first come, first
// served does not; without priorities the two policies run the same. The gateway's flow control
// sheds sheddable (negative-priority) requests with HTTP 429 while every pod is saturated, and
// only then.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "sim/errors.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Two L40S pods past their prefill capacity: chat sessions, a quarter of them interactive.
std::string crowded_scenario(const std::string& policy, int interactive_priority,
                             const std::string& extra = "", double rate = 12) {
  return "name: crowded\nseed: 3\n"
         "fleet: {pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct,\n"
         "        server: {scheduling_policy: " +
         policy +
         "}}\n"
         "workload: {type: chat_sessions, rate: " +
         std::to_string(rate) +
         ", max_sessions: 300,\n"
         "  turns: {dist: uniform, low: 1, high: 4}, think_time_ms: 1000,\n"
         "  system_prompt_tokens: 1500, question_tokens: {dist: uniform, low: 100, high: 600},\n"
         "  answer_tokens: {dist: uniform, low: 50, high: 300},\n"
         "  slo_class_mix: 'interactive:1, batch:3'}\n"
         "slo: {ttft_ms: 60000, classes: {interactive: {ttft_ms: 1000, priority: " +
         std::to_string(interactive_priority) +
         "}}}\n"
         "arms: [{name: rr, policy: round_robin}]\n" +
         extra;
}

// The class's 95th-percentile TTFT, ms, over its completed requests.
double ttft_p95(const ArmResult& arm, const std::string& slo_class) {
  std::vector<double> ttft;
  for (const RequestRecord& r : arm.records) {
    if (r.slo_class == slo_class && r.done && r.outcome == Outcome::kOk) {
      ttft.push_back(ns_to_ms(r.first_token - r.arrival));
    }
  }
  std::sort(ttft.begin(), ttft.end());
  return ttft.at(static_cast<size_t>(0.95 * static_cast<double>(ttft.size() - 1)));
}

ArmResult run(const std::string& policy, int interactive_priority = 10) {
  const Scenario s = parse_scenario(crowded_scenario(policy, interactive_priority), "c.yaml");
  return run_arm(s, s.arms[0]);
}

TEST(PriorityScheduling, TheInteractiveClassKeepsItsTtftWhereFcfsMissesIt) {
  const ArmResult fcfs = run("fcfs");
  const ArmResult priority = run("priority");
  EXPECT_LT(ttft_p95(priority, "interactive"), 0.8 * ttft_p95(fcfs, "interactive"));
  EXPECT_GT(ttft_p95(priority, "batch"), ttft_p95(fcfs, "batch"));
  const auto attainment = [](const ArmResult& a) {
    for (const auto& c : a.summary.goodput->per_class) {
      if (c.slo_class == "interactive") return c.attainment;
    }
    return -1.0;
  };
  EXPECT_LT(attainment(fcfs), 0.95);
  EXPECT_EQ(attainment(priority), 1.0);
}

TEST(PriorityScheduling, WithoutPrioritiesThePoliciesRunTheSame) {
  const ArmResult fcfs = run("fcfs", 0);
  const ArmResult priority = run("priority", 0);
  EXPECT_EQ(ttft_p95(fcfs, "interactive"), ttft_p95(priority, "interactive"));
  EXPECT_EQ(fcfs.summary.output_tokens_per_s, priority.summary.output_tokens_per_s);
}

// Batch requests are sheddable; the gateway sheds them while the pool is saturated.
ArmResult run_shedding(double rate, int batch_priority) {
  const std::string yaml =
      crowded_scenario("priority", 10, "gateway: {shed_sheddable: true}\n", rate);
  Scenario s = parse_scenario(
      yaml, "c.yaml",
      {"slo.classes.batch={ttft_ms: 60000, priority: " + std::to_string(batch_priority) + "}"});
  return run_arm(s, s.arms[0]);
}

std::map<std::string, int> outcomes_by_class(const ArmResult& arm) {
  std::map<std::string, int> out;
  for (const RequestRecord& r : arm.records) ++out[r.slo_class + " " + outcome_name(r.outcome)];
  return out;
}

double counter(const ArmResult& arm, const std::string& name) {
  for (const auto& c : arm.summary.gateway_counters) {
    if (c.name == name) return c.value;
  }
  return -1;
}

TEST(Shedding, OnlySheddableRequestsAreShedWith429WhileThePoolIsSaturated) {
  const ArmResult arm = run_shedding(16, -1);
  const auto outcomes = outcomes_by_class(arm);
  EXPECT_THAT(outcomes, ::testing::Contains(::testing::Key("batch http_429")));
  EXPECT_THAT(outcomes,
              ::testing::Not(::testing::Contains(::testing::Key("interactive http_429"))));
  EXPECT_EQ(counter(arm, "shed_http_429"), outcomes.at("batch http_429"));
  EXPECT_EQ(arm.summary.failed, outcomes.at("batch http_429"));
}

TEST(Shedding, NothingIsShedWithoutSheddableRequestsOrSaturation) {
  EXPECT_EQ(counter(run_shedding(16, 0), "shed_http_429"), 0);
  EXPECT_EQ(counter(run_shedding(2, -1), "shed_http_429"), 0);
}

// Two tenants' single-turn sessions, 10 a second each for 20 s; tenant a limited at the gateway.
ArmResult run_rate_limited(const std::string& limit) {
  const Scenario s = parse_scenario(
      "name: limited\nseed: 4\nfleet: {pods: 2, gpu: H100-SXM, model: Llama-3.1-8B}\n"
      "workload: {type: chat_sessions, arrival: constant, rate: 20, max_sessions: 0,\n"
      "  duration_s: 20, turns: 1, tenants: 'a:1, b:1', system_prompt_tokens: 200}\n"
      "gateway: {tenant_rate_limit: '" +
          limit +
          "', tenant_burst_s: 2}\n"
          "arms: [{name: rr, policy: round_robin}]\n",
      "l.yaml");
  return run_arm(s, s.arms[0]);
}

TEST(RateLimit, ATenantGetsItsRateAndBurstAndThe429sTheRestOthersAreUntouched) {
  const ArmResult arm = run_rate_limited("a:3");
  std::map<std::string, int> by = outcomes_by_class(arm);  // slo class "" + outcome
  std::map<std::string, int> tenant_ok, tenant_429;
  for (const RequestRecord& r : arm.records) {
    ++(r.outcome == Outcome::kShed429 ? tenant_429 : tenant_ok)[r.tenant];
  }
  // 20 s at 3 a second, plus the 6 of a full bucket at the start (2 s of burst), give or take one.
  EXPECT_NEAR(tenant_ok["a"], 3 * 20 + 6, 1);
  EXPECT_GT(tenant_429["a"], 100);
  EXPECT_EQ(tenant_429["b"], 0);
  EXPECT_EQ(counter(arm, "rate_limited_http_429"), tenant_429["a"]);
}

TEST(RateLimit, ALimitThatIsNotTenantAndRateIsRefusedWhereItIsWritten) {
  EXPECT_THAT([] { run_rate_limited("a"); },
              ::testing::ThrowsMessage<ScenarioError>(::testing::HasSubstr(
                  "l.yaml:6: gateway.tenant_rate_limit: 'a' in 'a' is not tenant:requests_per_s")));
  EXPECT_THAT([] { run_rate_limited("a:1, a:2"); },
              ::testing::ThrowsMessage<ScenarioError>(::testing::HasSubstr("appears twice")));
}

}  // namespace
}  // namespace fleetsim
