// The timeline (`fleetsim run --timeline`) as Perfetto and chrome://tracing read it: its
// structure, that it mirrors the run's figures, that recording it changes nothing, and its
// window and event limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::Each;
using ::testing::Ge;
using ::testing::IsSupersetOf;
using ::testing::Le;

// Two pods behind probes; pod-1 refuses connections from 10 s to 30 s.
Scenario faulted_scenario(TimelineOptions timeline = {.enabled = true}) {
  Scenario s = parse_scenario(
      "name: tl\nseed: 5\nfleet: {pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
      "workload: {type: multi_turn_chat, conversations: 30, turns: 3, concurrency: 4,\n"
      "  think_time_ms: 1500, system_prompt_tokens: 400, question_tokens: 60,\n"
      "  answer_tokens: 40}\n"
      "gateway: {probe_interval_s: 2, probe_fall: 2}\n"
      "faults:\n"
      "  - {kind: pod_kill, target: pod-1, at_s: 10, mode: refused, restart_after_s: 20,\n"
      "     load_time_s: 5}\n"
      "arms:\n  - {name: rr, policy: round_robin}\n  - {name: lo, policy: least_outstanding}\n",
      "tl.yaml");
  s.timeline = timeline;
  return s;
}

json trace_of(const RunResult& r) {
  std::ostringstream out;
  write_timeline_json(out, r);
  return json::parse(out.str());
}

std::vector<json> events(const json& trace, int pid, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["pid"] == pid && e["ph"] == ph) out.push_back(e);
  }
  return out;
}

std::vector<std::string> names(const std::vector<json>& es) {
  std::vector<std::string> out;
  for (const json& e : es)
    out.push_back(e.contains("args") && e["args"].contains("name")
                      ? e["args"]["name"].get<std::string>()
                      : e["name"].get<std::string>());
  return out;
}

class TimelineOfAFaultedRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scenario_ = new Scenario(faulted_scenario());
    result_ = new RunResult(run_scenario(*scenario_, 1));
    trace_ = new json(trace_of(*result_));
  }
  static void TearDownTestSuite() {
    delete trace_;
    delete result_;
    delete scenario_;
  }
  static Scenario* scenario_;
  static RunResult* result_;
  static json* trace_;
};
Scenario* TimelineOfAFaultedRun::scenario_ = nullptr;
RunResult* TimelineOfAFaultedRun::result_ = nullptr;
json* TimelineOfAFaultedRun::trace_ = nullptr;

TEST_F(TimelineOfAFaultedRun, NamesEachArmAsAProcessAndTheGatewayAndPodsAsThreads) {
  EXPECT_THAT(names(events(*trace_, 1, "M")),
              IsSupersetOf({"arm rr (round_robin)", "gateway", "pod-0", "pod-1"}));
  EXPECT_THAT(names(events(*trace_, 2, "M")), Contains("arm lo (least_outstanding)"));
}

TEST_F(TimelineOfAFaultedRun, StepsOfAPodFollowOneAnotherWithoutOverlap) {
  std::map<int, double> end_of;  // thread -> end of its last step, microseconds
  const auto steps = events(*trace_, 1, "X");
  ASSERT_FALSE(steps.empty());
  for (const json& s : steps) {
    EXPECT_GT(s["dur"].get<double>(), 0);
    const int tid = s["tid"];
    EXPECT_GE(s["ts"].get<double>() + 1e-3, end_of[tid]) << s.dump();
    end_of[tid] = s["ts"].get<double>() + s["dur"].get<double>();
    EXPECT_GE(s["args"]["tokens"].get<int>(), 1);
  }
  // Each step has one sample of its pod's counters.
  EXPECT_EQ(events(*trace_, 1, "C").size(), steps.size());
}

