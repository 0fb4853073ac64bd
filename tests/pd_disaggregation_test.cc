// Prefill/decode disaggregation through whole runs (llm-d's P/D, vLLM's NixlConnector): prompts
// computed on prefill pods, their KV read by the decode pod, decided per request, and what a
// prefill pod's failure does.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <string>
#include <utility>

#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Two prefill pods and one decode pod of Llama-3.1-8B on H100s, single-shot prompts.
std::string pd_yaml(const std::string& gateway, const std::string& workload,
                    const std::string& extra = "") {
  return "name: pd\nseed: 9\nfleet:\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n  pools:\n"
         "    - {name: p, role: prefill, pods: 2}\n    - {name: d, role: decode, pods: 1}\n"
         "gateway: " +
         gateway + "\nworkload: " + workload + "\n" + extra +
         "arms:\n  - name: a\n    policy: least_outstanding\n";
}

const char* kOpenLoop =
    "{type: open_loop, rate: 4, max_requests: 80, prompt_tokens: {dist: uniform, low: 2000, "
    "high: 6000}, output_tokens: {dist: constant, value: 100}}";

double counter(const ArmResult& a, const std::string& name) {
  for (const auto& c : a.summary.gateway_counters) {
    if (c.name == name) return c.value;
  }
  return -1;
}

TEST(PdDisaggregation, EveryPromptIsComputedOnAPrefillPodAndDecodedOnTheDecodePod) {
  const Scenario s = parse_scenario(pd_yaml("{}", kOpenLoop), "pd.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.completed, 80);
  EXPECT_EQ(counter(a, "prefill_legs"), 80);
  std::int64_t prompts = 0;
  for (const auto& r : a.records) {
    EXPECT_EQ(r.pod, 2) << "request " << r.id;  // every request is served by the decode pod
    prompts += r.prompt_tokens;
  }
  // Each prompt is looked up once on a prefill pod and once on the decode pod.
  const auto& pods = a.summary.per_pod;
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0].prefix_cache_queries + pods[1].prefix_cache_queries, prompts);
  EXPECT_EQ(pods[2].prefix_cache_queries, prompts);
  EXPECT_GT(pods[0].prefix_cache_queries, 0);
  EXPECT_GT(pods[1].prefix_cache_queries, 0);
}

TEST(PdDisaggregation, DecodeStepsCarryNoPrefillSoTokensFlowEvenly) {
  const Scenario s = parse_scenario(pd_yaml("{}", kOpenLoop), "pd.yaml", {});
  const Scenario agg = parse_scenario(pd_yaml("{disaggregate: false}", kOpenLoop), "pd.yaml", {});
  const ArmResult pd = run_arm(s, s.arms.front());
  const ArmResult whole = run_arm(agg, agg.arms.front());
  EXPECT_EQ(counter(whole, "prefill_legs"), -1);  // no P/D counters without disaggregation
  // Served whole, a request's decode waits behind other prompts' prefills on its pod.
  EXPECT_LT(pd.summary.max_itl_ms.p95 * 3, whole.summary.max_itl_ms.p95);
}

// One 10,000-token prompt: 625 blocks of 16 tokens x 131,072 bytes (Llama-3.1-8B, BF16 KV, TP 1)
// = 1.31072 GB, read at 50 GB/s in 26.2144 ms or at 1 GB/s in 1,310.72 ms.
TEST(PdDisaggregation, TimeToFirstTokenIncludesReadingThePromptsKv) {
  const std::string one =
      "{type: open_loop, rate: 1, max_requests: 1, prompt_tokens: {dist: constant, value: "
      "10000}, output_tokens: {dist: constant, value: 10}}";
  auto ttft = [&](const std::string& gbs) {
    std::string yaml = pd_yaml("{}", one);
    yaml.replace(yaml.find("  model:"), 0, "  server: {kv_transfer_gbs: " + gbs + "}\n");
    const Scenario s = parse_scenario(yaml, "pd.yaml", {});
    return run_arm(s, s.arms.front()).summary.ttft_ms.p50;
  };
  EXPECT_NEAR(ttft("1") - ttft("50"), 1310.72 - 26.2144, 0.01);
}

