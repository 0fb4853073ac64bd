#include "policies/chwbl/chwbl.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "models/block_hash.h"

namespace fleetsim {
namespace {

std::vector<PodState> three_pods(std::int32_t l0 = 0, std::int32_t l1 = 0, std::int32_t l2 = 0) {
  std::vector<PodState> out(3);
  const std::int32_t loads[3] = {l0, l1, l2};
  for (int i = 0; i < 3; ++i) {
    out[static_cast<size_t>(i)].index = i;
    out[static_cast<size_t>(i)].name = "pod-" + std::to_string(i);
    out[static_cast<size_t>(i)].inflight_requests = loads[i];
  }
  return out;
}

PolicyContext ctx3() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  return ctx;
}

Params params_for(const std::string& name) {
  return PolicyRegistry::instance().get(name, "policy").spec.defaults();
}

Request request_with_prefix(std::uint64_t system_prompt_id) {
  Request r;
  r.model = "Qwen/Qwen3-32B-FP8";
  r.prompt = {Segment{system_prompt_id, 2000}, Segment{system_prompt_id * 7 + 1, 50}};
  r.prompt_tokens = 2050;
  r.output_tokens = 16;
  compute_block_hashes(r, 16);
  return r;
}

TEST(ChwblTest, BoundFormula) {
  // n = 3, c = 1.25, served_total = 4: ceil(5 x 1.25 / 3) = ceil(2.083) = 3 for every pod.
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kCeil, 4, 125, 3, rank), 3);
  }
  // Idle fleet: ceil(1 x 1.25 / 3) = 1, so an idle pod is eligible.
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kCeil, 0, 125, 3, 0), 1);
  // 1.25 x 4 / 2 = 2.5 exactly -> 3 (integer arithmetic, no rounding error).
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kCeil, 3, 125, 2, 0), 3);
  // HAProxy's split: ceil(5 x 1.25) = 7 slots over 3 pods -> 2, 2, 3 (floor((k+1)7/3) -
  // floor(k7/3)).
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kHaproxy, 4, 125, 3, 0), 2);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kHaproxy, 4, 125, 3, 1), 2);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kHaproxy, 4, 125, 3, 2), 3);
  // Never 0: ceil(1 x 1.25) = 2 slots over 3 pods -> 0, 1, 1 -> the first pod still gets 1.
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kHaproxy, 0, 125, 3, 0), 1);
  // Older LoxiLB builds: the integer mean times 1.75, rounded up. 15 in flight on 3 pods: 5 x 1.75
  // = 8.75 -> 9 (kCeil: ceil(16 x 1.75 / 3) = 10); 5 in flight: 1 x 1.75 -> 2; under n in flight:
  // n.
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kIntegerMean, 15, 175, 3, 0), 9);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kCeil, 15, 175, 3, 0), 10);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kIntegerMean, 5, 175, 3, 2), 2);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kIntegerMean, 2, 175, 3, 0), 3);
  EXPECT_EQ(ConsistentHashPolicy::bound(BoundRule::kIntegerMean, 3, 175, 3, 0), 2);
}

TEST(ChwblTest, SameKeySamePodWhenUnloaded) {
  auto a = make_policy("chwbl", params_for("chwbl"), ctx3());
  auto b = make_policy("chwbl", params_for("chwbl"), ctx3());
  const auto pods = three_pods();
  for (std::uint64_t k = 1; k <= 50; ++k) {
    const Request r = request_with_prefix(k);
    const int first = a->pick(r, pods, {});
    EXPECT_EQ(a->pick(r, pods, {}), first);
    EXPECT_EQ(b->pick(r, pods, {}), first);  // a fresh instance builds the same ring
  }
}

TEST(ChwblTest, KeysSpreadRoughlyEvenly) {
  auto p = make_policy("chwbl", params_for("chwbl"), ctx3());
  const auto pods = three_pods();
  std::map<int, int> count;
  const int keys = 3000;
  for (int k = 0; k < keys; ++k) ++count[p->pick(request_with_prefix(1000 + k), pods, {})];
  ASSERT_EQ(count.size(), 3u);
  for (const auto& [pod, c] : count) {
    EXPECT_GT(c, keys / 5) << "pod " << pod;  // each pod gets more than 20% of the keys
    EXPECT_LT(c, keys / 2) << "pod " << pod;  // and less than 50%
  }
}

