#include "policies/sticky_session/sticky_session.h"

#include <gtest/gtest.h>

#include "policies/common/test_pods.h"

#include "policies/hrw/hrw.h"

namespace fleetsim {
namespace {

using testing::pods;

PolicyContext ctx3() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.stream_name = "arm/sticky/policy";
  return ctx;
}

Params params(const std::string& assignment = "hrw", double ttl_s = 0) {
  Params p = PolicyRegistry::instance().get("sticky_session", "policy").spec.defaults();
  p.set("assignment", assignment);
  p.set("ttl_s", ttl_s);
  return p;
}

Request turn(const std::string& session, std::uint64_t content = 1) {
  Request r;
  r.model = "m";
  r.session = session;
  r.prompt = {Segment{content, 500}};
  r.prompt_tokens = 500;
  return r;
}

RouteContext at(double seconds) { return RouteContext{sec_to_ns(seconds)}; }

TEST(StickySessionPolicyTest, FirstPickIsHrwOnTheSessionThenSticks) {
  StickySessionPolicy p(params(), ctx3());
  const auto all = pods({0, 1, 2});
  const int home = HrwPolicy::choose(request_key_hash(turn("conv-1"), RequestKey::kSession), all);
  EXPECT_EQ(p.pick(turn("conv-1", 1), all, at(0)), home);
  EXPECT_EQ(p.pick(turn("conv-1", 2), all, at(1)), home);
  EXPECT_EQ(p.pick(turn("conv-1", 3), all, at(2)), home);
  // 1 vacant + 2 hits: the gateway's hit rate is 2 / 3.
  EXPECT_EQ(p.stats().new_bindings, 1);
  EXPECT_EQ(p.stats().hits, 2);
  EXPECT_DOUBLE_EQ(p.affinity_hit_rate(), 2.0 / 3.0);
}

TEST(StickySessionPolicyTest, RebindsWhenTheBoundPodIsGoneAndReturnsToIt) {
  StickySessionPolicy p(params("round_robin"), ctx3());
  // Round-robin assignment: conv-a -> 0.
  EXPECT_EQ(p.pick(turn("conv-a"), pods({0, 1, 2}), at(0)), 0);
  // Pod 0 is down: a miss; round robin continues at 1.
  EXPECT_EQ(p.pick(turn("conv-a"), pods({1, 2}), at(1)), 1);
  EXPECT_EQ(p.bound_pods("conv-a"), (std::vector<int>{0, 1}));
  // Pod 0 is back: the oldest bound pod that is a candidate serves again (a hit).
  EXPECT_EQ(p.pick(turn("conv-a"), pods({0, 1, 2}), at(2)), 0);
  // Pods 0 and 1 down: rebound to 2; the binding keeps the 2 most recent pods.
  EXPECT_EQ(p.pick(turn("conv-a"), pods({2}), at(3)), 2);
  EXPECT_EQ(p.bound_pods("conv-a"), (std::vector<int>{1, 2}));
  EXPECT_EQ(p.stats().new_bindings, 1);
  EXPECT_EQ(p.stats().rebinds, 2);
  EXPECT_EQ(p.stats().hits, 1);
  EXPECT_DOUBLE_EQ(p.affinity_hit_rate(), 0.25);
}

TEST(StickySessionPolicyTest, BindingExpiresAfterTtlWithoutTraffic) {
  StickySessionPolicy p(params("round_robin", 10.0), ctx3());
  const auto all = pods({0, 1, 2});
  EXPECT_EQ(p.pick(turn("s"), all, at(0)), 0);
  EXPECT_EQ(p.pick(turn("s"), all, at(9.5)), 0);   // idle 9.5 s < 10: hit, refreshed
  EXPECT_EQ(p.pick(turn("s"), all, at(19)), 0);    // idle 9.5 s again: hit
  EXPECT_EQ(p.pick(turn("s"), all, at(29.5)), 1);  // idle 10.5 s: expired, a new binding
  EXPECT_EQ(p.stats().expired, 1);
  EXPECT_EQ(p.stats().new_bindings, 2);
  EXPECT_EQ(p.stats().hits, 2);
}

TEST(StickySessionPolicyTest, RequestsWithoutSessionGoToTheAssignment) {
  StickySessionPolicy p(params("round_robin"), ctx3());
  const auto all = pods({0, 1, 2});
  EXPECT_EQ(p.pick(turn(""), all, at(0)), 0);
  EXPECT_EQ(p.pick(turn(""), all, at(0)), 1);
  EXPECT_EQ(p.stats().no_session, 2);
  EXPECT_EQ(p.bindings(), 0u);
  EXPECT_DOUBLE_EQ(p.affinity_hit_rate(), 0.0);
  const auto c = p.counters();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().name, "sticky_occupied_hit");
}

TEST(StickySessionPolicyTest, SessionsSpreadByTheAssignment) {
  StickySessionPolicy p(params("round_robin"), ctx3());
  const auto all = pods({0, 1, 2});
  EXPECT_EQ(p.pick(turn("a"), all, at(0)), 0);
  EXPECT_EQ(p.pick(turn("b"), all, at(0)), 1);
  EXPECT_EQ(p.pick(turn("c"), all, at(0)), 2);
  EXPECT_EQ(p.pick(turn("b"), all, at(1)), 1);
  EXPECT_EQ(p.pick(turn("a"), all, at(1)), 0);
}

}  // namespace
}  // namespace fleetsim
