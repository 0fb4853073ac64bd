#include "policies/round_robin/round_robin.h"

#include <gtest/gtest.h>

#include "policies/common/test_pods.h"

#include <vector>

namespace fleetsim {
namespace {

using testing::pods;

std::unique_ptr<RoutingPolicy> make_rr() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  const auto& entry = PolicyRegistry::instance().get("round_robin", "policy");
  return make_policy("round_robin", entry.spec.defaults(), ctx);
}

TEST(RoundRobinTest, CyclesInPodIndexOrder) {
  auto rr = make_rr();
  const Request req;
  const auto all = pods({0, 1, 2});
  std::vector<int> got;
  for (int i = 0; i < 7; ++i) got.push_back(rr->pick(req, all, {}));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(RoundRobinTest, KeepsRotatingWhenAPodIsMissing) {
  auto rr = make_rr();
  const Request req;
  const auto all = pods({0, 1, 2});
  const auto without_1 = pods({0, 2});
  EXPECT_EQ(rr->pick(req, all, {}), 0);
  // Pod 1 is down: the counter sits at 1, so the next candidate at or after it is pod 2.
  EXPECT_EQ(rr->pick(req, without_1, {}), 2);
  EXPECT_EQ(rr->pick(req, without_1, {}), 0);
  EXPECT_EQ(rr->pick(req, without_1, {}), 2);
  // Pod 1 is back: the rotation continues from pod 0's successor.
  EXPECT_EQ(rr->pick(req, all, {}), 0);
  EXPECT_EQ(rr->pick(req, all, {}), 1);
  EXPECT_EQ(rr->pick(req, all, {}), 2);
}

TEST(RoundRobinTest, CandidateOrderDoesNotMatter) {
  auto rr = make_rr();
  const Request req;
  const auto shuffled = pods({2, 0, 1});
  EXPECT_EQ(rr->pick(req, shuffled, {}), 0);
  EXPECT_EQ(rr->pick(req, shuffled, {}), 1);
  EXPECT_EQ(rr->pick(req, shuffled, {}), 2);
}

TEST(RoundRobinTest, IsRegistered) {
  EXPECT_TRUE(PolicyRegistry::instance().contains("round_robin"));
}

}  // namespace
}  // namespace fleetsim
