#include "policies/epp/epp.h"

#include <gtest/gtest.h>

#include <map>

#include "models/block_hash.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

std::vector<PodState> three_pods() {
  std::vector<PodState> out(3);
  for (int i = 0; i < 3; ++i) {
    out[static_cast<size_t>(i)].index = i;
    out[static_cast<size_t>(i)].name = "pod-" + std::to_string(i);
  }
  return out;
}

PolicyContext ctx3(std::uint64_t seed = 1) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  ctx.seed = seed;
  ctx.stream_name = "arm/epp/policy";
  return ctx;
}

// Defaults with the filter's random exploration off, so a test's outcome never rests on a draw.
Params epp_params() {
  Params p = PolicyRegistry::instance().get("epp", "policy").spec.defaults();
  p.set("affinity_explore_probability", 0.0);
  return p;
}

// A conversation turn: the system prompt, then the history, as segments.
Request turn(std::vector<Segment> segments) {
  Request r;
  r.model = "Qwen/Qwen3-32B-FP8";
  r.prompt = std::move(segments);
  r.prompt_tokens = total_tokens(r.prompt);
  r.output_tokens = 16;
  r.output_content_id = 999;
  compute_block_hashes(r, 16);
  return r;
}

std::vector<int> kept_pods(const EppPolicy::Scored& s, const std::vector<PodState>& pods) {
  std::vector<int> out;
  for (const size_t i : s.kept) out.push_back(pods[i].index);
  return out;
}

TEST(EppTest, AffinityFilterKeepsThePodHoldingThePrefix) {
  EppPolicy epp(epp_params(), ctx3());
  const auto pods = three_pods();
  const Request t1 = turn({{100, 2000}, {101, 50}});  // 2050 tokens: 128 full blocks
  epp.on_dispatched(t1, 1);
  // Turn 2 resends turn 1 plus an answer and a question: 2100 tokens, 131 blocks; pod 1 holds
  // the first 128 -> 128 / 131 = 0.977 >= 0.8.
  const Request t2 = turn({{100, 2000}, {101, 50}, {102, 16}, {103, 34}});
  const auto s = epp.evaluate(t2, pods);
  EXPECT_EQ(kept_pods(s, pods), std::vector<int>{1});
  EXPECT_EQ(epp.pick(t2, pods, {}), 1);
}

TEST(EppTest, AffinityFilterPassesAllWhenNoPodReachesTheThreshold) {
  EppPolicy epp(epp_params(), ctx3());
  const auto pods = three_pods();
  epp.on_dispatched(turn({{100, 2000}}), 1);  // 125 blocks
  // Same system prompt, then a long new document: 10000 tokens = 625 blocks, 125 / 625 = 0.2.
  const Request r = turn({{100, 2000}, {200, 8000}});
  EXPECT_EQ(kept_pods(epp.evaluate(r, pods), pods), (std::vector<int>{0, 1, 2}));
  // A prompt shorter than one block has no prefix score at all.
  EXPECT_EQ(epp.evaluate(turn({{300, 10}}), pods).kept.size(), 3u);
}

TEST(EppTest, AffinityFilterTtftGateBreaksStickiness) {
  Params predicted = epp_params();
  predicted.set("ttft_prediction", std::string("inflight_tokens"));
  EppPolicy epp(predicted, ctx3());
  auto pods = three_pods();
  const Request t1 = turn({{100, 2000}, {101, 50}});
  epp.on_dispatched(t1, 1);
  // Predicted TTFT = in-flight tokens / 15928 tokens/s: 50000 -> 3139 ms, within 5000 ms of the
  // idle pods -> still sticky; 200000 -> 12557 ms, 12.6 s worse -> every pod is kept.
  pods[1].inflight_tokens = 50000;
  EXPECT_EQ(kept_pods(epp.evaluate(t1, pods), pods), std::vector<int>{1});
  pods[1].inflight_tokens = 200000;
  EXPECT_EQ(epp.evaluate(t1, pods).kept.size(), 3u);
  // Penalty 0 = always stick.
  Params always = predicted;
  always.set("affinity_max_ttft_penalty_ms", 0.0);
  EppPolicy sticky(always, ctx3());
  sticky.on_dispatched(t1, 1);
  EXPECT_EQ(kept_pods(sticky.evaluate(t1, pods), pods), std::vector<int>{1});
  // No latency predictor in the profile (the default): the gate never opens.
  EppPolicy unpredicted(epp_params(), ctx3());
  unpredicted.on_dispatched(t1, 1);
  EXPECT_EQ(kept_pods(unpredicted.evaluate(t1, pods), pods), std::vector<int>{1});
}

