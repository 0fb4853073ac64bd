// Fleets of several pools with tier routing, and gateways of several replicas, end to end: the
// effects they exist to show, and results that do not depend on the thread count.
#include <gtest/gtest.h>

#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

double counter(const std::vector<PolicyCounter>& counters, const std::string& name) {
  for (const auto& c : counters) {
    if (c.name == name) return c.value;
  }
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

const ArmResult& arm(const RunResult& r, const std::string& name) {
  for (const auto& a : r.arms) {
    if (a.name == name) return a;
  }
  throw std::runtime_error("no arm " + name);
}

TEST(GatewayReplicas, PerReplicaPrefixIndexesLoseReuseUnlessTheSpreaderKeepsConversations) {
  // The flagship workload behind the EPP's approximate prefix index: with three replicas and a
  // round-robin spreader, each replica knows a third of the routing history, and a turn often
  // lands on a pod without its prefix. Hashing the conversation to a replica recovers it.
  const Scenario s = load_scenario(testing::source_path("scenarios/gateway-replicas.yaml"));
  const RunResult r = run_scenario(s, 0);
  const double one = arm(r, "epp-1").summary.prefix_cache_reuse;
  const double rr = arm(r, "epp-3-rr").summary.prefix_cache_reuse;
  const double random = arm(r, "epp-3-random").summary.prefix_cache_reuse;
  const double hashed = arm(r, "epp-3-conv-hash").summary.prefix_cache_reuse;
  EXPECT_LT(rr, one - 0.03) << "one " << one << ", three round robin " << rr;
  EXPECT_LT(random, one - 0.03) << "one " << one << ", three random " << random;
  EXPECT_GT(hashed, rr + 0.03) << "hashed " << hashed << ", round robin " << rr;
  EXPECT_NEAR(hashed, one, 0.02);
  // Hashing the prompt keeps affinity through any number of gateways: it holds no state.
  EXPECT_GT(arm(r, "chwbl-3-rr").summary.prefix_cache_reuse, rr);
  for (const auto& a : r.arms) EXPECT_EQ(a.summary.failed, 0) << a.name;

  // The spreader's shares: round robin splits evenly; counters add up over replicas.
  const auto& routed = arm(r, "epp-3-rr").summary.replicas.routed;
  ASSERT_EQ(routed.size(), 3u);
  EXPECT_EQ(routed[0] + routed[1] + routed[2], 600);
  EXPECT_EQ(routed[0], 200);
  EXPECT_EQ(arm(r, "epp-3-rr").summary.replicas.assignment, "round_robin");
  EXPECT_EQ(counter(arm(r, "epp-3-rr").summary.gateway_counters, "routed_by_policy"), 600);
  EXPECT_TRUE(arm(r, "epp-1").summary.replicas.routed.empty());

  const nlohmann::json j = result_json(r, s);
  EXPECT_EQ(j.dump(), result_json(run_scenario(s, 1), s).dump());
  EXPECT_FALSE(j["fleet"].contains("pools"));
  EXPECT_FALSE(j["arms"][0]["summary"].contains("per_pool"));
  EXPECT_FALSE(j["arms"][0]["summary"].contains("gateway_replicas"));
  EXPECT_EQ(j["arms"][1]["summary"]["gateway_replicas"]["routed"].size(), 3u);
}

TEST(GatewayReplicas, OneReplicaIsTheGatewayOfBefore) {
  const Scenario s = load_scenario(testing::source_path("scenarios/loxilb-3pod-long.yaml"));
  const Scenario same = load_scenario(testing::source_path("scenarios/loxilb-3pod-long.yaml"),
                                      {"gateway.replicas=1"});
  EXPECT_EQ(result_json(run_scenario(s, 1), s).dump(),
            result_json(run_scenario(same, 1), same).dump());
}

TEST(GatewayReplicas, ScrapedSignalsWorkPerReplica) {
  // Stale signals on their own phase per replica: the run completes and is reproducible.
  const Scenario s = parse_scenario(testing::small_pooled_scenario_yaml("least_kv", 0, 3),
                                    "pooled.yaml", {"gateway.scrape_interval_ms=200"});
  const RunResult a = run_scenario(s, 1);
  EXPECT_EQ(a.arms[0].summary.completed, 48);
  EXPECT_EQ(result_json(a, s).dump(), result_json(run_scenario(s, 1), s).dump());
}

TEST(GatewayReplicas, EachReplicaProbesOnItsOwnPhasesUnlessTheyShareOneBelief) {
  // A node is lost at 30 s; probes every 5 s, three failures mark a pod down.
  auto first_fault = [](const std::vector<std::string>& sets) {
    const Scenario s = load_scenario(testing::source_path("scenarios/node-loss.yaml"), sets);
    const nlohmann::json j = result_json(run_scenario(s, 1), s);
    EXPECT_EQ(j.dump(), result_json(run_scenario(s, 2), s).dump()) << "thread count";
    return j["arms"][0]["failures"]["faults"][0];
  };
  const nlohmann::json one = first_fault({});
  const nlohmann::json own = first_fault({"gateway.replicas=3"});
  const nlohmann::json shared =
      first_fault({"gateway.replicas=3", "gateway.replica_health=shared"});
  // Shared: replica 0 probes as the single gateway does, and its belief is everyone's.
  EXPECT_EQ(shared["detection_latency_s"], one["detection_latency_s"]);
  EXPECT_FALSE(shared.contains("detection_latency_all_replicas_s"));
  EXPECT_FALSE(one.contains("detection_latency_all_replicas_s"));
  // Own: the first replica to notice is at least as early as replica 0 alone, and the last
  // notices later; until then it keeps sending to the lost pods.
  const double first = own["detection_latency_s"].get<double>();
  const double all = own["detection_latency_all_replicas_s"].get<double>();
  EXPECT_LE(first, one["detection_latency_s"].get<double>());
  EXPECT_LT(first, all);
  EXPECT_LE(all, 15.0 + 1.0);  // fall x interval + the probe timeout
}

TEST(TierClassifier, ScenarioRoutesByTierAndReportsEachPool) {
  const Scenario s = load_scenario(testing::source_path("scenarios/tier-classifier.yaml"));
  const RunResult r = run_scenario(s, 0);
  for (const auto& a : r.arms) {
    EXPECT_EQ(a.summary.failed, 0) << a.name;
    ASSERT_EQ(a.summary.per_pool.size(), 2u) << a.name;
    EXPECT_EQ(a.summary.per_pool[0].pool, "small");
    EXPECT_EQ(a.summary.per_pool[0].requests + a.summary.per_pool[1].requests, a.summary.requests);
  }
  // Everything big: the small pool idles.
  const ArmSummary& all_big = arm(r, "all-big").summary;
  EXPECT_EQ(all_big.per_pool[0].requests, 0);
  EXPECT_EQ(counter(all_big.policy_counters, "tier_big_routed"), all_big.requests);
  // By hint: each request on its hinted tier, and the classifier is always right.
  const ArmResult& hint = arm(r, "hint");
  for (const auto& rec : hint.records) {
    if (rec.arrival < 0) continue;
    EXPECT_EQ(rec.pod >= 2, rec.tier == "big") << "request " << rec.id;
  }
  EXPECT_EQ(counter(hint.summary.policy_counters, "tier_classifier_accuracy"), 1.0);
  // The small tier serves 70% of the chats faster than the loaded big tier did.
  EXPECT_LT(hint.summary.ttft_ms.p50, all_big.ttft_ms.p50);
  // 10% wrong: about a tenth of the requests misrouted, and the accuracy says so.
  const ArmSummary& wrong = arm(r, "hint-10pct-wrong").summary;
  const double share =
      counter(wrong.policy_counters, "tier_misclassified") / static_cast<double>(wrong.requests);
  EXPECT_NEAR(share, 0.1, 0.03);
  EXPECT_NEAR(counter(wrong.policy_counters, "tier_classifier_accuracy"), 1 - share, 1e-9);
  // The JSON has the pools of the fleet and of each arm; the result does not depend on threads.
  const nlohmann::json j = result_json(r, s);
  EXPECT_EQ(j["fleet"]["pools"].size(), 2u);
  EXPECT_EQ(j["arms"][0]["summary"]["per_pool"][1]["pool"], "big");
  EXPECT_EQ(j.dump(), result_json(run_scenario(s, 1), s).dump());
}

TEST(TierClassifier, ClassifierLatencyDelaysTheDispatch) {
  const Scenario s = parse_scenario(testing::small_pooled_scenario_yaml("tier_classifier") +
                                        "    params: {classifier_latency_ms: 40}\n",
                                    "pooled.yaml");
  const ArmResult a = run_arm(s, s.arms[0]);
  for (const auto& rec : a.records) {
    if (rec.arrival < 0) continue;
    EXPECT_GE(rec.dispatched - rec.arrival, ms_to_ns(40)) << "request " << rec.id;
  }
}

}  // namespace
}  // namespace fleetsim
