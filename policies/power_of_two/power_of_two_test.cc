#include "policies/power_of_two/power_of_two.h"

#include <gtest/gtest.h>

#include <map>

namespace fleetsim {
namespace {

std::vector<PodState> pods(std::initializer_list<std::int32_t> loads) {
  std::vector<PodState> out;
  int i = 0;
  for (const std::int32_t l : loads) {
    PodState p;
    p.index = i;
    p.name = "pod-" + std::to_string(i);
    p.inflight_requests = l;
    p.inflight_tokens = 1000 * (5 - l);  // opposite order to the requests
    p.kv_usage = 0.1 * l;
    out.push_back(p);
    ++i;
  }
  return out;
}

std::unique_ptr<RoutingPolicy> make(const std::string& metric) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.seed = 3;
  ctx.stream_name = "arm/p2/policy";
  Params params = PolicyRegistry::instance().get("power_of_two", "policy").spec.defaults();
  params.set("metric", metric);
  return make_policy("power_of_two", params, ctx);
}

TEST(PowerOfTwoPolicyTest, TwoPodsAlwaysTheLighter) {
  auto p = make("requests");
  for (int i = 0; i < 50; ++i) EXPECT_EQ(p->pick(Request{}, pods({5, 1}), {}), 1);
  EXPECT_EQ(p->pick(Request{}, pods({3}), {}), 0);
}

TEST(PowerOfTwoPolicyTest, ChoiceFrequencies) {
  // Loads 0, 2, 4: the three pairs are equally likely; pod 0 wins 2 of them, pod 1 one (against
  // pod 2), pod 2 none. So pod 0 ~ 2/3, pod 1 ~ 1/3, pod 2 never.
  auto p = make("requests");
  std::map<int, int> count;
  for (int i = 0; i < 3000; ++i) ++count[p->pick(Request{}, pods({0, 2, 4}), {})];
  EXPECT_EQ(count[2], 0);
  EXPECT_NEAR(count[0], 2000, 120);
  EXPECT_NEAR(count[1], 1000, 120);
}

TEST(PowerOfTwoPolicyTest, EqualLoadsTheFirstDrawnWins) {
  // All equal: the first draw wins, uniformly over the three pods.
  auto p = make("requests");
  std::map<int, int> count;
  for (int i = 0; i < 3000; ++i) ++count[p->pick(Request{}, pods({1, 1, 1}), {})];
  for (const auto& [pod, n] : count) EXPECT_NEAR(n, 1000, 120) << pod;
}

TEST(PowerOfTwoPolicyTest, Metrics) {
  // Tokens run opposite to requests: pod 1 carries more requests (3 > 1) but fewer tokens.
  auto by_tokens = make("tokens");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(by_tokens->pick(Request{}, pods({1, 3}), {}), 1);
  auto by_kv = make("kv");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(by_kv->pick(Request{}, pods({4, 2}), {}), 1);
}

}  // namespace
}  // namespace fleetsim