TEST(EppTest, AffinityFilterCanBeTurnedOff) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  EppPolicy epp(p, ctx3());
  const auto pods = three_pods();
  const Request t1 = turn({{100, 2000}});
  epp.on_dispatched(t1, 1);
  EXPECT_EQ(epp.evaluate(t1, pods).kept.size(), 3u);
}

TEST(EppTest, ExplorationSkipsTheFilterAboutAsOftenAsConfigured) {
  Params p = epp_params();
  p.set("affinity_explore_probability", 0.25);
  EppPolicy epp(p, ctx3(7));
  const auto pods = three_pods();
  const Request t1 = turn({{100, 2000}});
  epp.on_dispatched(t1, 1);
  int skipped = 0;
  for (int i = 0; i < 2000; ++i) skipped += epp.evaluate(t1, pods).kept.size() == 3 ? 1 : 0;
  EXPECT_NEAR(skipped / 2000.0, 0.25, 0.04);
}

TEST(EppTest, WeightedScorerArithmetic) {
  Params p = epp_params();
  p.set("filters", std::string(""));
  p.set("scorers", std::string("token-load-scorer:2, active-request-scorer:1, queue-scorer:0.5, "
                               "kv-cache-utilization-scorer:1"));
  EppPolicy epp(p, ctx3());
  auto pods = three_pods();
  // pod 0: 1/4 of the token capacity, 2 requests, queue 4, KV 50%.
  pods[0].inflight_tokens = 1048576;
  pods[0].inflight_requests = 2;
  pods[0].waiting = 4;
  pods[0].kv_usage = 0.5;
  // pod 1: no tokens, 4 requests (the max), empty queue, KV 20%.
  pods[1].inflight_requests = 4;
  pods[1].kv_usage = 0.2;
  // pod 2: twice the capacity (score clamps at 0), idle by requests, queue 2, KV full.
  pods[2].inflight_tokens = 8388608;
  pods[2].waiting = 2;
  pods[2].kv_usage = 1.0;
  const auto s = epp.evaluate(turn({{1, 100}}), pods);
  ASSERT_EQ(s.totals.size(), 3u);
  // token-load: 0.75, 1, 0; active (max 4): 2/4, 0, 1; queue (min 0, max 4): 0, 1, 0.5;
  // kv: 0.5, 0.8, 0.
  EXPECT_NEAR(s.totals[0], 2 * 0.75 + 0.5 + 0.5 * 0 + 0.5, 1e-12);   // 2.5
  EXPECT_NEAR(s.totals[1], 2 * 1.0 + 0.0 + 0.5 * 1 + 0.8, 1e-12);    // 3.3
  EXPECT_NEAR(s.totals[2], 2 * 0.0 + 1.0 + 0.5 * 0.5 + 0.0, 1e-12);  // 1.25
  EXPECT_EQ(epp.pick(turn({{1, 100}}), pods, {}), 1);
}

TEST(EppTest, PrefixCacheScorerIsTheMatchFraction) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("prefix-cache-scorer:3"));
  EppPolicy epp(p, ctx3());
  const auto pods = three_pods();
  epp.on_dispatched(turn({{100, 800}}), 2);                         // 50 blocks
  const auto s = epp.evaluate(turn({{100, 800}, {5, 800}}), pods);  // 100 blocks
  EXPECT_NEAR(s.totals[0], 0.0, 1e-12);
  EXPECT_NEAR(s.totals[2], 3 * 0.5, 1e-12);
}

TEST(EppTest, ActiveRequestMaxRunsOverAllCandidates) {
  // After the filter keeps pod 1 and pod 2, pod 0's 8 requests still set the max (upstream keeps
  // counts for every endpoint): pod 1 (4) scores 0.5, pod 2 (2) 0.75.
  Params p = epp_params();
  p.set("scorers", std::string("active-request-scorer"));
  EppPolicy epp(p, ctx3());
  auto pods = three_pods();
  pods[0].inflight_requests = 8;
  pods[1].inflight_requests = 4;
  pods[2].inflight_requests = 2;
  const Request t1 = turn({{100, 2000}});
  epp.on_dispatched(t1, 1);
  epp.on_dispatched(t1, 2);
  const auto s = epp.evaluate(t1, pods);
  ASSERT_EQ(kept_pods(s, pods), (std::vector<int>{1, 2}));
  EXPECT_NEAR(s.totals[0], 0.5, 1e-12);
  EXPECT_NEAR(s.totals[1], 0.75, 1e-12);
}

