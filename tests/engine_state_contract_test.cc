// Policies that say they do not read the engines' own state (RoutingPolicy::reads_engine_state)
// get PodState::waiting, running and kv_usage as 0, which makes routing in large fleets cheap.
// This holds each of them to it: under KV pressure, where those fields vary, a run of the policy
// must equal a run of the same policy behind a witness that asks for the full state.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>

#include "policies/policy.h"
#include "sim/errors.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

// Forwards every call to the policy `inner` (with `inner_params`) and asks for the engine state.
class EngineStateWitness : public RoutingPolicy {
 public:
  EngineStateWitness(const Params& params, const PolicyContext& ctx) {
    const auto& entry = PolicyRegistry::instance().get(params.get_string("inner"), "policy");
    inner_ = entry.factory(
        parse_params_map(params.get_string("inner_params"), entry.spec, "witness inner_params"),
        ctx);
  }
  int pick(const Request& r, std::span<const PodState> c, const RouteContext& ctx) override {
    return inner_->pick(r, c, ctx);
  }
  void on_dispatched(const Request& r, int pod) override { inner_->on_dispatched(r, pod); }
  void on_first_token(const Request& r, int pod) override { inner_->on_first_token(r, pod); }
  void on_finished(const Request& r, int pod) override { inner_->on_finished(r, pod); }
  TimeNs routing_delay(const Request& r) const override { return inner_->routing_delay(r); }
  bool wants_kv_events() const override { return inner_->wants_kv_events(); }
  void on_kv_events(int pod, std::span<const KvEvent> e) override { inner_->on_kv_events(pod, e); }
  bool reads_engine_state() const override { return true; }

 private:
  std::unique_ptr<RoutingPolicy> inner_;
};

const PolicyRegistrar kWitness("zz_engine_state_witness",
                               "test only: a policy behind a witness that reads the engine state",
                               ParamSpec()
                                   .policy_name("inner", "round_robin",
                                                "the policy behind the witness")
                                   .params_of("inner_params", "inner", "its parameters"),
                               [](const Params& p, const PolicyContext& ctx) {
                                 return std::make_unique<EngineStateWitness>(p, ctx);
                               });

// 150 KV blocks for six live conversations: waiting queues and KV usage change all the time.
std::string scenario_yaml(const std::string& arm) {
  std::string y = testing::small_scenario_yaml("round_robin", 150);
  return y.substr(0, y.find("arms:")) + "arms:\n" + arm;
}

// Whether the policy, with its default parameters, says it reads the engines' state.
bool reads_by_default(const std::string& name) {
  const Scenario s =
      parse_scenario(scenario_yaml("  - {name: a, policy: " + name + "}\n"), "plain.yaml");
  const auto& entry = PolicyRegistry::instance().get(name, "policy");
  return entry.factory(s.arms[0].params, policy_context(s, "a"))->reads_engine_state();
}

// Every registered policy that, with its defaults, says it does not.
std::vector<std::string> policies_that_say_no() {
  std::vector<std::string> out;
  for (const auto& name : PolicyRegistry::instance().names()) {
    if (!reads_by_default(name)) out.push_back(name);
  }
  return out;
}

class EngineStateContract : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineStateContract, APolicyThatSaysItDoesNotReadTheEnginesRoutesAsIfItHadThem) {
  const std::string name = GetParam();
  const Scenario plain =
      parse_scenario(scenario_yaml("  - {name: a, policy: " + name + "}\n"), "plain.yaml");
  const Scenario witnessed = parse_scenario(
      scenario_yaml("  - {name: a, policy: zz_engine_state_witness, params: {inner: " + name +
                    "}}\n"),
      "witnessed.yaml");
  const ArmResult a = run_arm(plain, plain.arms[0]);
  const ArmResult b = run_arm(witnessed, witnessed.arms[0]);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].pod, b.records[i].pod) << name << ", request " << i;
    EXPECT_EQ(a.records[i].finished, b.records[i].finished) << name << ", request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EngineStateContract, ::testing::ValuesIn(policies_that_say_no()),
                         [](const auto& p) {
                           std::string name = p.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(EngineState, PoliciesThatReadItSaySo) {
  EXPECT_TRUE(reads_by_default("least_kv"));
  EXPECT_TRUE(reads_by_default("epp-llmd-load-aware"));  // its load-aware scorer reads queues
  EXPECT_GE(policies_that_say_no().size(), 12u);         // the contract above covers the others
  auto reads = [](const std::string& yaml_arm) {
    const Scenario s = parse_scenario(scenario_yaml(yaml_arm), "s.yaml");
    const auto& entry = PolicyRegistry::instance().get(s.arms[0].policy, "policy");
    return entry.factory(s.arms[0].params, policy_context(s, "a"))->reads_engine_state();
  };
  EXPECT_TRUE(reads("  - {name: a, policy: least_kv}\n"));
  EXPECT_TRUE(reads("  - {name: a, policy: power_of_two, params: {metric: kv}}\n"));
  EXPECT_FALSE(reads("  - {name: a, policy: power_of_two, params: {metric: requests}}\n"));
  EXPECT_TRUE(reads("  - {name: a, policy: epp, params: {scorers: 'queue-scorer'}}\n"));
  EXPECT_TRUE(
      reads("  - {name: a, policy: epp, params: {scorers: 'kv-cache-utilization-scorer'}}\n"));
  EXPECT_FALSE(reads("  - {name: a, policy: epp}\n"));  // token-load + active-request
  EXPECT_TRUE(reads("  - {name: a, policy: tier_classifier, params: {inner_policy: least_kv}}\n"));
}

}  // namespace
}  // namespace fleetsim
