// Failure figures on small cases worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/fleet/failures.h"

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Sequential single-turn requests (one at a time) on two small pods behind `policy`.
std::string base(const std::string& policy, const std::string& extra, int requests = 10) {
  return "name: f\nseed: 1\n"
         "fleet: {pods: 2, gpu: H100-SXM, model: Qwen2.5-7B-Instruct}\n"
         "workload: {type: multi_turn_chat, conversations: " +
         std::to_string(requests) +
         ", turns: 1, concurrency: 1, system_prompt_tokens: 100, question_tokens: 20, "
         "answer_tokens: 5}\n" +
         extra + "arms:\n  - {name: a, policy: " + policy + "}\n";
}

ArmResult run(const std::string& yaml) {
  const Scenario s = parse_scenario(yaml, "f.yaml");
  return run_arm(s, s.arms[0]);
}

TEST(Failures, RefusedPodWithoutHealthChecksFailsEveryOtherRequest) {
  // Round robin alternates pod-0, pod-1, ...; pod-1 refuses from t=0, nobody probes it, so
  // requests 1, 3, 5, 7, 9 get HTTP 502 and are lost (no retries).
  const ArmResult a =
      run(base("round_robin", "faults: [{kind: pod_kill, target: pod-1, at_s: 0}]\n"));
  const auto& f = a.failures;
  EXPECT_EQ(f["errors_by_class"]["http_502"], 5);
  EXPECT_EQ(f["requests_lost"], 5);
  EXPECT_EQ(a.summary.completed, 5);
  EXPECT_EQ(a.summary.failed, 5);
  EXPECT_EQ(f["faults"][0]["requests_per_pod_after"], nlohmann::json({5, 5}));
  EXPECT_TRUE(f["faults"][0]["detection_latency_s"].is_null());
}

TEST(Failures, RetryOnTheNextPodSavesEveryRequest) {
  // Each 502 is retried 100 ms later; round robin then points at pod-0, which serves it.
  const ArmResult a = run(base("round_robin",
                               "client: {retry: fixed, max_attempts: 2, retry_delay_ms: 100, "
                               "jitter: 0}\nfaults: [{kind: pod_kill, target: pod-1, at_s: 0}]\n",
                               4));
  // Requests: r0 -> pod-0 ok; r1 -> pod-1 502, retry -> pod-0 ok; r2 -> pod-1 502, retry ->
  // pod-0 ok; r3 -> pod-1 502, retry -> pod-0 ok.
  EXPECT_EQ(a.failures["retries"], 3);
  EXPECT_EQ(a.failures["requests_lost"], 0);
  EXPECT_EQ(a.failures["errors_by_class"]["http_502"], 3);
  EXPECT_EQ(a.summary.completed, 4);
  for (const auto& r : a.records) {
    EXPECT_EQ(r.pod, 0) << "the final attempt of every request ran on pod-0";
    EXPECT_EQ(r.attempts, r.id == 0 ? 1 : 2);
  }
}

TEST(Failures, ProbesDetectARefusedPodAfterFallFailures) {
  // Probes every 1 s at t = 0, 1, 2, ... (aligned), answered after one round trip of 2 x 0.25 ms.
  // The pod dies at 2.5 s; the probes at 3 s and 4 s fail; fall = 2 marks it down at 4.0005 s.
  const ArmResult a =
      run(base("round_robin",
               "gateway: {probe_interval_s: 1, probe_fall: 2, probe_phase: aligned}\n"
               "faults: [{kind: pod_kill, target: pod-1, at_s: 2.5}]\n",
               300));
  ASSERT_GT(a.summary.duration_s, 5.0) << "the run must outlast the detection";
  const auto& fault = a.failures["faults"][0];
  EXPECT_DOUBLE_EQ(fault["detection_latency_s"].get<double>(), 1.5005);
  // Afterwards only pod-0 gets requests, so errors stop at the detection.
  EXPECT_GE(a.failures["failure_window"]["last_s"].get<double>(), 2.5);
  EXPECT_LE(a.failures["failure_window"]["last_s"].get<double>(), 4.0005 + 0.001);
}

