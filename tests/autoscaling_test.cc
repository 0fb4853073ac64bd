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
  const AutoscalingSummary& s = *a.summary.autoscaling;
  EXPECT_EQ(a.summary.failed, 0);
  EXPECT_GT(s.peak_pods, 4);
  EXPECT_LE(s.peak_pods, 10);
  EXPECT_GT(s.pods_added, 0);
  EXPECT_EQ(s.pods_added, s.pods_removed);  // back to the minimum at the end
  EXPECT_EQ(s.timeline.back().provisioned, 2);

  // The first decision to grow, and the first sync that sees a new pod ready: at least the
  // provisioning and the load later.
  double decided = -1, first_ready = -1;
  for (const auto& p : s.timeline) {
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
  for (const auto& p : s.timeline) sampled += 15.0 * p.provisioned;
  EXPECT_NEAR(sampled, s.pod_seconds, 15.0 * (s.pods_added + s.pods_removed) + 2.0 * 15.0);
  EXPECT_GT(end_s, 1500.0);
}

TEST(Autoscaling, AStaticArmBesideGetsItsGpuTimeAndTheFleetsAreIndependent) {
  std::string yaml = burst_yaml(kRate);
  yaml += "  - {name: static, policy: least_outstanding, autoscaling: {metric: none}}\n";
  const RunResult r = run_scenario(parse_scenario(yaml, "two.yaml"), 2);
  const AutoscalingSummary& fixed = *r.arms[1].summary.autoscaling;
  EXPECT_EQ(fixed.metric, "none");
  EXPECT_EQ(fixed.peak_pods, 2);
  EXPECT_DOUBLE_EQ(fixed.mean_pods, 2.0);
  EXPECT_TRUE(fixed.timeline.empty());
  // The pods added for the burst buy a shorter TTFT tail with more GPU time.
  EXPECT_LT(r.arms[0].summary.ttft_ms.p95, r.arms[1].summary.ttft_ms.p95);
  EXPECT_GT(r.arms[0].summary.autoscaling->pod_seconds, fixed.pod_seconds);
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
  ASSERT_GT(without.summary.autoscaling->pods_removed, 0);
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
  EXPECT_EQ(a.summary.autoscaling->pods_removed, 2);
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
  EXPECT_GT(s.pods_added, 0);
  EXPECT_EQ(s.pods_added, s.pods_removed);
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

TEST(Autoscaling, BadSettingsAreNamed) {
  expect_error("{metric: waiting, min_pods: 5, max_pods: 3}", "min_pods 5 is above max_pods 3");
  expect_error("{metric: waiting, min_pods: 3, max_pods: 5}",
               "fleet.pods (2, the pods at the start) must lie in [min_pods, max_pods] = [3, 5]");
  expect_error("{metric: queue}", "waiting, running, kv_usage, inflight, request_rate");
  expect_error("{metric: waiting, prestop_s: 40}", "the grace period must cover the preStop hook");
  for (const auto& [pool, needle] : std::vector<std::pair<std::string, std::string>>{
           {"", "the fleet has several pools; name the one that scales; pools: small, big"},
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

}  // namespace
}  // namespace fleetsim
