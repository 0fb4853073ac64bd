#include "policies/sglang_cache_aware/sglang_cache_aware.h"

#include <gtest/gtest.h>

#include "models/block_hash.h"

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

PolicyContext ctx3() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.engine_block_size = 16;
  ctx.stream_name = "arm/sgl/policy";
  return ctx;
}

Params params() {
  return PolicyRegistry::instance().get("sglang_cache_aware", "policy").spec.defaults();
}

Request prompt(std::vector<Segment> segments) {
  Request r;
  r.model = "m";
  r.prompt = std::move(segments);
  r.prompt_tokens = total_tokens(r.prompt);
  r.output_tokens = 8;
  compute_block_hashes(r, 16);
  return r;
}

RouteContext at(double seconds) { return RouteContext{sec_to_ns(seconds)}; }

// Trees of 10 and 5 unrelated blocks on pods 0 and 1; pod 2 empty.
void seed_trees(SglangCacheAwarePolicy& p) {
  p.insert(0, p.prompt_blocks(prompt({Segment{900, 160}})));
  p.insert(1, p.prompt_blocks(prompt({Segment{901, 80}})));
}

TEST(SglangCacheAwarePolicyTest, NoMatchGoesToTheSmallestTree) {
  SglangCacheAwarePolicy p(params(), ctx3());
  seed_trees(p);
  // 10 blocks x 16 tokens x 4 characters.
  EXPECT_EQ(p.tree_chars(0), 640);
  EXPECT_EQ(p.tree_chars(1), 320);
  const Request a = prompt({Segment{1, 2000}, Segment{2, 50}});  // 2050 tokens: 128 blocks
  EXPECT_EQ(p.pick(a, pods({{0, 0}, {1, 0}, {2, 0}}), at(0)), 2);
  EXPECT_EQ(p.tree_chars(2), 128 * 64);
  EXPECT_EQ(p.stats().cache_misses, 1);
}

TEST(SglangCacheAwarePolicyTest, MatchAboveThresholdSticks) {
  SglangCacheAwarePolicy p(params(), ctx3());
  seed_trees(p);
  const Request a = prompt({Segment{1, 2000}, Segment{2, 50}});
  ASSERT_EQ(p.pick(a, pods({{0, 0}, {1, 0}, {2, 0}}), at(0)), 2);
  // The next turn: 2050 + 30 + 200 = 2280 tokens, 128 blocks matched on pod 2:
  // 128 x 16 / 2280 = 0.898 > 0.3, so pod 2 although its tree is now the largest.
  const Request b = prompt({Segment{1, 2000}, Segment{2, 50}, Segment{3, 30}, Segment{4, 200}});
  EXPECT_EQ(p.matched_blocks(2, p.prompt_blocks(b)), 128);
  EXPECT_EQ(p.pick(b, pods({{0, 1}, {1, 1}, {2, 2}}), at(1)), 2);
  EXPECT_EQ(p.stats().cache_hits, 1);
}

TEST(SglangCacheAwarePolicyTest, MatchAtOrBelowThresholdGoesToTheSmallestTree) {
  SglangCacheAwarePolicy p(params(), ctx3());
  seed_trees(p);
  ASSERT_EQ(p.pick(prompt({Segment{1, 2000}}), pods({{0, 0}, {1, 0}, {2, 0}}), at(0)), 2);
  // Shares the first 256 tokens (16 blocks) of 1256: 0.204 <= 0.3 -> smallest tree, pod 1.
  const Request c = prompt({Segment{1, 256}, Segment{99, 1000}});
  EXPECT_EQ(p.matched_blocks(2, p.prompt_blocks(c)), 16);
  EXPECT_EQ(p.pick(c, pods({{0, 0}, {1, 0}, {2, 0}}), at(1)), 1);
}

