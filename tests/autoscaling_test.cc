// An autoscaled fleet on the clock: pods arrive only after provisioning and model load, leave
// through a drain, their GPU time is counted, and a preStop hook longer than the endpoints'
// propagation is what keeps a scale-down from refusing requests.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// 4 req/s, a burst to 30 req/s from 300 s to 900 s, then 4 again until 1500 s.
std::string burst_yaml(const std::string& autoscaling, const std::string& gateway = "{}") {
  return "name: burst\nseed: 11\n"
         "fleet: {pods: 2, gpu: H100-SXM, model: Llama-3.1-8B}\n"
         "workload:\n  type: open_loop\n  rate_schedule: '0:4, 300:4, 301:30, 900:30, 901:4'\n"
         "  duration_s: 1500\n  max_requests: 0\n"
         "  prompt_tokens: {dist: uniform, low: 500, high: 3000}\n"
         "  output_tokens: {dist: uniform, low: 100, high: 400}\n"
         "gateway: " +
         gateway + "\nautoscaling: " + autoscaling +
         "\narms:\n  - {name: lor, policy: least_outstanding}\n";
}

const std::string kRate =
    "{metric: request_rate, target: 6, min_pods: 2, max_pods: 10, provision_s: 30, "
    "load_time_s: 60}";

TEST(Autoscaling, PodsJoinAfterProvisioningAndLoadAndLeaveAfterTheBurst) {
  const ArmResult a = run_scenario(parse_scenario(burst_yaml(kRate), "rate.yaml")).arms[0];
  ASSERT_TRUE(a.summary.autoscaling.has_value());
  ASSERT_EQ(a.summary.autoscaling->pools.size(), 1u);
  const PoolScaling& pool = a.summary.autoscaling->pools[0];
  EXPECT_EQ(pool.pool, "default");
  EXPECT_EQ(pool.metric, "request_rate");
  // One pool: the fleet's figures are its own.
  EXPECT_DOUBLE_EQ(a.summary.autoscaling->fleet.pod_seconds, pool.pods.pod_seconds);
  const PodTime& s = pool.pods;
  EXPECT_EQ(a.summary.failed, 0);
  EXPECT_GT(s.peak_pods, 4);
  EXPECT_LE(s.peak_pods, 10);
  EXPECT_GT(s.pods_added, 0);
  EXPECT_EQ(s.pods_added, s.pods_removed);  // back to the minimum at the end
  EXPECT_EQ(pool.timeline.back().provisioned, 2);

  // The first decision to grow, and the first sync that sees a new pod ready: at least the
  // provisioning and the load later.
  double decided = -1, first_ready = -1;
  for (const auto& p : pool.timeline) {
    if (decided < 0 && p.desired > 2) decided = p.t_s;
    if (first_ready < 0 && p.ready > 2) first_ready = p.t_s;
  }
  ASSERT_GE(decided, 300.0);
  EXPECT_GE(first_ready, decided + 90.0);
  EXPECT_LE(first_ready, decided + 90.0 + 15.0);

  // GPU time: between the minimum and the peak held over the whole run, and the integral of
  // the provisioned pods the timeline samples (to within a sync period per change).
  const double end_s = s.pod_seconds / s.mean_pods;
  EXPECT_GE(s.mean_pods, 2.0);
  EXPECT_LT(s.mean_pods, s.peak_pods);
  double sampled = 0;
  for (const auto& p : pool.timeline) sampled += 15.0 * p.provisioned;
  EXPECT_NEAR(sampled, s.pod_seconds, 15.0 * (s.pods_added + s.pods_removed) + 2.0 * 15.0);
  EXPECT_GT(end_s, 1500.0);
}