TEST(Failures, BlackHoleTimesOutAfterTheGatewayTimeout) {
  // pod-1 swallows connections; the request routed there fails exactly request_timeout_s after
  // its dispatch (plus nothing else: no answer ever comes).
  const ArmResult a =
      run(base("round_robin",
               "gateway: {request_timeout_s: 2}\n"
               "faults: [{kind: pod_kill, target: pod-1, at_s: 0, mode: black_hole}]\n",
               2));
  ASSERT_EQ(a.failures["errors_by_class"]["timeout"], 1);
  const RequestRecord& r1 = a.records[1];
  EXPECT_EQ(r1.outcome, Outcome::kTimeout);
  EXPECT_EQ(r1.finished - r1.dispatched, 2 * kNsPerSec);
}

TEST(Failures, PickerOutageFailCloseAnswers503InTheConnectErrorTime) {
  const ArmResult a = run(base("epp",
                               "gateway: {picker_service: true, picker_failure_mode: fail_close, "
                               "picker_connect_error_ms: 2}\n"
                               "faults: [{kind: picker_outage, at_s: 0}]\n",
                               5));
  EXPECT_EQ(a.failures["errors_by_class"]["http_503"], 5);
  for (const auto& r : a.records) EXPECT_EQ(r.finished - r.arrival, 2 * kNsPerMs);
}

TEST(Failures, PickerOutageFailOpenFallsBackToRoundRobin) {
  const ArmResult a = run(base("epp",
                               "gateway: {picker_service: true, picker_failure_mode: fail_open}\n"
                               "faults: [{kind: picker_outage, at_s: 0}]\n",
                               5));
  EXPECT_EQ(a.summary.completed, 5);
  EXPECT_EQ(a.failures["requests_lost"], 0);
  // The fallback round robin alternates: pod-0, pod-1, pod-0, pod-1, pod-0.
  EXPECT_EQ(a.failures["faults"][0]["requests_per_pod_after"], nlohmann::json({3, 2}));
}

TEST(Failures, RestartedPodServesAgainAfterItsModelLoads) {
  // pod-1 restarts at 1 s and loads for 3 s: its requests are refused until 4 s. With probes
  // (0.5 s, fall 1, rise 1) the gateway stops sending at the first failed probe and resumes
  // after the first good one past 4 s; recovery is the first success on pod-1 after 4 s.
  const ArmResult a =
      run(base("round_robin",
               "gateway: {probe_interval_s: 0.5, probe_fall: 1, probe_rise: 1, "
               "probe_phase: aligned}\n"
               "faults: [{kind: pod_restart, target: pod-1, at_s: 1, load_time_s: 3}]\n",
               200));
  const auto& fault = a.failures["faults"][0];
  EXPECT_DOUBLE_EQ(fault["back_at_s"].get<double>(), 4.0);
  ASSERT_FALSE(fault["recovery_s"].is_null());
  // Probe at 4.0 s sees it up (answer 4.0005): back in rotation then; the next request to it
  // finishes a few hundred ms later at most.
  EXPECT_GT(fault["recovery_s"].get<double>(), 0.0);
  EXPECT_LT(fault["recovery_s"].get<double>(), 1.0);
}