TEST(SglangCacheAwarePolicyTest, ImbalanceRule) {
  const Request a = prompt({Segment{1, 2000}});
  {
    SglangCacheAwarePolicy p(params(), ctx3());
    seed_trees(p);
    p.insert(0, p.prompt_blocks(a));  // pod 0 holds the whole prompt
    // max - min = 90 > 64 and 100 > 1.5 x 10: imbalanced -> least loaded, pod 1.
    EXPECT_EQ(p.pick(a, pods({{0, 100}, {1, 10}, {2, 40}}), at(0)), 1);
    EXPECT_EQ(p.stats().load_balancing, 1);
    EXPECT_EQ(p.matched_blocks(1, p.prompt_blocks(a)), 125);  // inserted there too
  }
  {
    SglangCacheAwarePolicy p(params(), ctx3());
    p.insert(0, p.prompt_blocks(a));
    // max - min = 64, not > 64: balanced -> the match, pod 0.
    EXPECT_EQ(p.pick(a, pods({{0, 100}, {1, 36}, {2, 40}}), at(0)), 0);
    // 140 - 70 = 70 > 64 and 140 > 1.5 x 70 = 105: imbalanced -> pod 1.
    EXPECT_EQ(p.pick(a, pods({{0, 140}, {1, 70}, {2, 75}}), at(0)), 1);
    // 200 - 135 = 65 > 64 but 200 <= 1.5 x 135 = 202.5: balanced -> the match, pod 0.
    EXPECT_EQ(p.pick(a, pods({{0, 200}, {1, 135}, {2, 140}}), at(0)), 0);
    // Ties for the least load: the first in pod order (min_by_key).
    EXPECT_EQ(p.pick(a, pods({{2, 5}, {1, 5}, {0, 80}}), at(0)), 1);
  }
}

TEST(SglangCacheAwarePolicyTest, PeriodicEvictionKeepsTheLeadingBlocks) {
  Params small = params();
  small.set("max_tree_size", std::int64_t{640});  // 10 blocks of 64 characters
  SglangCacheAwarePolicy p(small, ctx3());
  seed_trees(p);
  const Request a = prompt({Segment{1, 2000}});
  ASSERT_EQ(p.pick(a, pods({{0, 0}, {1, 0}, {2, 0}}), at(0)), 2);
  EXPECT_EQ(p.tree_chars(2), 125 * 64);
  // Nothing happens before the first interval (120 s) ends.
  p.pick(prompt({Segment{5, 64}}), pods({{0, 0}, {1, 0}, {2, 0}}), at(119));
  EXPECT_EQ(p.stats().evictions, 0);
  p.pick(prompt({Segment{6, 64}}), pods({{0, 0}, {1, 0}, {2, 0}}), at(121));
  EXPECT_EQ(p.stats().evictions, 1);
  // Pod 2 kept its 10 most recent blocks: the prompt's first 10 (its tail went first).
  EXPECT_EQ(p.matched_blocks(2, p.prompt_blocks(a)), 10);
}

TEST(SglangCacheAwarePolicyTest, ChosenWorkerNotACandidateFallsBackToTheFirst) {
  SglangCacheAwarePolicy p(params(), ctx3());
  seed_trees(p);
  // The smallest tree is pod 2's, but pod 2 is down: the first candidate, nothing inserted.
  EXPECT_EQ(p.pick(prompt({Segment{1, 2000}}), pods({{1, 0}, {0, 0}}), at(0)), 0);
  EXPECT_EQ(p.stats().first_healthy, 1);
  EXPECT_EQ(p.tree_chars(0), 640);
}

TEST(SglangCacheAwarePolicyTest, DefaultsAreTheRoutersLaunchDefaults) {
  const Params d = params();
  EXPECT_DOUBLE_EQ(d.get_double("cache_threshold"), 0.3);
  EXPECT_EQ(d.get_int("balance_abs_threshold"), 64);
  EXPECT_DOUBLE_EQ(d.get_double("balance_rel_threshold"), 1.5);
  EXPECT_DOUBLE_EQ(d.get_double("eviction_interval_s"), 120.0);
  EXPECT_EQ(d.get_int("max_tree_size"), std::int64_t{1} << 26);
}

}  // namespace
}  // namespace fleetsim