TEST(EppTest, IdlePodsTieAtTwoAndRotationCycles) {
  Params p = epp_params();
  p.set("tie_break", std::string("rotation"));
  EppPolicy epp(p, ctx3());
  const auto pods = three_pods();
  const Request r = turn({{1, 100}});
  EXPECT_EQ(epp.evaluate(r, pods).totals, (std::vector<double>{2.0, 2.0, 2.0}));
  std::vector<int> got;
  for (int i = 0; i < 6; ++i) got.push_back(epp.pick(r, pods, {}));  // no dispatch: no affinity
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  // Pod 1 gone: the rotation goes on over the tied pods that remain.
  const std::vector<PodState> two = {pods[0], pods[2]};
  EXPECT_EQ(epp.pick(r, two, {}), 0);
  EXPECT_EQ(epp.pick(r, two, {}), 2);
  EXPECT_EQ(epp.pick(r, two, {}), 0);
}

TEST(EppTest, RandomTieBreakIsSeededAndUsesEveryTiedPod) {
  const auto pods = three_pods();
  const Request r = turn({{1, 100}});
  EppPolicy a(epp_params(), ctx3(5));
  EppPolicy b(epp_params(), ctx3(5));
  std::map<int, int> count;
  for (int i = 0; i < 300; ++i) {
    const int pa = a.pick(r, pods, {});
    EXPECT_EQ(b.pick(r, pods, {}), pa);
    ++count[pa];
  }
  ASSERT_EQ(count.size(), 3u);
  for (const auto& [pod, c] : count) EXPECT_GT(c, 60) << "pod " << pod;
}

TEST(EppTest, MeasuredProbeOneConversationStaysOnItsPod) {
  // shared/validation/measured-3pod-a100.yaml single_conversation_probe: candidates after the
  // filter 3, 1, 1, 1, 1 and the same pod every turn.
  EppPolicy epp(epp_params(), ctx3(3));
  const auto pods = three_pods();
  std::vector<Segment> history = {{500, 3000}};
  std::vector<size_t> after_filter;
  std::vector<int> chosen;
  for (int t = 0; t < 5; ++t) {
    history.push_back({static_cast<std::uint64_t>(600 + t), 20});  // the question line
    const Request r = turn(history);
    after_filter.push_back(epp.evaluate(r, pods).kept.size());
    chosen.push_back(epp.pick(r, pods, {}));
    epp.on_dispatched(r, chosen.back());
    history.push_back({static_cast<std::uint64_t>(700 + t), 16});  // the answer
  }
  EXPECT_EQ(after_filter, (std::vector<size_t>{3, 1, 1, 1, 1}));
  for (const int c : chosen) EXPECT_EQ(c, chosen.front());
}

TEST(EppTest, IndexIsWrittenOnDispatchOnly) {
  EppPolicy epp(epp_params(), ctx3());
  const auto pods = three_pods();
  const Request r = turn({{100, 2000}});
  const int p = epp.pick(r, pods, {});
  EXPECT_EQ(epp.index().size(p), 0);
  epp.on_dispatched(r, p);
  EXPECT_EQ(epp.index().size(p), 125);
}

TEST(EppTest, UnknownNamesThrowAndListTheValidOnes) {
  Params p = epp_params();
  p.set("scorers", std::string("token-load-scorer:1,least-latency-scorer:1"));
  try {
    EppPolicy epp(p, ctx3());
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("least-latency-scorer"), std::string::npos) << msg;
    for (const auto& name : epp_scorer_names()) EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
  Params f = epp_params();
  f.set("filters", std::string("lora-affinity-filter"));
  EXPECT_THROW(make_policy("epp", f, ctx3()), UnknownNameError);
  Params k = epp_params();
  k.set("picker", std::string("best"));
  EXPECT_THROW(make_policy("epp", k, ctx3()), UnknownNameError);
  Params w = epp_params();
  w.set("scorers", std::string("queue-scorer:heavy"));
  EXPECT_THROW(make_policy("epp", w, ctx3()), ScenarioError);
}

TEST(EppTest, ListParsing) {
  EXPECT_EQ(split_epp_list(" a , b,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_epp_list("none").empty());
  EXPECT_TRUE(split_epp_list("").empty());
  const auto w = parse_weighted_scorers("x:2.5,y");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], (std::pair<std::string, double>{"x", 2.5}));
  EXPECT_EQ(w[1], (std::pair<std::string, double>{"y", 1.0}));
}