// The client's stream begins with the decode pod's first token: the prefill pod's one token
// and the read that follows it are part of the TTFT, not a gap between tokens.
TEST(PdDisaggregation, TheReadIsNotAGapInTheStream) {
  std::string yaml = pd_yaml("{}", kOpenLoop);
  yaml.replace(yaml.find("  model:"), 0, "  server: {kv_transfer_gbs: 1}\n");
  const Scenario s = parse_scenario(yaml, "pd.yaml", {});
  const ArmSummary a = run_arm(s, s.arms.front()).summary;
  EXPECT_GT(a.ttft_ms.p50, 500);  // 2,000 to 6,000 tokens at 1 GB/s: 0.26 to 0.79 s a read
  EXPECT_LT(a.max_itl_ms.p95, 5 * a.tpot_ms.p50);
}

// Two 10,000-token prompts computed at once on the two prefill pods are read into the one
// decode pod together: its link carries both at half speed (sim/fleet/kv_network.h), so both
// reads take ~2 x 1.31 s, where one after the other would end at ~1.31 and ~2.62 s.
TEST(PdDisaggregation, ConcurrentReadsShareTheLink) {
  const std::string two =
      "{type: open_loop, rate: 1000, max_requests: 2, prompt_tokens: {dist: constant, value: "
      "10000}, output_tokens: {dist: constant, value: 10}}";
  std::string yaml = pd_yaml("{}", two);
  yaml.replace(yaml.find("  model:"), 0, "  server: {kv_transfer_gbs: 1}\n");
  const Scenario s = parse_scenario(yaml, "pd.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  ASSERT_EQ(a.records.size(), 2u);
  for (const auto& r : a.records) {
    EXPECT_NE(r.prefill_pod, -1);
    const double ttft_s = ns_to_sec(r.first_token - r.arrival);
    EXPECT_GT(ttft_s, 2.62) << "request " << r.id;
    EXPECT_LT(ttft_s, 2.62 + 0.5) << "request " << r.id;
  }
  EXPECT_NE(a.records[0].prefill_pod, a.records[1].prefill_pod);
}

// Conversations on the decode pod: the first turn's 3,000-token prompt goes to a prefill pod;
// later turns find their history in the decode pod's cache and add fewer than 1,000 tokens.
TEST(PdDisaggregation, APromptTheDecodePodMostlyHoldsStaysThere) {
  const std::string chat =
      "{type: multi_turn_chat, conversations: 6, turns: 4, concurrency: 3, "
      "system_prompt_tokens: {dist: constant, value: 3000}, question_tokens: {dist: constant, "
      "value: 200}, answer_tokens: {dist: constant, value: 50}}";
  const Scenario s = parse_scenario(pd_yaml("{pd_non_cached_tokens: 1000}", chat), "pd.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.completed, 24);
  EXPECT_EQ(counter(a, "prefill_legs"), 6);
  EXPECT_EQ(counter(a, "decode_only_below_threshold"), 18);
}

// Both prefill pods killed at 5 s (`mode`): the outcome of every request that failed.
std::vector<Outcome> failures_after_prefill_pods_die(const std::string& gateway,
                                                     const std::string& mode) {
  const Scenario s = parse_scenario(
      pd_yaml(gateway, kOpenLoop,
              "faults:\n  - {kind: pod_kill, target: pod-0, at_s: 5, mode: " + mode +
                  "}\n  - {kind: pod_kill, target: pod-1, at_s: 5, mode: " + mode + "}\n"),
      "pd.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.completed + a.summary.failed, 80);
  std::vector<Outcome> out;
  for (const auto& r : a.records) {
    if (r.outcome != Outcome::kOk) out.push_back(r.outcome);
  }
  return out;
}

TEST(PdDisaggregation, APrefillPodThatRefusesFailsItsRequestsWith502) {
  const std::vector<Outcome> failed = failures_after_prefill_pods_die("{}", "refused");
  EXPECT_GT(failed.size(), 40u);
  EXPECT_EQ(std::count(failed.begin(), failed.end(), Outcome::kRefused502),
            static_cast<std::ptrdiff_t>(failed.size()));
}

TEST(PdDisaggregation, APrefillPodThatNeverAnswersLeavesItsRequestsToTheirTimeout) {
  const std::vector<Outcome> failed =
      failures_after_prefill_pods_die("{request_timeout_s: 10}", "black_hole");
  EXPECT_GT(failed.size(), 40u);
  EXPECT_EQ(std::count(failed.begin(), failed.end(), Outcome::kTimeout),
            static_cast<std::ptrdiff_t>(failed.size()));
}

TEST(PdDisaggregation, WithNoPrefillPodUpTheDecodePodComputesThePrompt) {
  const Scenario s = parse_scenario(
      pd_yaml("{probe_interval_s: 1, probe_timeout_s: 0.5, probe_fall: 1}", kOpenLoop,
              "faults:\n  - {kind: pod_kill, target: pod-0, at_s: 0, mode: refused}\n"
              "  - {kind: pod_kill, target: pod-1, at_s: 0, mode: refused}\n"),
      "pd.yaml", {});
  const ArmResult a = run_arm(s, s.arms.front());
  EXPECT_EQ(a.summary.completed + a.summary.failed, 80);
  EXPECT_GT(counter(a, "decode_only_no_prefill_pod"), 70);
  EXPECT_GT(a.summary.completed, 70);
}

// One prefill pod (700 blocks of 16 tokens: two 4,800-token prompts) serves a slow decode pod
// (400 blocks: one request at a time, 300-token answers) and a fast one, in turn. The prompts
// waiting for the slow pod stay on the prefill pod until read, as vLLM keeps them, so the fast
// pod's prompts queue behind them; a prefill pod that let go at once would not make them wait.
TEST(PdDisaggregation, APrefillPodKeepsAPromptUntilTheDecodePodHasReadIt) {
  auto fast_pod_ttft_ms = [](const std::string& hold_s) {
    const std::string yaml =
        "name: pd\nseed: 9\nfleet:\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n"
        "  server: {kv_transfer_hold_s: " +
        hold_s +
        "}\n  pools:\n"
        "    - {name: p, role: prefill, pods: 1, server: {num_gpu_blocks_override: 700}}\n"
        "    - {name: slow, role: decode, pods: 1, server: {num_gpu_blocks_override: 400}}\n"
        "    - {name: fast, role: decode, pods: 1}\n"
        "workload: {type: open_loop, rate: 2, max_requests: 20, prompt_tokens: {dist: constant, "
        "value: 4800}, output_tokens: {dist: constant, value: 300}}\n"
        "arms:\n  - name: a\n    policy: round_robin\n";
    const Scenario s = parse_scenario(yaml, "pd.yaml", {});
    const ArmResult a = run_arm(s, s.arms.front());
    EXPECT_EQ(a.summary.completed, 20);  // and no block is left held (the run checks)
    double sum = 0;
    int n = 0;
    for (const auto& r : a.records) {
      if (r.pod != 2) continue;
      sum += static_cast<double>(r.first_token - r.arrival) / 1e6;
      ++n;
    }
    EXPECT_EQ(n, 10);
    return sum / n;
  };
  const double kept = fast_pod_ttft_ms("480");
  const double let_go = fast_pod_ttft_ms("0.001");
  EXPECT_LT(let_go, 500);
  EXPECT_GT(kept, 5 * let_go);
}

// The decode pod's KV network down from 5 s to 10 s: each prompt read then fails. Under vLLM's
// default kv_load_failure_policy the decode pod computes those prompts itself; under fail they
// end with HTTP 500.
TEST(PdDisaggregation, AFailedKvReadIsRecomputedOrFailsAsThePolicySays) {
  const auto run = [](const std::string& policy, bool fault) {
    std::string yaml =
        pd_yaml("{}", kOpenLoop,
                fault ? "faults:\n  - {kind: kv_transfer_failure, target: pod-2, at_s: 5, "
                        "duration_s: 5}\n"
                      : "");
    yaml.replace(yaml.find("  pools:"), 0, "  server: {kv_load_failure_policy: " + policy + "}\n");
    const Scenario s = parse_scenario(yaml, "pd.yaml", {});
    return run_arm(s, s.arms.front());
  };
  const auto mean_ttft_ms = [](const ArmResult& a) {
    double sum = 0;
    for (const auto& r : a.records) sum += static_cast<double>(r.first_token - r.arrival) / 1e6;
    return sum / static_cast<double>(a.records.size());
  };
  const ArmResult healthy = run("recompute", false);
  const ArmResult recomputed = run("recompute", true);
  EXPECT_EQ(recomputed.summary.completed, 80);
  EXPECT_EQ(counter(recomputed, "prefill_legs"), 80);  // every prompt was still computed there
  // The prompts read in the window were computed twice, the second time on the decode pod,
  // after the failed read: their first token comes later.
  const auto in_window = [](const ArmResult& a) {
    ArmResult w;
    for (const auto& r : a.records) {
      if (r.arrival >= sec_to_ns(5.5) && r.arrival < sec_to_ns(9.5)) w.records.push_back(r);
    }
    return w;
  };
  // (~275 ms against ~140: a 2,000-6,000-token prompt computed on one H100.)
  EXPECT_GT(mean_ttft_ms(in_window(recomputed)), mean_ttft_ms(in_window(healthy)) + 50);
  std::cout << "read in the window: mean TTFT " << mean_ttft_ms(in_window(recomputed))
            << " ms recomputed, " << mean_ttft_ms(in_window(healthy)) << " ms healthy\n";

  const ArmResult failed = run("fail", true);
  EXPECT_EQ(failed.summary.completed + failed.summary.failed, 80);
  std::int64_t http_500 = 0;
  for (const auto& r : failed.records) {
    if (r.outcome == Outcome::kOk) continue;
    EXPECT_EQ(r.outcome, Outcome::kServerError500) << "request " << r.id;
    EXPECT_GE(r.arrival, sec_to_ns(4)) << "request " << r.id;
    EXPECT_LT(r.arrival, sec_to_ns(10)) << "request " << r.id;
    ++http_500;
  }
  // About 4 requests a second for 5 s read in the window (25 on this seed).
  EXPECT_GT(http_500, 12);
  EXPECT_LT(http_500, 35);
}

// A degraded link: the decode pod's KV network 50 times slower from 5 s to 10 s. A 2,000-6,000
// token prompt of Llama-3.1-8B is 0.26-0.79 GB of KV, 5-16 ms at 50 GB/s and 0.26-0.79 s at 1.
TEST(PdDisaggregation, ASlowKvLinkSlowsTheReadsItCarries) {
  const auto ttft_ms = [](bool slow) {
    const Scenario s = parse_scenario(
        pd_yaml("{}", kOpenLoop,
                slow ? "faults:\n  - {kind: kv_transfer_slow, target: pod-2, at_s: 5, "
                       "duration_s: 5, factor: 50}\n"
                     : ""),
        "pd.yaml", {});
    const ArmResult a = run_arm(s, s.arms.front());
    EXPECT_EQ(a.summary.completed, 80);
    double inside = 0, outside = 0;
    int n_in = 0, n_out = 0;
    for (const auto& r : a.records) {
      const double ms = static_cast<double>(r.first_token - r.arrival) / 1e6;
      if (r.arrival >= sec_to_ns(5.5) && r.arrival < sec_to_ns(9.5)) {
        inside += ms;
        ++n_in;
      } else if (r.arrival < sec_to_ns(4)) {
        outside += ms;
        ++n_out;
      }
    }
    return std::pair{inside / n_in, outside / n_out};
  };
  const auto [healthy_in, healthy_before] = ttft_ms(false);
  const auto [slow_in, slow_before] = ttft_ms(true);
  // The reads queue on the pod's link, so each waits for those before it: ~9.3 s against 0.14.
  EXPECT_GT(slow_in, healthy_in + 2000);
  std::cout << "read in the window: mean TTFT " << slow_in << " ms slowed, " << healthy_in
            << " ms healthy\n";
  EXPECT_DOUBLE_EQ(slow_before, healthy_before);
}

TEST(PdDisaggregation, ARunIsTheSameAtAnyThreadCount) {
  const std::string yaml = pd_yaml("{}", kOpenLoop) + "  - name: b\n    policy: round_robin\n";
  const Scenario s = parse_scenario(yaml, "pd.yaml", {});
  EXPECT_EQ(result_json(run_scenario(s, 1), s).dump(), result_json(run_scenario(s, 2), s).dump());
}

TEST(PdDisaggregation, BadSetupsNameTheField) {
  std::string all_prefill = pd_yaml("{}", kOpenLoop);
  all_prefill.replace(all_prefill.find("role: decode"), 12, "role: prefill");
  try {
    parse_scenario(all_prefill, "pd.yaml", {});
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("pd.yaml:7: fleet.pools: every pool has role prefill"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_scenario(pd_yaml("{prefill_policy: fastest}", kOpenLoop), "pd.yaml", {});
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("gateway.prefill_policy: unknown policy 'fastest'"),
              std::string::npos)
        << e.what();
  }
  try {
    std::string bad = pd_yaml("{}", kOpenLoop);
    bad.replace(bad.find("role: prefill"), 13, "role: prefil");
    parse_scenario(bad, "pd.yaml", {});
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("both, prefill, decode"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