TEST_F(TimelineOfAFaultedRun, EveryRequestSliceEndsAndItsPhasesNestInsideIt) {
  // id -> open slices (names), as a reader pairs them.
  std::map<std::string, std::vector<std::pair<std::string, double>>> open;
  int requests = 0, ok = 0;
  for (const json& e : (*trace_)["traceEvents"]) {
    if (e["pid"] != 1 || (e["ph"] != "b" && e["ph"] != "e")) continue;
    auto& stack = open[e["id"].get<std::string>()];
    if (e["ph"] == "b") {
      if (stack.empty()) {
        ++requests;
        ok += e["args"]["outcome"] == "ok";
      }
      stack.emplace_back(e["name"], e["ts"].get<double>());
      continue;
    }
    ASSERT_FALSE(stack.empty()) << e.dump();
    EXPECT_EQ(stack.back().first, e["name"]) << e.dump();
    EXPECT_GE(e["ts"].get<double>(), stack.back().second) << e.dump();
    stack.pop_back();
  }
  for (const auto& [id, stack] : open) EXPECT_TRUE(stack.empty()) << id;
  const ArmSummary& rr = result_->arms[0].summary;
  // Every attempt: the completed requests, and one slice per failed attempt.
  EXPECT_EQ(ok, rr.completed);
  EXPECT_GE(requests, rr.requests);
  // A routing decision for each attempt the gateway sent to a pod.
  const auto routed = std::count_if(
      (*trace_)["traceEvents"].begin(), (*trace_)["traceEvents"].end(), [](const json& e) {
        return e["pid"] == 1 && e["ph"] == "b" && e["cat"] == "request" && e.contains("args") &&
               !e["args"]["pod"].is_null();
      });
  const auto routes =
      std::count_if((*trace_)["traceEvents"].begin(), (*trace_)["traceEvents"].end(),
                    [](const json& e) { return e["pid"] == 1 && e["name"] == "route"; });
  EXPECT_EQ(routes, routed);
}

TEST_F(TimelineOfAFaultedRun, MarksTheFaultTheProbesAndTheRestart) {
  std::vector<std::string> marks;
  for (const json& e : events(*trace_, 1, "i")) {
    if (e["name"] == "route") continue;
    marks.push_back(e["name"].get<std::string>() + " @" +
                    std::to_string(static_cast<int>(e["ts"].get<double>() / 1e6)) +
                    (e["s"] == "p" ? "" : " tid " + std::to_string(e["tid"].get<int>())));
  }
  // Down at the second failed probe (every 2 s, probe_fall 2), up at the second good one after
  // the restart (20 s) and its load time (5 s).
  EXPECT_THAT(marks, IsSupersetOf({"pod_kill pod-1 @10", "pod-1 back @35", "marked down @12 tid 2",
                                   "marked up @38 tid 2"}));
}

TEST(Timeline, RecordingItChangesNoFigure) {
  const Scenario with = faulted_scenario();
  const Scenario without = faulted_scenario(TimelineOptions{});
  const RunResult a = run_scenario(with, 1);
  const RunResult b = run_scenario(without, 1);
  EXPECT_EQ(b.arms[0].timeline, nullptr);
  EXPECT_EQ(result_json(a, with).dump(), result_json(b, without).dump());
}

TEST(Timeline, IsTheSameTextAtAnyThreadCount) {
  const Scenario s = faulted_scenario();
  std::ostringstream one, two;
  write_timeline_json(one, run_scenario(s, 1));
  write_timeline_json(two, run_scenario(s, 2));
  EXPECT_EQ(one.str(), two.str());
}

TEST(Timeline, KeepsOnlyItsWindow) {
  const json trace = trace_of(run_scenario(
      faulted_scenario({.enabled = true, .from = sec_to_ns(20), .to = sec_to_ns(25)}), 1));
  std::vector<double> step_ends, step_starts;
  for (const json& s : events(trace, 1, "X")) {
    step_starts.push_back(s["ts"].get<double>());
    step_ends.push_back(s["ts"].get<double>() + s["dur"].get<double>());
  }
  ASSERT_FALSE(step_starts.empty());
  EXPECT_THAT(step_ends, Each(Ge(20e6)));
  EXPECT_THAT(step_starts, Each(Le(25e6)));
}

TEST(Timeline, StopsAtItsEventLimitAndSaysWhen) {
  const RunResult r = run_scenario(faulted_scenario({.enabled = true, .max_events = 500}), 1);
  ASSERT_NE(r.arms[0].timeline, nullptr);
  EXPECT_LE(r.arms[0].timeline->events, 500);
  EXPECT_GT(r.arms[0].timeline->stopped_at, 0);
  EXPECT_THAT(names(events(trace_of(r), 1, "i")),
              Contains("the timeline stopped recording here (--timeline-max-events)"));
}

}  // namespace
}  // namespace fleetsim
