#include "policies/tier_classifier/tier_classifier.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/errors.h"

namespace fleetsim {
namespace {

// Pods 0, 1 in pool "small" (index 0), pods 2, 3 in pool "big" (index 1).
PolicyContext two_pools() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2", "pod-3"};
  ctx.pools = {"small", "big"};
  ctx.pod_pools = {0, 0, 1, 1};
  ctx.seed = 11;
  ctx.stream_name = "arm/tc/policy";
  return ctx;
}

std::vector<PodState> candidates(const PolicyContext& ctx, std::initializer_list<int> indices) {
  std::vector<PodState> out;
  for (const int i : indices) {
    PodState p;
    p.index = i;
    p.name = ctx.pod_names[static_cast<size_t>(i)];
    p.pool = ctx.pool_of(i);
    out.push_back(p);
  }
  return out;
}

std::unique_ptr<RoutingPolicy> make(const std::map<std::string, ParamValue>& set,
                                    const PolicyContext& ctx = two_pools()) {
  Params params = PolicyRegistry::instance().get("tier_classifier", "policy").spec.defaults();
  for (const auto& [k, v] : set) params.set(k, v);
  return make_policy("tier_classifier", params, ctx);
}

Request with_tier(const std::string& tier, std::int32_t prompt_tokens = 100) {
  Request r;
  r.tier = tier;
  r.prompt_tokens = prompt_tokens;
  return r;
}

double counter(const RoutingPolicy& p, const std::string& name) {
  for (const auto& c : p.counters()) {
    if (c.name == name) return c.value;
  }
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

TEST(TierClassifierTest, HintPicksTheTierAndTheInnerPolicyPicksInsideIt) {
  const PolicyContext ctx = two_pools();
  auto p = make({{"inner_policy", std::string("round_robin")}});
  const auto all = candidates(ctx, {0, 1, 2, 3});
  std::set<int> small, big;
  for (int i = 0; i < 10; ++i) {
    small.insert(p->pick(with_tier("small"), all, {}));
    big.insert(p->pick(with_tier("big"), all, {}));
  }
  EXPECT_EQ(small, (std::set<int>{0, 1}));  // each tier's round robin rotates over its own pods
  EXPECT_EQ(big, (std::set<int>{2, 3}));
  // A pool name is a hint too; no hint (or an unknown one) goes to default_tier (big).
  EXPECT_GE(p->pick(with_tier("big"), all, {}), 2);
  EXPECT_GE(p->pick(with_tier(""), all, {}), 2);
  EXPECT_GE(p->pick(with_tier("medium"), all, {}), 2);
  EXPECT_EQ(counter(*p, "tier_small_routed"), 10);
  EXPECT_EQ(counter(*p, "tier_big_routed"), 13);
  EXPECT_EQ(counter(*p, "tier_unknown_hint"), 2);
  EXPECT_EQ(counter(*p, "tier_known_hint"), 21);
  EXPECT_EQ(counter(*p, "tier_classifier_accuracy"), 1.0);
}

TEST(TierClassifierTest, PromptTokensRuleAndItsAccuracyAgainstTheHint) {
  const PolicyContext ctx = two_pools();
  auto p = make({{"rule", std::string("prompt_tokens")}, {"threshold_tokens", std::int64_t{1000}}});
  const auto all = candidates(ctx, {0, 1, 2, 3});
  EXPECT_LE(p->pick(with_tier("small", 999), all, {}), 1);
  EXPECT_GE(p->pick(with_tier("big", 1000), all, {}), 2);
  EXPECT_GE(p->pick(with_tier("small", 5000), all, {}), 2);  // long prompt, small hint: wrong
  EXPECT_LE(p->pick(with_tier("big", 10), all, {}), 1);      // short prompt, big hint: wrong
  EXPECT_DOUBLE_EQ(counter(*p, "tier_classifier_accuracy"), 0.5);
  EXPECT_EQ(counter(*p, "tier_misclassified"), 0);  // only injected errors count here
}

TEST(TierClassifierTest, MisclassificationRateFlipsThatShareDeterministically) {
  const PolicyContext ctx = two_pools();
  auto run = [&] {
    auto p = make({{"misclassification_rate", 0.1}});
    const auto all = candidates(ctx, {0, 1, 2, 3});
    std::vector<int> picks;
    for (int i = 0; i < 4000; ++i) picks.push_back(p->pick(with_tier("small"), all, {}));
    return std::make_pair(picks, counter(*p, "tier_misclassified"));
  };
  const auto [picks, flipped] = run();
  int to_big = 0;
  for (const int pod : picks) to_big += pod >= 2;
  EXPECT_EQ(to_big, flipped);
  EXPECT_NEAR(flipped / 4000.0, 0.1, 0.015);
  EXPECT_EQ(run().first, picks);  // same seed and stream, same errors
}

TEST(TierClassifierTest, AllBigAndAllSmall) {
  const PolicyContext ctx = two_pools();
  const auto all = candidates(ctx, {0, 1, 2, 3});
  auto big = make({{"rule", std::string("all_big")}});
  auto small = make({{"rule", std::string("all_small")}});
  for (int i = 0; i < 20; ++i) {
    EXPECT_GE(big->pick(with_tier("small"), all, {}), 2);
    EXPECT_LE(small->pick(with_tier("big"), all, {}), 1);
  }
  EXPECT_EQ(counter(*big, "tier_classifier_accuracy"), 0.0);
}

TEST(TierClassifierTest, ClassifierLatencyIsTheRoutingDelay) {
  auto p = make({{"classifier_latency_ms", 2.0}, {"classifier_ms_per_1k_tokens", 0.5}});
  EXPECT_EQ(p->routing_delay(with_tier("small", 0)), ms_to_ns(2.0));
  EXPECT_EQ(p->routing_delay(with_tier("small", 4000)), ms_to_ns(4.0));
  EXPECT_EQ(make({})->routing_delay(with_tier("small", 4000)), 0);
}

TEST(TierClassifierTest, EmptyTierSpillsOverOrRefuses) {
  const PolicyContext ctx = two_pools();
  const auto only_big = candidates(ctx, {2, 3});
  auto spill = make({});
  EXPECT_GE(spill->pick(with_tier("small"), only_big, {}), 2);
  EXPECT_EQ(counter(*spill, "tier_spilled"), 1);
  auto refuse = make({{"on_empty_tier", std::string("refuse")}});
  EXPECT_EQ(refuse->pick(with_tier("small"), only_big, {}), -1);
  EXPECT_EQ(counter(*refuse, "tier_refused"), 1);
}

TEST(TierClassifierTest, CallbacksReachTheInnerInstanceOfThePodsPool) {
  // least_outstanding reads the gateway's counts, so use sticky_session: it binds a session on
  // its first pick, and a rebinding shows which instance heard what.
  const PolicyContext ctx = two_pools();
  auto p = make({{"inner_policy", std::string("sticky_session")}});
  Request r = with_tier("big");
  r.session = "s1";
  const auto all = candidates(ctx, {0, 1, 2, 3});
  const int first = p->pick(r, all, {});
  ASSERT_GE(first, 2);
  p->on_dispatched(r, first);
  p->on_first_token(r, first);
  p->on_finished(r, first);
  EXPECT_EQ(p->pick(r, all, {}), first);  // the big tier's instance kept the binding
  EXPECT_EQ(counter(*p, "big.sticky_occupied_hit"), 1);
  EXPECT_EQ(counter(*p, "big.sticky_vacant"), 1);
  EXPECT_EQ(counter(*p, "small.sticky_vacant"), 0);
}

TEST(TierClassifierTest, InnerParamsReachTheInnerPolicy) {
  const PolicyContext ctx = two_pools();
  auto p = make({{"inner_policy", std::string("least_outstanding")},
                 {"inner_params", std::string("{tie_break: lowest_index}")}});
  auto loads = candidates(ctx, {0, 1, 2, 3});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p->pick(with_tier("small"), loads, {}), 0);
  loads[0].inflight_requests = 3;
  EXPECT_EQ(p->pick(with_tier("small"), loads, {}), 1);
}

TEST(TierClassifierTest, BadPoolsAndInnerParamsNameTheValidOnes) {
  auto error_of = [](const std::map<std::string, ParamValue>& set) -> std::string {
    try {
      make(set);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of({{"small_pool", std::string("tiny")}});
  EXPECT_NE(e.find("small_pool 'tiny' is not a pool of the fleet; valid pools: small, big"),
            std::string::npos)
      << e;
  e = error_of({{"inner_policy", std::string("nope")}});
  EXPECT_NE(e.find("valid policies:"), std::string::npos) << e;
  e = error_of({{"inner_params", std::string("{tie_brake: random}")}});
  EXPECT_NE(e.find("tier_classifier inner_params (least_outstanding): tie_brake: unknown "
                   "parameter; valid parameters: tie_break"),
            std::string::npos)
      << e;
  e = error_of({{"inner_params", std::string("{tie_break: sometimes}")}});
  EXPECT_NE(e.find("valid values: random, lowest_index"), std::string::npos) << e;
}

TEST(TierClassifierTest, OnePoolFleetMeansOneTierForBoth) {
  // Without fleet.pools the fleet is one pool, "default": both tiers name it, one inner
  // instance serves every request, and the classifier still counts and still takes its time.
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1"};
  ctx.stream_name = "arm/tc/policy";
  auto p = make({{"inner_policy", std::string("round_robin")}}, ctx);
  const auto all = candidates(ctx, {0, 1});
  std::set<int> seen;
  for (int i = 0; i < 4; ++i) seen.insert(p->pick(with_tier(i % 2 ? "small" : "big"), all, {}));
  EXPECT_EQ(seen, (std::set<int>{0, 1}));
  EXPECT_EQ(counter(*p, "tier_small_routed") + counter(*p, "tier_big_routed"), 4);
}

TEST(MergeCounters, CountsAddAndRatiosAreWeighted) {
  const auto merged = merge_counters({{{"hits", 3}, {"rate", 0.5, true, 10}},
                                      {{"rate", 1.0, true, 30}, {"hits", 4}, {"extra", 1}}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].name, "hits");
  EXPECT_EQ(merged[0].value, 7);
  EXPECT_EQ(merged[1].name, "rate");
  EXPECT_DOUBLE_EQ(merged[1].value, (0.5 * 10 + 1.0 * 30) / 40);
  EXPECT_EQ(merged[1].denominator, 40);
  EXPECT_EQ(merged[2].name, "extra");
}

}  // namespace
}  // namespace fleetsim
