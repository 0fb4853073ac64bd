#include "sim/fleet/timeline.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "sim/fleet/failures.h"
#include "sim/fleet/pod.h"
#include "sim/fleet/runner.h"

namespace fleetsim {
namespace {

// Trace events a record becomes when written: a step is a slice and a counter sample; an attempt
// is its async slice's begin and end, up to four phases' and a routing mark.
constexpr std::int64_t kStepEvents = 2;
constexpr std::int64_t kRequestEvents = 11;

}  // namespace

TimelineRecorder::TimelineRecorder(TimelineOptions options,
                                   const std::vector<std::unique_ptr<Pod>>& pods)
    : options_(options), pods_(pods) {
  for (const auto& p : pods) timeline_.pod_names.push_back(p->name());
}

bool TimelineRecorder::take(std::int64_t events, TimeNs t) {
  if (timeline_.stopped_at >= 0) return false;
  if (timeline_.events + events > options_.max_events) {
    timeline_.stopped_at = t;
    return false;
  }
  timeline_.events += events;
  return true;
}

void TimelineRecorder::on_arrival(const Request& r, TimeNs t) {
  if (timeline_.stopped_at >= 0 || t > options_.to) return;
  TimelineRequest& open = open_[r.id];
  open = TimelineRequest{};
  open.id = r.id;
  open.attempt = r.attempt;
  open.arrival = t;
  open.prompt_tokens = r.prompt_tokens;
  open.output_tokens = r.output_tokens;
}

void TimelineRecorder::on_dispatch(const Request& r, int pod, TimeNs t) {
  const auto it = open_.find(r.id);
  if (it == open_.end()) return;
  it.value().pod = pod;
  it.value().dispatched = t;
}

void TimelineRecorder::on_admitted(const Request& r, int, std::int32_t cached, TimeNs t) {
  const auto it = open_.find(r.id);
  if (it == open_.end() || it->second.admitted >= 0) return;
  it.value().admitted = t;
  it.value().cached_tokens = cached;
}

void TimelineRecorder::on_first_token(const Request& r, int, TimeNs t) {
  const auto it = open_.find(r.id);
  if (it != open_.end() && it->second.first_token < 0) it.value().first_token = t;
}

void TimelineRecorder::on_finished(const Request& r, int, Outcome outcome, TimeNs t) {
  const auto it = open_.find(r.id);
  if (it == open_.end()) return;
  TimelineRequest done = std::move(it.value());
  open_.erase(it);
  done.ended = t;
  done.outcome = outcome_name(outcome);
  close(done);
}

void TimelineRecorder::close(TimelineRequest& r) {
  if (in_window(r.arrival, r.ended) && take(kRequestEvents, r.ended)) {
    timeline_.requests.push_back(std::move(r));
  }
}

void TimelineRecorder::on_step(int pod, const StepPlan& plan, TimeNs start, TimeNs duration) {
  if (!in_window(start, start + duration) || !take(kStepEvents, start)) return;
  const Engine& engine = pods_[static_cast<size_t>(pod)]->engine();
  const KvBlockCache& cache = engine.cache();
  timeline_.steps.push_back({pod, start, duration, plan.num_prefill_seqs, plan.num_decode_seqs,
                             plan.num_tokens, engine.num_running(), engine.num_waiting(),
                             cache.num_blocks() - cache.num_free_blocks()});
}

void TimelineRecorder::on_health_change(int pod, bool healthy, TimeNs t, int replica) {
  if (!in_window(t, t) || !take(1, t)) return;
  std::string name = healthy ? "marked up" : "marked down";
  if (replica > 0) name += fmt::format(" by gateway replica {}", replica);
  timeline_.marks.push_back({pod, t, std::move(name)});
}

Timeline TimelineRecorder::finish(TimeNs end, const FailureTracker* failures) {
  std::vector<TimelineRequest> unfinished;
  for (auto& [id, r] : open_) unfinished.push_back(r);
  // By id, so the order does not depend on the map's.
  std::sort(unfinished.begin(), unfinished.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  open_.clear();
  for (TimelineRequest& r : unfinished) {
    r.ended = end;
    r.outcome = "unfinished";
    close(r);
  }
  if (failures != nullptr) {
    for (const auto& f : failures->faults()) {
      if (f.at <= end && in_window(f.at, f.at) && take(1, f.at)) {
        timeline_.marks.push_back({-1, f.at, f.kind + " " + f.target});
      }
      if (f.back_at >= 0 && f.back_at <= end && in_window(f.back_at, f.back_at) &&
          take(1, f.back_at)) {
        timeline_.marks.push_back({-1, f.back_at, f.target + " back"});
      }
    }
  }
  if (timeline_.stopped_at >= 0) {
    timeline_.marks.push_back(
        {-1, timeline_.stopped_at, "the timeline stopped recording here (--timeline-max-events)"});
  }
  return std::move(timeline_);
}

namespace {

// Microseconds, as the format counts time, with the nanoseconds as exact decimals.
std::string us(TimeNs ns) { return fmt::format("{}.{:03d}", ns / 1000, ns % 1000); }

std::string quoted(const std::string& text) { return nlohmann::json(text).dump(); }

class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out) : out_(out) {}
  void event(const std::string& body) {
    out_ << (first_ ? "\n" : ",\n") << "{" << body << "}";
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

void write_arm(TraceWriter& w, int pid, const ArmResult& arm) {
  const Timeline& t = *arm.timeline;
  const auto thread_of = [](std::int32_t pod) { return pod + 1; };  // thread 0: the gateway
  w.event(fmt::format(R"("ph":"M","pid":{},"name":"process_name","args":{{"name":{}}})", pid,
                      quoted("arm " + arm.name + " (" + arm.policy + ")")));
  w.event(fmt::format(R"("ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}})",
                      pid, pid));
  w.event(fmt::format(
      R"("ph":"M","pid":{},"tid":0,"name":"thread_name","args":{{"name":"gateway"}})", pid));
  for (size_t p = 0; p < t.pod_names.size(); ++p) {
    const int tid = thread_of(static_cast<std::int32_t>(p));
    w.event(fmt::format(R"("ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}})",
                        pid, tid, quoted(t.pod_names[p])));
    w.event(fmt::format(
        R"("ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}})", pid,
        tid, tid));
  }
  for (const TimelineStep& s : t.steps) {
    w.event(
        fmt::format(R"("ph":"X","pid":{},"tid":{},"name":"step","cat":"engine","ts":{},"dur":{},)"
                    R"("args":{{"prefill_seqs":{},"decode_seqs":{},"tokens":{}}})",
                    pid, thread_of(s.pod), us(s.start), us(s.duration), s.prefill_seqs,
                    s.decode_seqs, s.tokens));
    w.event(fmt::format(
        R"("ph":"C","pid":{},"name":{},"ts":{},"args":{{"running":{},"waiting":{},"kv_blocks":{}}})",
        pid, quoted(t.pod_names[static_cast<size_t>(s.pod)]), us(s.start + s.duration), s.running,
        s.waiting, s.kv_blocks));
  }
  for (const TimelineRequest& r : t.requests) {
    const std::string id = fmt::format("{}.{}", r.id, r.attempt);
    const std::string name = quoted(fmt::format("request {}", r.id));
    const std::string pod =
        r.pod >= 0 ? quoted(t.pod_names[static_cast<size_t>(r.pod)]) : std::string("null");
    w.event(fmt::format(R"("ph":"b","pid":{},"cat":"request","id":"{}","name":{},"ts":{},)"
                        R"("args":{{"attempt":{},"pod":{},"prompt_tokens":{},"cached_tokens":{},)"
                        R"("output_tokens":{},"outcome":{}}})",
                        pid, id, name, us(r.arrival), r.attempt, pod, r.prompt_tokens,
                        r.cached_tokens, r.output_tokens, quoted(r.outcome)));
    // The phases that happened, each until the next one began (or the attempt ended).
    const TimeNs marks[] = {r.arrival, r.dispatched, r.admitted, r.first_token};
    const char* phases[] = {"at the gateway", "queued", "prefill", "decode"};
    for (size_t k = 0; k < 4; ++k) {
      if (marks[k] < 0) continue;
      TimeNs until = r.ended;
      for (size_t n = k + 1; n < 4; ++n) {
        if (marks[n] >= 0) {
          until = marks[n];
          break;
        }
      }
      if (until <= marks[k]) continue;
      w.event(fmt::format(R"("ph":"b","pid":{},"cat":"request","id":"{}","name":"{}","ts":{})", pid,
                          id, phases[k], us(marks[k])));
      w.event(fmt::format(R"("ph":"e","pid":{},"cat":"request","id":"{}","name":"{}","ts":{})", pid,
                          id, phases[k], us(until)));
    }
    w.event(fmt::format(R"("ph":"e","pid":{},"cat":"request","id":"{}","name":{},"ts":{})", pid, id,
                        name, us(r.ended)));
    if (r.dispatched >= 0) {
      w.event(fmt::format(
          R"("ph":"i","s":"t","pid":{},"tid":0,"name":"route","ts":{},"args":{{"request":{},"pod":{}}})",
          pid, us(r.dispatched), r.id, pod));
    }
  }
  for (const TimelineMark& m : t.marks) {
    if (m.pod >= 0) {
      w.event(fmt::format(R"("ph":"i","s":"t","pid":{},"tid":{},"name":{},"ts":{})", pid,
                          thread_of(m.pod), quoted(m.name), us(m.t)));
    } else {
      w.event(fmt::format(R"("ph":"i","s":"p","pid":{},"tid":0,"name":{},"ts":{})", pid,
                          quoted(m.name), us(m.t)));
    }
  }
}

}  // namespace

void write_timeline_json(std::ostream& out, const RunResult& result) {
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":" << quoted(result.scenario)
      << ",\"seed\":\"" << result.seed << "\"},\"traceEvents\":[";
  TraceWriter w(out);
  int pid = 0;
  for (const ArmResult& arm : result.arms) {
    ++pid;
    if (arm.timeline) write_arm(w, pid, arm);
  }
  out << "\n]}\n";
}

}  // namespace fleetsim
