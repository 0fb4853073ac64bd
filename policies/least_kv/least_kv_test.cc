#include "policies/least_kv/least_kv.h"

#include <gtest/gtest.h>

#include <set>

namespace fleetsim {
namespace {

std::vector<PodState> pods(std::initializer_list<double> usage) {
  std::vector<PodState> out;
  int i = 0;
  for (const double u : usage) {
    PodState p;
    p.index = i;
    p.name = "pod-" + std::to_string(i);
    p.kv_usage = u;
    p.inflight_requests = 10 - i;  // opposite order: must not matter
    out.push_back(p);
    ++i;
  }
  return out;
}

std::unique_ptr<RoutingPolicy> make(const std::string& tie) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  Params params = PolicyRegistry::instance().get("least_kv", "policy").spec.defaults();
  params.set("tie_break", tie);
  return make_policy("least_kv", params, ctx);
}

TEST(LeastKvPolicyTest, LowestUsage) {
  auto p = make("random");
  EXPECT_EQ(p->pick(Request{}, pods({0.5, 0.2, 0.9}), {}), 1);
  EXPECT_EQ(p->pick(Request{}, pods({0.1, 0.2, 0.9}), {}), 0);
}

TEST(LeastKvPolicyTest, Ties) {
  EXPECT_EQ(make("lowest_index")->pick(Request{}, pods({0.0, 0.0, 0.3}), {}), 0);
  auto p = make("random");
  std::set<int> seen;
  for (int i = 0; i < 100; ++i) seen.insert(p->pick(Request{}, pods({0.3, 0.0, 0.0}), {}));
  EXPECT_EQ(seen, (std::set<int>{1, 2}));
}

}  // namespace
}  // namespace fleetsim