TEST(EppTest, RegisteredWithEveryParameterDocumented) {
  const auto& entry = PolicyRegistry::instance().get("epp", "policy");
  EXPECT_FALSE(entry.description.empty());
  for (const auto& d : entry.spec.defs()) EXPECT_FALSE(d.help.empty()) << d.name;
  EXPECT_TRUE(entry.spec.has("lru_capacity_per_server"));
  EXPECT_EQ(std::get<std::int64_t>(entry.spec.defaults().values().at("lru_capacity_per_server")),
            0);  // autoTune
}

TEST(EppTest, AutoTunedIndexHoldsAsManyBlocksAsEachPodsKvCache) {
  PolicyContext ctx = ctx3();
  ctx.pod_kv_blocks = {40, 40, 1000};
  EppPolicy epp(epp_params(), ctx);
  EXPECT_EQ(epp.index().capacity(0), 40);
  EXPECT_EQ(epp.index().capacity(2), 1000);
  // A 100-block prompt on pod 0 keeps only its last 40 blocks; pod 2 keeps all of them.
  const Request r = turn({{500, 1600}});
  epp.on_dispatched(r, 0);
  epp.on_dispatched(r, 2);
  EXPECT_EQ(epp.index().size(0), 40);
  EXPECT_EQ(epp.index().size(2), 100);
  // Set explicitly, one capacity for every pod; unknown KV sizes fall back to GIE's 31250.
  Params fixed = epp_params();
  fixed.set("lru_capacity_per_server", static_cast<std::int64_t>(64));
  EXPECT_EQ(EppPolicy(fixed, ctx).index().capacity(2), 64);
  EXPECT_EQ(EppPolicy(epp_params(), ctx3()).index().capacity(1), 31250);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

Request cold_request(std::int64_t id, std::uint64_t content) {
  Request r;
  r.id = id;
  r.prompt = {Segment{content, 64}};
  r.prompt_tokens = 64;
  r.output_tokens = 4;
  r.output_content_id = content + 1;
  compute_block_hashes(r, 16);
  return r;
}

TEST(EppScorers, LoadAwareFollowsTheWaitingQueue) {
  Params p = PolicyRegistry::instance().get("epp", "policy").spec.defaults();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("load-aware-scorer:1"));
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  EppPolicy epp(p, ctx);
  std::vector<PodState> pods(3);
  for (int i = 0; i < 3; ++i) pods[static_cast<size_t>(i)].index = i;
  pods[0].waiting = 64;   // 0.5 x (1 - 64/128) = 0.25
  pods[1].waiting = 0;    // 0.5
  pods[2].waiting = 500;  // capped at the threshold: 0
  const Request r = cold_request(1, 11);
  const auto scored = epp.evaluate(r, pods);
  EXPECT_DOUBLE_EQ(scored.totals[0], 0.25);
  EXPECT_DOUBLE_EQ(scored.totals[1], 0.5);
  EXPECT_DOUBLE_EQ(scored.totals[2], 0.0);
}

TEST(EppScorers, NoHitLruSpreadsColdRequests) {
  Params p = PolicyRegistry::instance().get("epp", "policy").spec.defaults();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("no-hit-lru-scorer:1"));
  p.set("tie_break", std::string("rotation"));
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  EppPolicy epp(p, ctx);
  std::vector<PodState> pods(3);
  for (int i = 0; i < 3; ++i) pods[static_cast<size_t>(i)].index = i;
  // Three cold requests with distinct prefixes: never-used pods first, in order 1.0, 0.5, 0.
  std::vector<int> chosen;
  for (int i = 0; i < 3; ++i) {
    const Request r = cold_request(i, 100 + 10 * static_cast<std::uint64_t>(i));
    const int pod = epp.pick(r, pods, RouteContext{});
    epp.on_dispatched(r, pod);
    chosen.push_back(pod);
  }
  EXPECT_EQ(chosen, (std::vector<int>{0, 1, 2}));
  // A fourth cold request goes to the least recently used: pod-0 (rank 0 -> score 1).
  const Request r4 = cold_request(3, 500);
  EXPECT_EQ(epp.pick(r4, pods, RouteContext{}), 0);
  // A warm request (its prefix is on pod-1) scores 0.5 everywhere.
  const Request warm = cold_request(4, 110);
  const auto scored = epp.evaluate(warm, pods);
  for (double t : scored.totals) EXPECT_DOUBLE_EQ(t, 0.5);
}

