#include "policies/hrw/hrw.h"

#include <gtest/gtest.h>

#include "policies/common/test_pods.h"

#include <map>

namespace fleetsim {
namespace {

using testing::pods;

std::unique_ptr<RoutingPolicy> make(const std::string& key) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.stream_name = "arm/hrw/policy";
  Params params = PolicyRegistry::instance().get("hrw", "policy").spec.defaults();
  params.set("key", key);
  return make_policy("hrw", params, ctx);
}

Request with_prefix(std::uint64_t system_prompt) {
  Request r;
  r.model = "Qwen/Qwen3-32B-FP8";
  r.prompt = {Segment{system_prompt, 2000}, Segment{system_prompt * 31 + 7, 40}};
  r.prompt_tokens = 2040;
  return r;
}

TEST(HrwPolicyTest, PicksTheHighestScore) {
  // The winner is the pod whose score(key, name) is largest: check it against the scores.
  for (std::uint64_t k = 1; k <= 30; ++k) {
    const Request r = with_prefix(k);
    const std::uint64_t key = request_key_hash(r, RequestKey::kPrefix);
    int best = 0;
    for (int i = 1; i < 3; ++i) {
      if (HrwPolicy::score(key, "pod-" + std::to_string(i)) >
          HrwPolicy::score(key, "pod-" + std::to_string(best))) {
        best = i;
      }
    }
    EXPECT_EQ(make("prefix")->pick(r, pods({0, 1, 2}), {}), best) << k;
    EXPECT_EQ(HrwPolicy::choose(key, pods({2, 0, 1})), best);  // candidate order is irrelevant
  }
}

TEST(HrwPolicyTest, RemovingAPodMovesOnlyItsKeys) {
  auto p = make("prefix");
  std::map<int, int> count;
  int moved_elsewhere = 0;
  int from_removed = 0;
  for (std::uint64_t k = 100; k < 3100; ++k) {
    const Request r = with_prefix(k);
    const int before = p->pick(r, pods({0, 1, 2}), {});
    ++count[before];
    const int after = p->pick(r, pods({0, 2}), {});
    if (before == 1) {
      ++from_removed;
      EXPECT_NE(after, 1);
    } else if (after != before) {
      ++moved_elsewhere;
    }
  }
  EXPECT_EQ(moved_elsewhere, 0);
  for (const auto& [pod, n] : count) {
    EXPECT_GT(n, 850) << pod;  // ~1000 keys per pod
    EXPECT_LT(n, 1150) << pod;
  }
  EXPECT_EQ(from_removed, count[1]);
}

TEST(HrwPolicyTest, SessionKey) {
  auto p = make("session");
  Request a = with_prefix(1);
  a.session = "conv-1";
  Request b = with_prefix(2);  // another prompt, same session: same pod
  b.session = "conv-1";
  EXPECT_EQ(p->pick(a, pods({0, 1, 2}), {}), p->pick(b, pods({0, 1, 2}), {}));
  // Without a session id: a random candidate (Envoy hashes a random number), always valid.
  const Request none = with_prefix(3);
  std::map<int, int> seen;
  for (int i = 0; i < 300; ++i) ++seen[p->pick(none, pods({0, 1, 2}), {})];
  EXPECT_EQ(seen.size(), 3u);
}

}  // namespace
}  // namespace fleetsim