TEST(Autoscaling, AStaticArmBesideGetsItsGpuTimeAndTheFleetsAreIndependent) {
  std::string yaml = burst_yaml(kRate);
  yaml += "  - {name: static, policy: least_outstanding, autoscaling: {metric: none}}\n";
  const RunResult r = run_scenario(parse_scenario(yaml, "two.yaml"), 2);
  const PoolScaling& static_pool = r.arms[1].summary.autoscaling->pools.at(0);
  EXPECT_EQ(static_pool.metric, "none");
  EXPECT_TRUE(static_pool.timeline.empty());
  const PodTime& fixed = r.arms[1].summary.autoscaling->fleet;
  EXPECT_EQ(fixed.peak_pods, 2);
  EXPECT_DOUBLE_EQ(fixed.mean_pods, 2.0);
  // The pods added for the burst buy a shorter TTFT tail with more GPU time.
  EXPECT_LT(r.arms[0].summary.ttft_ms.p95, r.arms[1].summary.ttft_ms.p95);
  EXPECT_GT(r.arms[0].summary.autoscaling->fleet.pod_seconds, fixed.pod_seconds);
  // Threads do not change a byte.
  const RunResult serial = run_scenario(parse_scenario(yaml, "two.yaml"), 1);
  EXPECT_EQ(result_json(r, parse_scenario(yaml, "two.yaml")).dump(),
            result_json(serial, parse_scenario(yaml, "two.yaml")).dump());
}

TEST(Autoscaling, APreStopHookLongerThanThePropagationKeepsScaleDownsClean) {
  // Endpoints that take 2 s to leave the routers: without a preStop sleep, the pods stop
  // accepting while requests still arrive and those get HTTP 502.
  const std::string gateway = "{endpoint_watch_delay_ms: 2000, request_timeout_s: 600}";
  const std::string bare = kRate.substr(0, kRate.size() - 1) + ", prestop_s: 0}";
  const std::string hooked = kRate.substr(0, kRate.size() - 1) + ", prestop_s: 5}";
  const ArmResult without =
      run_scenario(parse_scenario(burst_yaml(bare, gateway), "bare.yaml")).arms[0];
  const ArmResult with =
      run_scenario(parse_scenario(burst_yaml(hooked, gateway), "hook.yaml")).arms[0];
  ASSERT_GT(without.summary.autoscaling->fleet.pods_removed, 0);
  EXPECT_GT(without.summary.failed, 0);
  std::int64_t refused = 0;
  for (const auto& rec : without.records) refused += rec.outcome == Outcome::kRefused502 ? 1 : 0;
  EXPECT_EQ(refused, without.summary.failed);
  EXPECT_EQ(with.summary.failed, 0);
}

TEST(Autoscaling, AShortGracePeriodKillsWhatIsStillStreaming) {
  // Four pods under a light load of long answers: the HPA scales down to two at once, and a
  // 1 s grace period kills the answers the drained pods are still streaming.
  const std::string yaml =
      "name: grace\nseed: 5\nfleet: {pods: 4, gpu: H100-SXM, model: Llama-3.1-8B}\n"
      "workload: {type: open_loop, rate: 2, duration_s: 200, max_requests: 0,\n"
      "  prompt_tokens: 1000, output_tokens: {dist: uniform, low: 2000, high: 3000}}\n"
      "autoscaling: {metric: request_rate, target: 6, min_pods: 2, max_pods: 4, prestop_s: 0.5,\n"
      "  termination_grace_s: 1}\n"
      "arms:\n  - {name: lor, policy: least_outstanding}\n";
  const ArmResult a = run_scenario(parse_scenario(yaml, "grace.yaml")).arms[0];
  EXPECT_EQ(a.summary.autoscaling->fleet.pods_removed, 2);
  std::int64_t mid_stream = 0;
  for (const auto& rec : a.records) mid_stream += rec.outcome == Outcome::kMidStream ? 1 : 0;
  EXPECT_GT(mid_stream, 0);
  EXPECT_EQ(mid_stream, a.summary.failed);
}

// Two tiers behind a tier classifier; only the big tier's Deployment scales.
std::string pooled_yaml(const std::string& autoscaling) {
  return "name: tiers\nseed: 5\n"
         "fleet:\n  pools:\n"
         "    - {name: small, pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
         "    - {name: big, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
         "workload:\n  type: open_loop\n  rate_schedule: '0:2, 200:2, 201:20, 500:20, 501:2'\n"
         "  duration_s: 1200\n  max_requests: 0\n  tier_mix: 'small:0.2, big:0.8'\n"
         "  prompt_tokens: {dist: uniform, low: 500, high: 3000}\n"
         "  output_tokens: {dist: uniform, low: 100, high: 400}\n"
         "autoscaling: " +
         autoscaling + "\narms:\n  - {name: hint, policy: tier_classifier, params: {rule: hint}}\n";
}

