#include "policies/aibrix_prefix/aibrix_prefix.h"

#include <gtest/gtest.h>

#include "models/block_hash.h"

namespace fleetsim {
namespace {

std::vector<PodState> loads(std::int32_t l0, std::int32_t l1, std::int32_t l2) {
  std::vector<PodState> out(3);
  const std::int32_t l[3] = {l0, l1, l2};
  for (int i = 0; i < 3; ++i) {
    out[static_cast<size_t>(i)].index = i;
    out[static_cast<size_t>(i)].name = "pod-" + std::to_string(i);
    out[static_cast<size_t>(i)].inflight_requests = l[i];
  }
  return out;
}

PolicyContext ctx3() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.engine_block_size = 16;
  ctx.stream_name = "arm/aibrix/policy";
  return ctx;
}

// 64-character blocks (16 tokens) keep the hand counts small; the default is 4 characters.
Params params(std::int64_t block_number = 200000) {
  Params p = PolicyRegistry::instance().get("aibrix_prefix", "policy").spec.defaults();
  p.set("block_size_chars", std::int64_t{64});
  p.set("block_number", block_number);
  return p;
}

Request prompt(std::vector<Segment> segments) {
  Request r;
  r.model = "m";
  r.prompt = std::move(segments);
  r.prompt_tokens = total_tokens(r.prompt);
  compute_block_hashes(r, 16);
  return r;
}

const Request kA = prompt({Segment{1, 2000}});  // 125 blocks

RouteContext at(double s) { return RouteContext{sec_to_ns(s)}; }

TEST(AibrixPrefixPolicyTest, NoMatchIsLeastRequest) {
  AibrixPrefixPolicy p(params(), ctx3());
  EXPECT_EQ(p.block_tokens(), 16);
  EXPECT_EQ(p.pick(kA, loads(2, 0, 1), at(0)), 1);
  EXPECT_EQ(p.stats().least_request_fallback, 1);
  EXPECT_EQ(p.index_size(), 125);
}

TEST(AibrixPrefixPolicyTest, MatchWithinMeanPlusStd) {
  AibrixPrefixPolicy p(params(), ctx3());
  ASSERT_EQ(p.pick(kA, loads(2, 0, 1), at(0)), 1);
  // Loads 2, 3, 1: mean 2, sample std 1 -> bound 3; pod 1 (load 3) holds 100%: taken.
  EXPECT_EQ(p.pick(kA, loads(2, 3, 1), at(1)), 1);
  EXPECT_EQ(p.stats().prefix_match, 1);
  // Loads 2, 4, 1: mean 2.333, std 1.528 -> bound 3.861 < 4: skipped, least-request -> pod 2.
  EXPECT_EQ(p.pick(kA, loads(2, 4, 1), at(2)), 2);
  EXPECT_EQ(p.stats().prefix_match_skipped, 1);
}

TEST(AibrixPrefixPolicyTest, IntegerMatchPercent) {
  AibrixPrefixPolicy p(params(), ctx3());
  p.add(p.prompt_blocks(kA), 1, 0);
  // Shares 62 of its 125 blocks with kA: 62 x 100 / 125 = 49 (integer division).
  const Request c = prompt({Segment{1, 1000}, Segment{7, 1000}});
  const auto m = p.match(p.prompt_blocks(c), {0, 1, 2}, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at(1), 49);
}

TEST(AibrixPrefixPolicyTest, EqualMatchesPreferTheLighterPod) {
  AibrixPrefixPolicy p(params(), ctx3());
  p.add(p.prompt_blocks(kA), 0, 0);
  p.add(p.prompt_blocks(kA), 2, 0);
  // Both hold 100%; loads 5, 3, 2: pod 2 sorts first (bound 3.33 + 1.53 = 4.86).
  EXPECT_EQ(p.pick(kA, loads(5, 3, 2), at(0)), 2);
}

TEST(AibrixPrefixPolicyTest, LoadGateRestrictsMatchingToTheLeastLoaded) {
  AibrixPrefixPolicy p(params(), ctx3());
  p.add(p.prompt_blocks(kA), 2, 0);
  // Loads 5, 0, 4: 5 <= 2 x (3 + 1): no gate; pod 2 matches, 4 <= 3 + 2.65 -> pod 2.
  EXPECT_EQ(p.pick(kA, loads(5, 0, 4), at(0)), 2);
  // Loads 20, 0, 4: 20 > 2 x (8 + 1) and 20 - 0 >= 8: only pod 1 may match; it holds
  // nothing -> least-request -> pod 1.
  EXPECT_EQ(p.pick(kA, loads(20, 0, 4), at(0)), 1);
  EXPECT_EQ(p.stats().load_gate, 1);
  EXPECT_EQ(p.stats().least_request_fallback, 1);
}

TEST(AibrixPrefixPolicyTest, ForgetsAfterTwentyMinutes) {
  AibrixPrefixPolicy p(params(), ctx3());
  ASSERT_EQ(p.pick(kA, loads(2, 0, 1), at(0)), 1);
  EXPECT_EQ(p.pick(kA, loads(2, 1, 1), at(1199)), 1);         // refreshed at 1199 s
  EXPECT_EQ(p.pick(kA, loads(0, 1, 1), at(1199 + 1201)), 0);  // 20 min 1 s later: forgotten
}

TEST(AibrixPrefixPolicyTest, GlobalLruDropsALongPromptsHeadFirst) {
  // 100 entries: adding 125 blocks in order evicts the first 25, so the prompt no longer
  // matches at all (the walk stops at block 0): the indexer's known blind spot.
  AibrixPrefixPolicy p(params(100), ctx3());
  ASSERT_EQ(p.pick(kA, loads(2, 0, 1), at(0)), 1);
  EXPECT_EQ(p.index_size(), 100);
  EXPECT_TRUE(p.match(p.prompt_blocks(kA), {0, 1, 2}, 0).empty());
}

}  // namespace
}  // namespace fleetsim
