#include "policies/least_outstanding/least_outstanding.h"

#include <gtest/gtest.h>

#include <set>

namespace fleetsim {
namespace {

std::vector<PodState> pods(std::initializer_list<std::pair<int, std::int32_t>> index_load) {
  std::vector<PodState> out;
  for (const auto& [i, load] : index_load) {
    PodState p;
    p.index = i;
    p.name = "pod-" + std::to_string(i);
    p.inflight_requests = load;
    out.push_back(p);
  }
  return out;
}

std::unique_ptr<RoutingPolicy> make(const std::string& tie) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.stream_name = "arm/lo/policy";
  Params params = PolicyRegistry::instance().get("least_outstanding", "policy").spec.defaults();
  params.set("tie_break", tie);
  return make_policy("least_outstanding", params, ctx);
}

TEST(LeastOutstandingPolicyTest, FewestInFlight) {
  auto p = make("random");
  EXPECT_EQ(p->pick(Request{}, pods({{0, 3}, {1, 1}, {2, 2}}), {}), 1);
  EXPECT_EQ(p->pick(Request{}, pods({{0, 0}, {1, 1}, {2, 2}}), {}), 0);
  EXPECT_EQ(p->pick(Request{}, pods({{2, 0}, {0, 5}}), {}), 2);  // any candidate order
}

TEST(LeastOutstandingPolicyTest, TieBreaks) {
  auto lowest = make("lowest_index");
  EXPECT_EQ(lowest->pick(Request{}, pods({{2, 1}, {1, 1}, {0, 4}}), {}), 1);
  auto random = make("random");
  std::set<int> seen;
  for (int i = 0; i < 100; ++i)
    seen.insert(random->pick(Request{}, pods({{0, 4}, {1, 1}, {2, 1}}), {}));
  EXPECT_EQ(seen, (std::set<int>{1, 2}));  // AIBrix least-request draws among the minimum
}

TEST(LeastOutstandingPolicyTest, DefaultIsRandom) {
  const Params d = PolicyRegistry::instance().get("least_outstanding", "policy").spec.defaults();
  EXPECT_EQ(d.get_string("tie_break"), "random");
}

}  // namespace
}  // namespace fleetsim