TEST(Autoscaling, OnlyTheNamedPoolScales) {
  const std::string yaml = pooled_yaml(
      "{pool: big, metric: request_rate, target: 4, min_pods: 1, max_pods: 6, prestop_s: 2}");
  const ArmResult a = run_scenario(parse_scenario(yaml, "tiers.yaml")).arms[0];
  const AutoscalingSummary& s = *a.summary.autoscaling;
  EXPECT_GT(s.fleet.pods_added, 0);
  EXPECT_EQ(s.fleet.pods_added, s.fleet.pods_removed);
  // The small tier's two pods count in the fleet's GPU time, at their fixed size.
  ASSERT_EQ(s.pools.size(), 2u);
  EXPECT_EQ(s.pools[0].metric, "none");
  EXPECT_DOUBLE_EQ(s.pools[0].pods.mean_pods, 2.0);
  EXPECT_NEAR(s.fleet.pod_seconds, s.pools[0].pods.pod_seconds + s.pools[1].pods.pod_seconds, 1e-6);
  // A GPU a pod here: GPU time is pod time.
  EXPECT_NEAR(s.fleet.gpu_seconds, s.fleet.pod_seconds, 1e-6);
  EXPECT_EQ(a.summary.failed, 0);
  // Pods 0-1 are the small tier, 2-7 the big tier's six slots; the added ones served big
  // requests only, and the small tier kept its two pods.
  ASSERT_EQ(a.summary.per_pod.size(), 8u);
  std::int64_t on_added = 0;
  for (size_t i = 3; i < 8; ++i) on_added += a.summary.per_pod[i].requests;
  EXPECT_GT(on_added, 0);
  ASSERT_EQ(a.summary.per_pool.size(), 2u);
  EXPECT_EQ(a.summary.per_pool[0].pods, 2);
  EXPECT_EQ(a.summary.per_pool[1].pods, 1);  // the pods it started with
  for (const auto& rec : a.records) {
    if (rec.pod >= 2) {
      EXPECT_EQ(rec.tier, "big") << "request " << rec.id;
    }
  }
}

void expect_error(const std::string& autoscaling, const std::string& needle) {
  try {
    parse_scenario(burst_yaml(autoscaling), "bad.yaml");
    FAIL() << "expected a ScenarioError for " << autoscaling;
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
  }
}

TEST(Autoscaling, GpuTimeCountsEachPodsGpus) {
  // The big tier at TP 2, the small one two pods a GPU: 2 and 1/2 a GPU a pod.
  std::string yaml = pooled_yaml(
      "{pool: big, metric: request_rate, target: 4, min_pods: 1, "
      "max_pods: 6, prestop_s: 2}");
  yaml.replace(yaml.find("model: Llama-3.1-8B}"), 20,
               "model: Llama-3.1-8B, server: {tensor_parallel_size: 2}}");
  yaml.replace(yaml.find("model: Qwen2.5-7B-Instruct}"), 27,
               "model: Qwen2.5-7B-Instruct, pods_per_gpu: 2, server: {gpu_memory_utilization: "
               "0.45}}");
  const AutoscalingSummary s =
      *run_scenario(parse_scenario(yaml, "tiers.yaml")).arms[0].summary.autoscaling;
  EXPECT_DOUBLE_EQ(s.pools[0].pods.gpu_seconds, s.pools[0].pods.pod_seconds / 2);
  EXPECT_DOUBLE_EQ(s.pools[1].pods.gpu_seconds, s.pools[1].pods.pod_seconds * 2);
  EXPECT_NEAR(s.fleet.gpu_seconds, s.pools[0].pods.gpu_seconds + s.pools[1].pods.gpu_seconds, 1e-6);
}

