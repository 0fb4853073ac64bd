#include "policies/random/random.h"

#include <gtest/gtest.h>

#include "policies/common/test_pods.h"

#include <map>

namespace fleetsim {
namespace {

using testing::pods;

std::unique_ptr<RoutingPolicy> make(const std::string& stream, std::uint64_t seed = 7) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.seed = seed;
  ctx.stream_name = stream;
  return make_policy("random", PolicyRegistry::instance().get("random", "policy").spec.defaults(),
                     ctx);
}

TEST(RandomPolicyTest, DrawsFromItsOwnStream) {
  auto p = make("arm/r/policy");
  // The picks are the stream's uniform draws over the candidates' positions.
  Rng rng = make_rng(7, "arm/r/policy");
  const auto all = pods({0, 1, 2});
  for (int i = 0; i < 50; ++i) {
    const int expected = all[std::uniform_int_distribution<size_t>(0, 2)(rng)].index;
    EXPECT_EQ(p->pick(Request{}, all, {}), expected);
  }
}

TEST(RandomPolicyTest, DeterministicPerStreamAndRoughlyUniform) {
  auto a = make("arm/a/policy");
  auto b = make("arm/a/policy");
  auto c = make("arm/c/policy");
  const auto all = pods({0, 1, 2});
  std::map<int, int> count;
  int differ = 0;
  for (int i = 0; i < 3000; ++i) {
    const int x = a->pick(Request{}, all, {});
    EXPECT_EQ(b->pick(Request{}, all, {}), x);
    differ += c->pick(Request{}, all, {}) != x ? 1 : 0;
    ++count[x];
  }
  EXPECT_GT(differ, 1000);  // another arm's stream is independent
  for (const auto& [pod, n] : count) {
    EXPECT_GT(n, 850) << pod;  // 1000 expected each; 850..1150 is > 5 sigma
    EXPECT_LT(n, 1150) << pod;
  }
}

TEST(RandomPolicyTest, OnlyCandidates) {
  auto p = make("s");
  const auto some = pods({2, 5});
  for (int i = 0; i < 100; ++i) {
    const int x = p->pick(Request{}, some, {});
    EXPECT_TRUE(x == 2 || x == 5);
  }
  EXPECT_EQ(p->pick(Request{}, pods({4}), {}), 4);
  EXPECT_EQ(p->pick(Request{}, {}, {}), -1);
}

}  // namespace
}  // namespace fleetsim
