#include "policies/dynamo_kv/dynamo_kv.h"

#include <gtest/gtest.h>

#include <set>

#include "models/block_hash.h"

namespace fleetsim {
namespace {

std::vector<PodState> pods3() {
  std::vector<PodState> out(3);
  for (int i = 0; i < 3; ++i) {
    out[static_cast<size_t>(i)].index = i;
    out[static_cast<size_t>(i)].name = "pod-" + std::to_string(i);
  }
  return out;
}

PolicyContext ctx3() {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.engine_block_size = 16;
  ctx.stream_name = "arm/dyn/policy";
  return ctx;
}

Params params() { return PolicyRegistry::instance().get("dynamo_kv", "policy").spec.defaults(); }

Request prompt(std::int64_t id, std::vector<Segment> segments) {
  Request r;
  r.id = id;
  r.model = "m";
  r.prompt = std::move(segments);
  r.prompt_tokens = total_tokens(r.prompt);
  r.output_tokens = 30;
  compute_block_hashes(r, 16);
  return r;
}

// Turn 1 (2050 tokens, 128 full blocks) and turn 2 of the same chat (2280 tokens, 142 blocks,
// the first 128 shared).
const Request kTurn1 = prompt(1, {Segment{1, 2000}, Segment{2, 50}});
const Request kTurn2 =
    prompt(2, {Segment{1, 2000}, Segment{2, 50}, Segment{3, 30}, Segment{4, 200}});

RouteContext at(double s) { return RouteContext{sec_to_ns(s)}; }

TEST(DynamoKvPolicyTest, IdleCost) {
  DynamoKvPolicy p(params(), ctx3());
  const auto c = p.cost(kTurn1, 0, 0);
  EXPECT_EQ(c.overlap_blocks, 0);
  EXPECT_DOUBLE_EQ(c.prefill_blocks, 2050.0 / 16.0);  // 128.125
  EXPECT_DOUBLE_EQ(c.decode_blocks, 128.0);
  EXPECT_DOUBLE_EQ(c.logit, 256.125);
}

TEST(DynamoKvPolicyTest, InFlightPrefillCountsAgainstTheCachingPod) {
  DynamoKvPolicy p(params(), ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  // Pod 1: overlap 128 blocks; prefill (2050 pending + 2280 - 2048) / 16 = 142.625; decode
  // 128 active + 14 new = 142 -> 284.625. Pods 0 and 2: 2280 / 16 + 142 = 284.5 -> they win.
  const auto c1 = p.cost(kTurn2, 1, 0);
  EXPECT_EQ(c1.overlap_blocks, 128);
  EXPECT_DOUBLE_EQ(c1.prefill_blocks, 142.625);
  EXPECT_DOUBLE_EQ(c1.decode_blocks, 142.0);
  EXPECT_DOUBLE_EQ(p.cost(kTurn2, 0, 0).logit, 284.5);
  std::set<int> seen;
  for (int i = 0; i < 40; ++i) seen.insert(p.pick(kTurn2, pods3(), at(0)));
  EXPECT_EQ(seen, (std::set<int>{0, 2}));  // tie between 0 and 2, drawn at random
  // Turn 1 finished: pod 1 costs 232 / 16 + 142 = 156.5 and wins.
  p.on_finished(kTurn1, 1);
  EXPECT_DOUBLE_EQ(p.cost(kTurn2, 1, 0).logit, 156.5);
  EXPECT_EQ(p.pick(kTurn2, pods3(), at(1)), 1);
}

TEST(DynamoKvPolicyTest, MarkPrefillCompleted) {
  DynamoKvPolicy p(params(), ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  EXPECT_EQ(p.pending_prefill_tokens(1), 2050);
  p.mark_prefill_completed(1);
  EXPECT_EQ(p.pending_prefill_tokens(1), 0);
  // Still decoding: 128 active blocks + 14 new; prefill 232 / 16.
  EXPECT_DOUBLE_EQ(p.cost(kTurn2, 1, 0).logit, 14.5 + 142.0);
  p.on_finished(kTurn1, 1);
  EXPECT_EQ(p.active_blocks(1), 0);
}

TEST(DynamoKvPolicyTest, ApproximateIndexForgetsAfterTtl) {
  DynamoKvPolicy p(params(), ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  p.on_finished(kTurn1, 1);
  EXPECT_EQ(p.cost(kTurn2, 1, sec_to_ns(119.9)).overlap_blocks, 128);
  EXPECT_EQ(p.cost(kTurn2, 1, sec_to_ns(120.0)).overlap_blocks, 0);  // expired at 120 s
}

TEST(DynamoKvPolicyTest, PrunesTheDeepestBlocksFirst) {
  Params small = params();
  small.set("router_max_tree_size", std::int64_t{100});
  DynamoKvPolicy p(small, ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 0);
  // 128 > 100: pruned to 0.8 x 100 = 80, same expiry -> deepest first -> blocks 0..79 remain.
  EXPECT_EQ(p.index_size(), 80);
  EXPECT_EQ(p.overlap(0, p.prompt_blocks(kTurn1), 0), 80);
}

TEST(DynamoKvPolicyTest, WeightZeroIsDecodeBlocksOnly) {
  Params w0 = params();
  w0.set("overlap_score_weight", 0.0);
  DynamoKvPolicy p(w0, ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  EXPECT_DOUBLE_EQ(p.cost(kTurn2, 1, 0).logit, 142.0);
  EXPECT_DOUBLE_EQ(p.cost(kTurn2, 0, 0).logit, 142.0);
}

TEST(DynamoKvPolicyTest, TemperatureSamples) {
  Params hot = params();
  hot.set("router_temperature", 1000.0);
  DynamoKvPolicy p(hot, ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  p.on_finished(kTurn1, 1);
  // A very high temperature makes the choice nearly uniform: every pod shows up.
  std::set<int> seen;
  for (int i = 0; i < 100; ++i) seen.insert(p.pick(kTurn2, pods3(), at(1)));
  EXPECT_EQ(seen.size(), 3u);
}

TEST(DynamoKvPolicyTest, HitRateCounters) {
  DynamoKvPolicy p(params(), ctx3());
  p.pick(kTurn1, pods3(), at(0));
  p.on_dispatched(kTurn1, 1);
  p.on_finished(kTurn1, 1);
  p.pick(kTurn2, pods3(), at(1));
  p.on_dispatched(kTurn2, 1);
  // isl blocks ceil(2050 / 16) + ceil(2280 / 16) = 129 + 143; overlap 0 + 128.
  const auto c = p.counters();
  ASSERT_GE(c.size(), 3u);
  EXPECT_DOUBLE_EQ(c[0].value, 272.0);
  EXPECT_DOUBLE_EQ(c[1].value, 128.0);
  EXPECT_DOUBLE_EQ(c[2].value, 128.0 / 272.0);
}

}  // namespace
}  // namespace fleetsim