TEST(Failures, NodeLossTakesEveryPodOnTheNode) {
  const std::string yaml =
      "name: f\nseed: 1\n"
      "fleet: {pods: 4, gpus_per_node: 2, gpu: H100-SXM, model: Qwen2.5-7B-Instruct}\n"
      "workload: {type: multi_turn_chat, conversations: 8, turns: 1, concurrency: 1, "
      "system_prompt_tokens: 100, question_tokens: 20, answer_tokens: 5}\n"
      "gateway: {request_timeout_s: 1}\n"
      "faults: [{kind: node_loss, target: node-1, at_s: 0}]\n"
      "arms:\n  - {name: a, policy: round_robin}\n";
  const ArmResult a = run(yaml);
  EXPECT_EQ(a.failures["faults"][0]["pods"], nlohmann::json({2, 3}));
  // Round robin over 4 pods: requests 2, 3, 6, 7 go to node-1's pods and time out.
  EXPECT_EQ(a.failures["errors_by_class"]["timeout"], 4);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(Failures, RecreatedPodRejoinsThePickerOnceReady) {
  // pod-1 deleted at 1 s (endpoint gone after the 100 ms watch), killed at 2 s; its replacement
  // starts at 3 s, loads for 2 s, is Ready at 5 s and reaches the picker's endpoints at 5.1 s.
  const std::string yaml =
      "name: f\nseed: 1\n"
      "fleet: {pods: 2, gpu: H100-SXM, model: Qwen2.5-7B-Instruct}\n"
      "workload: {type: multi_turn_chat, conversations: 400, turns: 1, concurrency: 1, "
      "system_prompt_tokens: 100, question_tokens: 20, answer_tokens: 5}\n"
      "gateway: {picker_service: true, endpoint_watch_delay_ms: 100}\n"
      "faults: [{kind: pod_delete, target: pod-1, at_s: 1, kill_delay_s: 1, recreate_after_s: 2, "
      "load_time_s: 2}]\n"
      "arms:\n  - {name: a, policy: round_robin}\n";
  const Scenario s = parse_scenario(yaml, "f.yaml");
  const ArmResult a = run_arm(s, s.arms[0]);
  ASSERT_GT(a.summary.duration_s, 6.0);
  EXPECT_EQ(a.failures["requests_lost"], 0);
  const auto& fault = a.failures["faults"][0];
  EXPECT_DOUBLE_EQ(fault["back_at_s"].get<double>(), 5.0);
  bool served_before = false, gap = true, served_after = false;
  for (const auto& r : a.records) {
    if (r.pod != 1) continue;
    if (r.dispatched < sec_to_ns(1.1)) served_before = true;
    if (r.dispatched >= sec_to_ns(1.1) && r.dispatched < sec_to_ns(5.1)) gap = false;
    if (r.dispatched >= sec_to_ns(5.1)) served_after = true;
  }
  EXPECT_TRUE(served_before);
  EXPECT_TRUE(gap) << "no request reaches pod-1 between the watch and its replacement's Ready";
  EXPECT_TRUE(served_after);
  // Recovery: the replacement's first success comes within a request or two of 5.1 s.
  EXPECT_LT(fault["recovery_s"].get<double>(), 0.5);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(Failures, QuietSecondsAreLeftOutOfTheTimeline) {
  // A black-holed pod holds its request for the whole 600 s gateway timeout: one row for the
  // first second, the seconds in which attempts ended or health changed, and the last second.
  const ArmResult a =
      run(base("round_robin",
               "gateway: {request_timeout_s: 600}\n"
               "faults: [{kind: pod_kill, target: pod-1, at_s: 0, mode: black_hole}]\n",
               2));
  const auto& timeline = a.failures["timeline"];
  ASSERT_GE(timeline.size(), 2u);
  EXPECT_LT(timeline.size(), 10u);
  EXPECT_EQ(timeline.front()["t_s"], 0);
  EXPECT_GE(timeline.back()["t_s"].get<double>(), 600.0);
  std::int64_t errors = 0;
  for (const auto& row : timeline) errors += row["errors"].get<std::int64_t>();
  EXPECT_EQ(errors, a.failures["errors_by_class"]["timeout"].get<std::int64_t>());
  EXPECT_EQ(errors, 1);
}

// `to_faulted` requests sent to pod 2 (killed at 0) and failing, `to_each_other` to each of the
// three others, all answered by 10 s; probes never mark pod 2 down.
std::vector<std::string> fail_fast(int to_faulted, int to_each_other) {
  FailureTracker tracker(4);
  tracker.add_fault("pod_kill", "pod-2", 0, {2});
  Request r;
  for (int i = 0; i < to_faulted; ++i) {
    tracker.on_dispatch(r, 2, sec_to_ns(1));
    tracker.on_finished(r, 2, Outcome::kRefused502, sec_to_ns(1));
  }
  for (int pod : {0, 1, 3}) {
    for (int i = 0; i < to_each_other; ++i) tracker.on_dispatch(r, pod, sec_to_ns(1));
  }
  return tracker.fail_fast_warnings(sec_to_ns(10));
}

TEST(FailFastWarning, APodThatFailsFastAndDrawsTrafficIsNamed) {
  EXPECT_THAT(fail_fast(90, 10),
              ::testing::ElementsAre(::testing::HasSubstr(
                  "pod-2 failed fast after its pod_kill at 0.0 s and drew 75% of the requests "
                  "routed until the run's end (a fair share is 25%), 90 of them failing")));
}

TEST(FailFastWarning, AFairShareOrTooFewRequestsSayNothing) {
  EXPECT_THAT(fail_fast(30, 30), ::testing::IsEmpty());  // round robin's share
  EXPECT_THAT(fail_fast(15, 1), ::testing::IsEmpty());   // too few to tell
}

}  // namespace
}  // namespace fleetsim
