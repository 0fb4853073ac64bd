// A client that cancels what is in flight when its window closes (guidellm's max-seconds): the
// same requests are sent as when it lets them drain, the unfinished ones leave the figures, and
// the rate is completions inside the window over its length.
#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

std::string streams_yaml(const std::string& at_end, double duration_s) {
  return "name: window\nseed: 3\n"
         "fleet: {pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
         "workload:\n  type: concurrency_streams\n  streams: 12\n  turns: 3\n"
         "  warmup_s: 2\n  duration_s: " +
         std::to_string(duration_s) + "\n  at_window_end: " + at_end +
         "\n  question_tokens: {dist: uniform, low: 200, high: 2000}\n"
         "  answer_tokens: {dist: uniform, low: 50, high: 400}\n"
         "arms:\n  - {name: rr, policy: round_robin}\n";
}

TEST(WindowCancel, UnfinishedRequestsLeaveTheFiguresAndTheRateUsesTheWindow) {
  const ArmResult drain =
      run_scenario(parse_scenario(streams_yaml("drain", 10), "drain.yaml")).arms[0];
  const ArmResult cancel =
      run_scenario(parse_scenario(streams_yaml("cancel", 10), "cancel.yaml")).arms[0];
  ASSERT_EQ(drain.records.size(), cancel.records.size());
  const TimeNs end = sec_to_ns(12.0);
  std::int64_t in_window = 0, straddling = 0;
  for (size_t i = 0; i < drain.records.size(); ++i) {
    const RequestRecord& d = drain.records[i];
    const RequestRecord& c = cancel.records[i];
    EXPECT_EQ(d.arrival, c.arrival);  // the client sends the same requests either way
    EXPECT_EQ(d.finished, c.finished);
    if (!d.measured) continue;
    const bool done_in_window = d.done && d.finished <= end;
    EXPECT_EQ(c.measured, done_in_window) << "request " << d.id;
    in_window += done_in_window ? 1 : 0;
    straddling += done_in_window ? 0 : 1;
  }
  ASSERT_GT(straddling, 0) << "the test needs requests in flight when the window closes";
  EXPECT_EQ(cancel.summary.completed, in_window);
  EXPECT_DOUBLE_EQ(cancel.summary.duration_s, 10.0);
  EXPECT_DOUBLE_EQ(cancel.summary.throughput_req_s, static_cast<double>(in_window) / 10.0);
  EXPECT_EQ(drain.summary.completed, in_window + straddling);
  EXPECT_GT(drain.summary.duration_s, 10.0);  // drained: the span runs past the window
}

TEST(WindowCancel, NeedsAWindowToEnd) {
  try {
    std::string yaml = streams_yaml("cancel", 0);
    yaml.replace(yaml.find("arms:"), 0, "  max_requests: 50\n");
    run_scenario(parse_scenario(yaml, "nowindow.yaml"));
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("at_window_end: cancel needs a window"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