TEST(ChwblTest, SkipsAPodAtItsBound) {
  ConsistentHashPolicy p(params_for("chwbl"), ctx3(), /*bounded=*/true);
  const Request r = request_with_prefix(42);
  const auto order = p.walk(p.key_hash(r), three_pods());
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(p.pick(r, three_pods(), {}), order[0]);
  // The key's pod serves 3, another 1: total 4, bound ceil(5 x 1.25 / 3) = 3 -> skipped.
  std::int32_t loads[3] = {0, 0, 0};
  loads[order[0]] = 3;
  loads[order[2]] = 1;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[1]);
  // Serving 2 (total 3, bound ceil(4 x 1.25 / 3) = 2) -> still skipped; serving 1 -> kept.
  loads[order[0]] = 2;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[1]);
  loads[order[0]] = 1;
  loads[order[2]] = 2;  // total 3, bound 2: 1 < 2
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[0]);
}

TEST(ChwblTest, WalksToTheNextEligiblePod) {
  ConsistentHashPolicy p(params_for("chwbl"), ctx3(), /*bounded=*/true);
  const Request r = request_with_prefix(7);
  const auto order = p.walk(p.key_hash(r), three_pods());
  ASSERT_EQ(order.size(), 3u);
  // The first two pods on the walk serve 3 each: total 6, bound ceil(7 x 1.25 / 3) = 3.
  std::int32_t loads[3] = {0, 0, 0};
  loads[order[0]] = 3;
  loads[order[1]] = 3;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[2]);
}

TEST(ChwblTest, SpillsToTheLeastLoadedPodWhenAsked) {
  Params params = params_for("chwbl");
  params.set("spill", std::string("least_loaded"));
  params.set("balance_factor", 1.75);
  ConsistentHashPolicy p(params, ctx3(), /*bounded=*/true);
  const Request r = request_with_prefix(11);
  const auto order = p.walk(p.key_hash(r), three_pods());
  ASSERT_EQ(order.size(), 3u);
  // Key's pod serves 5 of 8: bound ceil(9 x 1.75 / 3) = 6, 5 < 6 -> kept.
  std::int32_t loads[3] = {0, 0, 0};
  loads[order[0]] = 5;
  loads[order[1]] = 1;
  loads[order[2]] = 2;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[0]);
  // Serving 6 of 9: bound ceil(10 x 1.75 / 3) = 6 -> over. The ring's next pod would be
  // order[1]; least_loaded takes the pod serving fewer, whichever it is.
  loads[order[0]] = 6;
  loads[order[1]] = 2;
  loads[order[2]] = 1;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), order[2]);
  // A tie goes to the lower pod index.
  loads[order[1]] = 1;
  EXPECT_EQ(p.pick(r, three_pods(loads[0], loads[1], loads[2]), {}), std::min(order[1], order[2]));
}

TEST(ChwblTest, UnitsNeverReleasedCountEveryDispatch) {
  Params params = params_for("chwbl");
  params.set("spill", std::string("least_loaded"));
  params.set("load_release", std::string("never"));
  ConsistentHashPolicy p(params, ctx3(), /*bounded=*/true);
  const Request r = request_with_prefix(11);
  const auto order = p.walk(p.key_hash(r), three_pods());
  ASSERT_EQ(order.size(), 3u);
  // Nothing is in flight (every PodState says 0), but each dispatch leaves a unit behind. The
  // first request finds the key's pod at 0 of 0 (bound ceil(1 x 1.25 / 3) = 1) and goes there;
  // the next finds it at 1 of 1, bound ceil(2 x 1.25 / 3) = 1 -> over, and spills to the
  // least-loaded pod (both others hold 0: the lower index).
  const int first = p.pick(r, three_pods(), {});
  EXPECT_EQ(first, order[0]);
  p.on_dispatched(r, first);
  p.on_finished(r, first);
  EXPECT_EQ(p.pick(r, three_pods(), {}), std::min(order[1], order[2]));
  // With the default release at the response's end, the same history leaves the pod idle.
  ConsistentHashPolicy q(params_for("chwbl"), ctx3(), /*bounded=*/true);
  q.on_dispatched(r, order[0]);
  q.on_finished(r, order[0]);
  EXPECT_EQ(q.pick(r, three_pods(), {}), order[0]);
}