TEST(Autoscaling, BadSettingsAreNamed) {
  expect_error("{metric: waiting, min_pods: 5, max_pods: 3}", "min_pods 5 is above max_pods 3");
  expect_error("{metric: waiting, min_pods: 3, max_pods: 5}",
               "fleet.pods (2, the pods at the start) must lie in [min_pods, max_pods] = [3, 5]");
  expect_error("{metric: queue}", "waiting, running, kv_usage, inflight, request_rate");
  expect_error("{metric: waiting, prestop_s: 40}", "the grace period must cover the preStop hook");
  for (const auto& [pool, needle] : std::vector<std::pair<std::string, std::string>>{
           {"",
            "the fleet has several pools; name the one that scales (pool), or give each its own "
            "HPA (pools); pools: small, big"},
           {"nope", "no pool named 'nope'; pools: small, big"},
           {"small",
            "pool small's pods (2, the pods at the start) must lie in [min_pods, "
            "max_pods] = [1, 1]"}}) {
    try {
      parse_scenario(pooled_yaml("{pool: '" + pool + "', metric: waiting, max_pods: 1}"),
                     "pools.yaml");
      FAIL() << "expected a ScenarioError for pool '" << pool << "'";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  try {
    std::string yaml = burst_yaml(kRate);
    yaml += "  - {name: b, policy: round_robin, autoscaling: {max_pods: 1}}\n";
    parse_scenario(yaml, "arm.yaml");
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("arms.1.autoscaling"), std::string::npos) << e.what();
  }
}

// A prefill/decode fleet with an HPA per pool: prefill pods follow the prompts sent to them
// (prefill legs), decode pods the requests running on them.
std::string pd_yaml(const std::string& arms) {
  return "name: pd-hpa\nseed: 9\n"
         "fleet:\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n  pools:\n"
         "    - {name: prefill, role: prefill, pods: 1}\n"
         "    - {name: decode, role: decode, pods: 1}\n"
         "workload:\n  type: open_loop\n  rate_schedule: '0:2, 200:2, 201:12, 700:12, 701:2'\n"
         "  duration_s: 1200\n  max_requests: 0\n"
         "  prompt_tokens: {dist: uniform, low: 3000, high: 6000}\n"
         "  output_tokens: {dist: uniform, low: 100, high: 300}\n"
         "autoscaling:\n  load_time_s: 30\n  prestop_s: 5\n  scale_down_stabilization_s: 60\n"
         "  pools:\n"
         "    prefill: {metric: request_rate, target: 3, min_pods: 1, max_pods: 4}\n"
         "    decode: {metric: running, target: 16, min_pods: 1, max_pods: 4}\n"
         "arms:\n" +
         arms;
}

TEST(Autoscaling, EachPoolsHpaScalesItsOwnPods) {
  const std::string yaml = pd_yaml(
      "  - {name: both, policy: least_outstanding}\n"
      "  - {name: decode-only, policy: least_outstanding,\n"
      "     autoscaling: {pools: {prefill: {metric: none}}}}\n"
      "  - {name: static, policy: least_outstanding, autoscaling: {metric: none}}\n");
  const Scenario sc = parse_scenario(yaml, "pd.yaml");
  ASSERT_EQ(sc.arms[0].autoscaling.size(), 2u);
  EXPECT_EQ(sc.arms[0].autoscaling[1].pool_name, "decode");
  EXPECT_EQ(sc.arms[0].autoscaling[1].params.get_double("load_time_s"), 30.0);  // inherited
  ASSERT_EQ(sc.arms[1].autoscaling.size(), 1u);
  EXPECT_TRUE(sc.arms[2].autoscaling.empty());
  const RunResult r = run_scenario(sc, 3);

  const AutoscalingSummary& both = *r.arms[0].summary.autoscaling;
  ASSERT_EQ(both.pools.size(), 2u);
  EXPECT_EQ(both.pools[0].metric, "request_rate");
  EXPECT_EQ(both.pools[1].metric, "running");
  for (const PoolScaling& p : both.pools) {
    EXPECT_GT(p.pods.pods_added, 0) << p.pool;
    EXPECT_EQ(p.pods.pods_added, p.pods.pods_removed) << p.pool;
    EXPECT_EQ(p.timeline.back().provisioned, 1) << p.pool;
  }
  // The fleet's GPU time is its pools'; its peak is at most the sum of theirs.
  EXPECT_NEAR(both.fleet.pod_seconds,
              both.pools[0].pods.pod_seconds + both.pools[1].pods.pod_seconds, 1e-6);
  EXPECT_LE(both.fleet.peak_pods, both.pools[0].pods.peak_pods + both.pools[1].pods.peak_pods);
  EXPECT_GE(both.fleet.peak_pods,
            std::max(both.pools[0].pods.peak_pods, both.pools[1].pods.peak_pods) + 1);
  EXPECT_EQ(both.fleet.pods_added, both.pools[0].pods.pods_added + both.pools[1].pods.pods_added);
  // The added prefill pods (fleet pods 1-3; 4-7 are the decode pool's) computed prompts.
  ASSERT_EQ(r.arms[0].summary.per_pod.size(), 8u);
  std::int64_t added_prefills = 0;
  for (size_t i = 1; i < 4; ++i)
    added_prefills += r.arms[0].summary.per_pod[i].prefix_cache_queries;
  EXPECT_GT(added_prefills, 0);

  const AutoscalingSummary& decode_only = *r.arms[1].summary.autoscaling;
  EXPECT_EQ(decode_only.pools[0].metric, "none");
  EXPECT_DOUBLE_EQ(decode_only.pools[0].pods.mean_pods, 1.0);
  EXPECT_GT(decode_only.pools[1].pods.pods_added, 0);

  const AutoscalingSummary& fixed = *r.arms[2].summary.autoscaling;
  EXPECT_DOUBLE_EQ(fixed.fleet.mean_pods, 2.0);
  EXPECT_EQ(fixed.fleet.pods_added, 0);
  // One prefill pod cannot compute the burst's prompts, whatever the decode pool does: its
  // queue grows until requests time out. Scaling the prefill pool too serves every request.
  EXPECT_EQ(r.arms[0].summary.failed, 0);
  EXPECT_GT(r.arms[1].summary.failed, 0);
  EXPECT_GT(r.arms[2].summary.failed, 0);
  EXPECT_LT(r.arms[0].summary.ttft_ms.p95, r.arms[1].summary.ttft_ms.p95);
}

TEST(Autoscaling, PerPoolSettingsAreNamedWhereTheyAreWritten) {
  auto expect = [](const std::string& yaml, const std::string& needle) {
    try {
      parse_scenario(yaml, "pd.yaml");
      FAIL() << "expected a ScenarioError: " << needle;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string arm = "  - {name: a, policy: least_outstanding}\n";
  std::string yaml = pd_yaml(arm);
  const auto set = [&](const std::string& from, const std::string& to) {
    std::string y = yaml;
    y.replace(y.find(from), from.size(), to);
    return y;
  };
  expect(set("    decode: {", "    decod: {"),
         "pd.yaml:22: autoscaling.pools.decod: no pool "
         "named 'decod'; pools: prefill, decode");
  expect(set("  pools:\n    prefill", "  pool: decode\n  pools:\n    prefill"),
         "autoscaling.pool: pool names the one pool of a single HPA");
  expect(set("min_pods: 1, max_pods: 4}\n    decode", "min_pods: 2, max_pods: 4}\n    decode"),
         "pd.yaml:21: autoscaling.pools.prefill: pool prefill's pods (1, the pods at the start) "
         "must lie in [min_pods, max_pods] = [2, 4]");
  expect(set("    prefill: {metric", "    prefill: {pool: decode, metric"),
         "autoscaling.pools.prefill.pool: an entry of pools scales the pool it is keyed by");
  expect(pd_yaml("  - {name: a, policy: least_outstanding, autoscaling: {pools: [prefill]}}\n"),
         "arms.0.autoscaling.pools: expected a map from pool name to that pool's HPA");
  expect(pd_yaml("  - {name: a, policy: least_outstanding,\n"
                 "     autoscaling: {pools: {decode: {max_pods: 0}}}}\n"),
         "arms.0.autoscaling.pools.decode.max_pods");
  expect(pd_yaml("  - {name: a, policy: least_outstanding, autoscaling: {target: 0}}\n"),
         "arms.0.autoscaling.target");
}

// Ten minutes of traffic, twenty of none, ten again, on a pool KEDA may scale to zero.
std::string pause_yaml(const std::string& autoscaling, const std::string& gateway) {
  return "name: pause\nseed: 5\nfleet: {pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
         "workload:\n  type: open_loop\n"
         "  rate_schedule: '0:1, 600:1, 601:0, 1800:0, 1801:1, 2400:1'\n"
         "  duration_s: 2400\n  max_requests: 0\n"
         "  prompt_tokens: {dist: uniform, low: 500, high: 2000}\n"
         "  output_tokens: {dist: uniform, low: 100, high: 300}\n"
         "gateway: " +
         gateway +
         "\nautoscaling: {metric: request_rate, target: 2, min_pods: 1, max_pods: 2, "
         "provision_s: 60, load_time_s: 60, prestop_s: 5}\n"
         "arms:\n  - {name: always-on, policy: least_outstanding}\n"
         "  - {name: to-zero, policy: least_outstanding, autoscaling: " +
         autoscaling + "}\n";
}

double counter(const std::vector<PolicyCounter>& counters, const std::string& name) {
  for (const auto& c : counters) {
    if (c.name == name) return c.value;
  }
  return -1;
}

TEST(Autoscaling, AnIdlePoolScalesToZeroAndTheFirstRequestWaitsForAPod) {
  const RunResult r = run_scenario(
      parse_scenario(pause_yaml("{min_pods: 0}", "{hold_for_endpoints_s: 300}"), "pause.yaml"), 2);
  const ArmResult& on = r.arms[0];
  const ArmResult& zero = r.arms[1];
  EXPECT_EQ(zero.summary.failed, 0);
  EXPECT_EQ(zero.summary.completed, on.summary.completed);
  // Gone after the 300 s cooldown that follows the last request (the 30 s checks' phase on top),
  // back when requests wait at the gateway.
  const PoolScaling& pool = zero.summary.autoscaling->pools.at(0);
  double gone = -1, back = -1;
  for (const auto& p : pool.timeline) {
    if (gone < 0 && p.provisioned == 0) gone = p.t_s;
    if (gone >= 0 && back < 0 && p.provisioned > 0) back = p.t_s;
  }
  EXPECT_GE(gone, 600.0 + 300.0);
  EXPECT_LE(gone, 600.0 + 300.0 + 30.0 + 15.0);
  EXPECT_GE(back, 1800.0);
  EXPECT_LE(back, 1800.0 + 30.0 + 15.0);
  EXPECT_GT(counter(zero.summary.gateway_counters, "held_for_a_pod"), 0);
  EXPECT_EQ(counter(on.summary.gateway_counters, "held_for_a_pod"), 0);
  // The first request after the pause waited for a node and the model: two minutes at least.
  double first_after = -1;
  for (const auto& rec : zero.records) {
    if (rec.arrival >= sec_to_ns(1800) &&
        (first_after < 0 || rec.arrival < sec_to_ns(first_after))) {
      first_after = ns_to_sec(rec.arrival);
      EXPECT_GE(ns_to_sec(rec.first_token - rec.arrival), 120.0 - 30.0);
    }
  }
  ASSERT_GE(first_after, 1800.0);
  EXPECT_GT(zero.summary.ttft_ms.p95, 10 * on.summary.ttft_ms.p95);
  EXPECT_LT(zero.summary.autoscaling->fleet.pod_seconds,
            on.summary.autoscaling->fleet.pod_seconds - 300.0);
  EXPECT_LT(zero.summary.autoscaling->fleet.mean_pods, 1.0);
}

TEST(Autoscaling, ARequestHeldLongerThanTheGatewayWaitsGetsA503) {
  const ArmResult zero =
      run_scenario(
          parse_scenario(pause_yaml("{min_pods: 0}", "{hold_for_endpoints_s: 10}"), "pause.yaml"))
          .arms[1];
  std::int64_t refused = 0;
  for (const auto& rec : zero.records) {
    if (rec.done && rec.outcome == Outcome::kNoPod503) {
      ++refused;
      // Each attempt waited its 10 s; the client's retries waited theirs.
      EXPECT_GE(ns_to_sec(rec.finished - rec.arrival), 10.0 - 1e-9);
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(refused, zero.summary.failed);
}

TEST(Autoscaling, ScaleToZeroWithoutAGatewayThatHoldsIsRefused) {
  try {
    parse_scenario(pause_yaml("{min_pods: 0}", "{}"), "pause.yaml");
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("pause.yaml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pool default may scale to zero (autoscaling min_pods "
                                         "0), so the gateway must hold requests"),
              std::string::npos)
        << e.what();
  }
}

// Two tiers that may both scale to zero, and a classifier that sends everything to the small one
// and refuses to spill: after the pause only the small tier's pool wakes. (Requests held for
// one pool used to wake every pool at zero.)
TEST(Autoscaling, ARequestHeldForOneTierWakesOnlyThatTiersPool) {
  const std::string yaml =
      "name: tiers0\nseed: 5\nfleet:\n  pools:\n"
      "    - {name: small, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
      "    - {name: big, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
      "workload:\n  type: open_loop\n"
      "  rate_schedule: '0:1, 600:1, 601:0, 1800:0, 1801:1, 2400:1'\n"
      "  duration_s: 2400\n  max_requests: 0\n"
      "  prompt_tokens: {dist: uniform, low: 500, high: 2000}\n"
      "  output_tokens: {dist: uniform, low: 100, high: 300}\n"
      "gateway: {hold_for_endpoints_s: 300}\n"
      "autoscaling:\n  metric: request_rate\n  target: 2\n  provision_s: 60\n"
      "  load_time_s: 60\n  prestop_s: 5\n  pools:\n"
      "    small: {min_pods: 0, max_pods: 1}\n    big: {min_pods: 0, max_pods: 1}\n"
      "arms:\n  - {name: a, policy: tier_classifier,\n"
      "     params: {rule: all_small, on_empty_tier: refuse}}\n";
  const ArmResult a = run_scenario(parse_scenario(yaml, "tiers0.yaml")).arms[0];
  EXPECT_EQ(a.summary.failed, 0);
  const auto& pools = a.summary.autoscaling->pools;
  ASSERT_EQ(pools.size(), 2u);
  const auto wakes = [](const PoolScaling& p) {
    int gone_then_back = 0;
    bool gone = false;
    for (const auto& point : p.timeline) {
      if (point.provisioned == 0) gone = true;
      if (gone && point.provisioned > 0) {
        ++gone_then_back;
        gone = false;
      }
    }
    return gone_then_back;
  };
  EXPECT_EQ(pools[0].pool, "small");
  EXPECT_EQ(wakes(pools[0]), 1);
  EXPECT_EQ(pools[1].pool, "big");
  EXPECT_EQ(wakes(pools[1]), 0);
  EXPECT_EQ(pools[1].pods.pods_added, 0);
}

TEST(Autoscaling, APrefillPoolAtZeroWakesWhenDecodePodsComputePromptsForIt) {
  // Nothing is sent to a prefill pool at zero: the decode pods compute the prompts. Those
  // prompts are what wakes it.
  std::string yaml = pd_yaml("  - {name: a, policy: least_outstanding}\n");
  const std::string from = "'0:2, 200:2, 201:12, 700:12, 701:2'";
  yaml.replace(yaml.find(from), from.size(), "'0:2, 200:2, 201:0, 900:0, 901:2'");
  const std::string entry = "prefill: {metric: request_rate, target: 3, min_pods: 1";
  yaml.replace(yaml.find(entry), entry.size(),
               "prefill: {metric: request_rate, target: 3, min_pods: 0, cooldown_s: 120");
  yaml.replace(yaml.find("  pools:\n    prefill"), 0, "  provision_s: 0\n");
  yaml += "gateway: {hold_for_endpoints_s: 60}\n";
  const ArmResult a = run_scenario(parse_scenario(yaml, "pd0.yaml")).arms[0];
  const PoolScaling& prefill = a.summary.autoscaling->pools.at(0);
  double gone = -1, back = -1;
  for (const auto& p : prefill.timeline) {
    if (gone < 0 && p.provisioned == 0) gone = p.t_s;
    if (gone >= 0 && back < 0 && p.provisioned > 0) back = p.t_s;
  }
  EXPECT_GT(gone, 200.0);
  EXPECT_LT(gone, 900.0);
  EXPECT_GE(back, 900.0);
  EXPECT_LE(back, 900.0 + 30.0 + 15.0);
  EXPECT_EQ(a.summary.failed, 0);
  EXPECT_GT(counter(a.summary.gateway_counters, "decode_only_no_prefill_pod"), 0);
}

}  // namespace
}  // namespace fleetsim
