// What each pod did, step by step, and each request's life, as a trace a person opens in
// Perfetto (ui.perfetto.dev) or chrome://tracing: the Trace Event Format's JSON
// (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU). Built from
// observer signals; recorded only when asked for, within a window and up to a number of events,
// so a long run's timeline stays as large as the part a reader looks at.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <tsl/robin_map.h>

#include "sim/fleet/observer.h"
#include "sim/fleet/timeline_options.h"

namespace fleetsim {

class Pod;
class FailureTracker;
struct RunResult;

// One engine step of a pod and the pod's state when it ended.
struct TimelineStep {
  std::int32_t pod = 0;
  TimeNs start = 0;
  TimeNs duration = 0;
  std::int32_t prefill_seqs = 0;
  std::int32_t decode_seqs = 0;
  std::int32_t tokens = 0;
  std::int32_t running = 0;    // sequences in the batch after the step
  std::int32_t waiting = 0;    // queued in the engine after the step
  std::int32_t kv_blocks = 0;  // KV blocks held (ref > 0 or pinned) after the step
};

// One attempt of a request: when it reached the gateway, was sent to a pod, was admitted by the
// engine, streamed its first token and ended (-1: did not happen).
struct TimelineRequest {
  std::int64_t id = 0;
  std::int32_t attempt = 1;
  std::int32_t pod = -1;
  TimeNs arrival = -1;
  TimeNs dispatched = -1;
  TimeNs admitted = -1;
  TimeNs first_token = -1;
  TimeNs ended = -1;
  std::int32_t prompt_tokens = 0;
  std::int32_t cached_tokens = 0;
  std::int32_t output_tokens = 0;
  std::string outcome;  // outcome_name(), or "unfinished" when the run ended first
};

// A moment on a pod's track (the gateway's probes marking it down or up) or on the whole
// fleet's (a fault, a restart).
struct TimelineMark {
  std::int32_t pod = -1;  // -1: the fleet
  TimeNs t = 0;
  std::string name;
};

struct Timeline {
  std::vector<std::string> pod_names;
  std::vector<TimelineStep> steps;
  std::vector<TimelineRequest> requests;
  std::vector<TimelineMark> marks;
  std::int64_t events = 0;  // trace events these make
  TimeNs stopped_at = -1;   // when recording stopped at max_events (-1: it did not)
};

class TimelineRecorder : public FleetObserver {
 public:
  TimelineRecorder(TimelineOptions options, const std::vector<std::unique_ptr<Pod>>& pods);

  void on_arrival(const Request& r, TimeNs t) override;
  void on_dispatch(const Request& r, int pod, TimeNs t) override;
  void on_admitted(const Request& r, int pod, std::int32_t cached, TimeNs t) override;
  void on_first_token(const Request& r, int pod, TimeNs t) override;
  void on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) override;
  void on_step(int pod, const StepPlan& plan, TimeNs start, TimeNs duration) override;
  void on_health_change(int pod, bool healthy, TimeNs t, int replica) override;

  // Ends the attempts still open at `end`, adds the faults `failures` saw, and hands the
  // timeline over.
  Timeline finish(TimeNs end, const FailureTracker* failures);

 private:
  bool in_window(TimeNs from, TimeNs to) const {
    return to >= options_.from && from <= options_.to;
  }
  // Counts `events` more; false (and recording stops) past the limit.
  bool take(std::int64_t events, TimeNs t);
  void close(TimelineRequest& r);

  TimelineOptions options_;
  const std::vector<std::unique_ptr<Pod>>& pods_;
  Timeline timeline_;
  tsl::robin_map<std::int64_t, TimelineRequest> open_;  // attempts in flight, by request id
};

// A run's timelines (its arms' that have one) as one trace: an arm is a process, the gateway
// and each pod a thread; engine steps are slices with the pod's state as counters, a request
// attempt an async slice split into its phases (at the gateway, queued in the engine, prefill,
// decode), routing decisions, probes and faults instant events. Timestamps in microseconds
// with nanosecond digits, so the text is the same on every machine.
void write_timeline_json(std::ostream& out, const RunResult& result);

}  // namespace fleetsim