TEST(ChwblTest, RingBuiltAtOnceEqualsRingBuiltPodByPod) {
  HashRing bulk(50);
  bulk.add_pods({"pod-0", "pod-1", "pod-2", "pod-3"});
  HashRing one(50);
  for (int i : {2, 0, 3, 1}) one.add_pod(i, "pod-" + std::to_string(i));
  ASSERT_EQ(bulk.nodes().size(), 200u);
  ASSERT_EQ(one.nodes().size(), 200u);
  for (size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(bulk.nodes()[i].position, one.nodes()[i].position);
    EXPECT_EQ(bulk.nodes()[i].pod, one.nodes()[i].pod);
  }
  EXPECT_TRUE(bulk.has_pod(3));
  EXPECT_FALSE(bulk.has_pod(4));
  bulk.add_pod(1, "pod-1");  // already there: nothing changes
  EXPECT_EQ(bulk.nodes().size(), 200u);
}

TEST(ChwblTest, DownPodLeavesTheRing) {
  ConsistentHashPolicy p(params_for("chwbl"), ctx3(), /*bounded=*/true);
  const Request r = request_with_prefix(9);
  const auto order = p.walk(p.key_hash(r), three_pods());
  std::vector<PodState> up;
  for (const auto& pod : three_pods()) {
    if (pod.index != order[0]) up.push_back(pod);
  }
  const int chosen = p.pick(r, up, {});
  EXPECT_NE(chosen, order[0]);
  // Other keys keep their pod when an unrelated pod goes down (the point of consistent hashing).
  int moved = 0;
  for (std::uint64_t k = 100; k < 400; ++k) {
    const Request rk = request_with_prefix(k);
    const int before = p.pick(rk, three_pods(), {});
    if (before != order[0] && p.pick(rk, up, {}) != before) ++moved;
  }
  EXPECT_EQ(moved, 0);
}

TEST(ChwblTest, OnlyTheLowestPodUpOfThreeOnTheRing) {
  // Pods 1 and 2 are on the ring but not candidates (down, or not yet scaled up): every key, with
  // or without a bound, lands on pod 0. Their nodes must be read as "not a candidate", not past
  // the end of a table sized by the candidates.
  for (const bool bounded : {true, false}) {
    ConsistentHashPolicy p(params_for(bounded ? "chwbl" : "consistent_hash"), ctx3(), bounded);
    const std::vector<PodState> all = three_pods();
    const std::vector<PodState> only0(all.begin(), all.begin() + 1);
    for (std::uint64_t k = 1; k < 200; ++k) {
      const Request r = request_with_prefix(k);
      EXPECT_EQ(p.pick(r, only0, {}), 0) << "key " << k;
      EXPECT_EQ(p.walk(p.key_hash(r), only0), std::vector<int>{0}) << "key " << k;
    }
  }
}

TEST(ChwblTest, SessionKeyAndRoundRobinFallback) {
  Params params = params_for("chwbl");
  params.set("key", std::string("session"));
  auto p = make_policy("chwbl", params, ctx3());
  Request a = request_with_prefix(1);
  a.session = "user-a";
  Request b = request_with_prefix(2);  // a different prompt, same session: same pod
  b.session = "user-a";
  EXPECT_EQ(p->pick(a, three_pods(), {}), p->pick(b, three_pods(), {}));
  Request none = request_with_prefix(3);  // no session id: round robin
  std::set<int> seen;
  for (int i = 0; i < 3; ++i) seen.insert(p->pick(none, three_pods(), {}));
  EXPECT_EQ(seen.size(), 3u);
}

TEST(ConsistentHashTest, NoBoundKeepsTheKeysPod) {
  auto p = make_policy("consistent_hash", params_for("consistent_hash"), ctx3());
  const Request r = request_with_prefix(42);
  const int home = p->pick(r, three_pods(), {});
  std::int32_t loads[3] = {0, 0, 0};
  loads[home] = 50;
  EXPECT_EQ(p->pick(r, three_pods(loads[0], loads[1], loads[2]), {}), home);
}

TEST(ChwblTest, StartsAtTheClosestNode) {
  ConsistentHashPolicy p(params_for("chwbl"), ctx3(), /*bounded=*/true);
  const auto& nodes = p.ring().nodes();
  ASSERT_EQ(nodes.size(), 300u);
  // A key just before a node starts at that node; a key just after it starts there too.
  for (size_t i = 1; i + 1 < nodes.size(); i += 37) {
    const std::uint64_t at = nodes[i].position;
    if (at - nodes[i - 1].position < 4 || nodes[i + 1].position - at < 4) continue;
    EXPECT_EQ(p.walk(at - 1, three_pods()).front(), nodes[i].pod);
    EXPECT_EQ(p.walk(at + 1, three_pods()).front(), nodes[i].pod);
  }
}

}  // namespace
}  // namespace fleetsim