TEST(EppPresets, LlmdLoadAwarePresetIsRegisteredWithItsProfile) {
  const auto& e = PolicyRegistry::instance().get("epp-llmd-load-aware", "policy");
  const Params d = e.spec.defaults();
  EXPECT_EQ(d.get_string("filters"), "none");
  EXPECT_EQ(d.get_string("scorers"), "prefix-cache-scorer:2,load-aware-scorer:1");
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// inflight_release = ttl: the gateway never reports a response's end, so the active-request
// scorer counts every dispatch for request_timeout_s, whatever the gateway's live counts say.
TEST(EppTest, TtlReleaseCountsDispatchesUntilTheTimeout) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("active-request-scorer"));
  p.set("tie_break", std::string("rotation"));
  p.set("inflight_release", std::string("ttl"));
  p.set("request_timeout_s", 10.0);
  EppPolicy epp(p, ctx3());
  const auto pods = three_pods();  // the gateway's live view: nothing in flight anywhere
  const Request r = turn({{100, 100}});
  RouteContext at;
  at.now = ms_to_ns(1000);
  EXPECT_EQ(epp.pick(r, pods, at), 0);
  epp.on_dispatched(r, 0);
  epp.on_finished(r, 0);
  at.now = ms_to_ns(2000);
  EXPECT_EQ(epp.pick(r, pods, at), 1);  // pod 0 still counts its (finished) request
  epp.on_dispatched(r, 1);
  at.now = ms_to_ns(3000);
  EXPECT_EQ(epp.pick(r, pods, at), 2);
  epp.on_dispatched(r, 2);
  at.now = ms_to_ns(11500);  // pod 0's booking (at 1 s) expired; pods 1 and 2 still count one
  EXPECT_EQ(epp.pick(r, pods, at), 0);
}

TEST(EppTest, EndOfStreamReleaseReadsTheGatewaysLiveCounts) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("active-request-scorer"));
  p.set("tie_break", std::string("rotation"));
  EppPolicy epp(p, ctx3());
  auto pods = three_pods();
  pods[0].inflight_requests = 2;
  pods[1].inflight_requests = 1;
  EXPECT_EQ(epp.pick(turn({{100, 100}}), pods, {}), 2);
}

// inflight_release = at_pick: the gateway closed the ext-proc stream at the pick, so the scorers
// see nothing in flight however loaded the pods are, and the tie-break alone decides.
TEST(EppTest, AtPickReleaseSeesNoLoad) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("active-request-scorer,token-load-scorer"));
  p.set("tie_break", std::string("rotation"));
  p.set("inflight_release", std::string("at_pick"));
  EppPolicy epp(p, ctx3());
  auto pods = three_pods();
  pods[0].inflight_requests = 5;
  pods[0].inflight_tokens = 50000;
  const Request r = turn({{100, 100}});
  EXPECT_EQ(epp.pick(r, pods, {}), 0);  // the loaded pod, first in rotation
  epp.on_dispatched(r, 0);
  EXPECT_EQ(epp.pick(r, pods, {}), 1);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(EppTest, InflightTokensAreEstimatedAsGieDoes) {
  Params p = epp_params();
  EppPolicy gie(p, ctx3());
  const Request r = turn({{300, 1000}, {301, 200}});  // 1,200 prompt tokens, 16 generated
  // 1,200 tokens x 4 characters / 4 bytes = 1,200 input tokens, + 1.5 x 1,200 for the output.
  EXPECT_EQ(gie.estimate_tokens(r), 3000);
  p.set("chars_per_token", 5.0);
  EXPECT_EQ(EppPolicy(p, ctx3()).estimate_tokens(r), 1500 + 2250);
  p.set("token_estimator", std::string("exact"));
  EXPECT_EQ(EppPolicy(p, ctx3()).estimate_tokens(r), 1200 + 16);
}

TEST(EppTest, EstimatedTokensDriveTheTokenLoadScoreUntilTheResponseEnds) {
  Params p = epp_params();
  p.set("filters", std::string("none"));
  p.set("scorers", std::string("token-load-scorer"));
  p.set("token_load_capacity", static_cast<std::int64_t>(30000));
  EppPolicy epp(p, ctx3());
  const auto pods = three_pods();  // the gateway's exact counts: all zero
  const Request big = turn({{400, 4000}});
  epp.on_dispatched(big, 0);  // books 10,000 estimated tokens on pod 0
  // The gateway's counts say every pod is idle; the EPP's own booking steers away from pod 0.
  RouteContext ctx;
  for (int i = 0; i < 5; ++i) EXPECT_NE(epp.pick(big, pods, ctx), 0);
  epp.on_finished(big, 0);
  int zero = 0;
  for (int i = 0; i < 60; ++i) zero += epp.pick(big, pods, ctx) == 0 ? 1 : 0;
  EXPECT_GT(zero, 5);  // released: pod 0 ties with the others again
}

}  // namespace
}  // namespace fleetsim
