// A gateway that balances connections (gateway.balance: connection), end to end: a client
// worker's keep-alive connection stays on the pod its first request was routed to, whatever the
// policy, and a connection to a pod that goes down is routed afresh.
#include <gtest/gtest.h>

#include <string>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

double counter(const ArmSummary& a, const std::string& name) {
  for (const auto& c : a.gateway_counters) {
    if (c.name == name) return c.value;
  }
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

// `gateway_extra`: more gateway fields, as ", key: value"; `extra`: more top-level sections.
std::string chat_yaml(const std::string& balance, const std::string& extra = "",
                      const std::string& gateway_extra = "") {
  return R"(name: connections
seed: 7
fleet: {pods: 3, gpu: H100-SXM, model: Llama-3.1-8B-Instruct}
workload:
  type: multi_turn_chat
  conversations: 12
  turns: 5
  concurrency: 4
  system_prompt_tokens: 500
  question_tokens: 50
  answer_tokens: 20
gateway: {balance: )" +
         balance + gateway_extra + R"(, probe_interval_s: 1, probe_timeout_s: 0.5, probe_fall: 2}
)" + extra +
         R"(
arms:
  - {name: rr, policy: round_robin}
)";
}

TEST(ConnectionBalance, AWorkersRequestsStayOnThePodOfItsFirst) {
  const ArmSummary by_request =
      run_scenario(parse_scenario(chat_yaml("request"), "c.yaml"), 1).arms[0].summary;
  const ArmSummary by_connection =
      run_scenario(parse_scenario(chat_yaml("connection"), "c.yaml"), 1).arms[0].summary;
  // Round robin per request moves every turn; per connection, the four workers' first requests
  // are routed (pods 0, 1, 2, 0) and all the others follow their connection.
  EXPECT_LT(by_request.routing.same_pod_as_previous_turn, 0.5);
  EXPECT_DOUBLE_EQ(by_connection.routing.same_pod_as_previous_turn, 1.0);
  EXPECT_DOUBLE_EQ(by_connection.routing.conversations_on_one_pod, 1.0);
  EXPECT_EQ(counter(by_connection, "routed_by_policy"), 4);
  EXPECT_EQ(counter(by_connection, "routed_by_connection"), 60 - 4);
  ASSERT_EQ(by_connection.per_pod.size(), 3u);
  EXPECT_EQ(by_connection.per_pod[0].requests, 30);  // two workers' 3 conversations each
  EXPECT_EQ(by_connection.per_pod[1].requests, 15);
  EXPECT_EQ(by_connection.per_pod[2].requests, 15);
  EXPECT_GT(by_connection.prefix_cache_reuse, by_request.prefix_cache_reuse + 0.1);
  EXPECT_EQ(by_connection.failed, 0);
}

TEST(ConnectionBalance, TheSpreaderKeepsAConnectionOnOneGatewayReplica) {
  const ArmSummary a =
      run_scenario(parse_scenario(chat_yaml("connection", "",
                                            ", replicas: 3, replica_assignment: round_robin"),
                                  "c.yaml"),
                   1)
          .arms[0]
          .summary;
  // Per request the spreader would give each replica 20; per connection the four workers land
  // on replicas 0, 1, 2, 0 and stay, each replica pinning its workers' pods.
  ASSERT_EQ(a.replicas.routed.size(), 3u);
  EXPECT_EQ(a.replicas.routed[0], 30);
  EXPECT_EQ(a.replicas.routed[1], 15);
  EXPECT_EQ(a.replicas.routed[2], 15);
  EXPECT_DOUBLE_EQ(a.routing.same_pod_as_previous_turn, 1.0);
  EXPECT_EQ(counter(a, "routed_by_connection"), 60 - 4);
}

TEST(ConnectionBalance, AConnectionToAPodThatWentDownIsRoutedAfresh) {
  const ArmSummary a =
      run_scenario(parse_scenario(chat_yaml("connection",
                                            "faults:\n  - {kind: pod_kill, "
                                            "target: pod-0, at_s: 2, mode: refused}"),
                                  "c.yaml"),
                   1)
          .arms[0]
          .summary;
  // The two workers on pod-0 fail there until the probes mark it down, then move for good.
  EXPECT_GT(counter(a, "routed_by_policy"), 4);
  EXPECT_GT(a.failed, 0);
  EXPECT_EQ(a.completed + a.failed, a.requests);
  EXPECT_GT(a.per_pod[1].requests + a.per_pod[2].requests, 30);
}

}  // namespace
}  // namespace fleetsim
