#include "sim/event_loop.h"

#include "sim/stop.h"

#include "sim/errors.h"

namespace fleetsim {

EventId EventLoop::schedule_at(TimeNs at, Callback cb) { return push(at, std::move(cb), false); }

EventId EventLoop::schedule_background_at(TimeNs at, Callback cb) {
  return push(at, std::move(cb), true);
}

EventId EventLoop::push(TimeNs at, Callback cb, bool background) {
  if (at >= kTimeLimit) {  // a saturated conversion lands exactly on the limit
    throw TimeLimitError(
        "simulated time would pass " + std::to_string(kTimeLimit / kNsPerSec / 31'557'600) +
        " years: a duration, latency, rate or slowdown in the scenario is far too large (a "
        "fault's at_s, a latency in ms, a cost-model coefficient, a slow_pod factor...)");
  }
  if (at < now_) {
    throw InternalError("event scheduled in the past: " + std::to_string(at) + " < " +
                        std::to_string(now_));
  }
  const std::uint64_t seq = next_seq_++;
  queue_.push(Entry{at, seq, std::move(cb)});
  settled_.push_back(false);
  background_.push_back(background);
  if (!background) ++foreground_;
  return EventId{seq};
}

bool EventLoop::cancel(EventId id) {
  if (!id.valid() || id.seq >= next_seq_ || settled_[id.seq - 1]) return false;
  settled_[id.seq - 1] = true;
  ++cancelled_in_queue_;
  if (!background_[id.seq - 1]) --foreground_;
  return true;
}

void EventLoop::run(TimeNs until) {
  stopped_ = false;
  const StopFlag& stop = current_stop_flag();
  while (!queue_.empty() && !stopped_ && foreground_ > 0) {
    if (queue_.top().at > until) break;
    if (events_run_ % kStopPollEvents == 0 && stop.requested()) throw StoppedError();
    // priority_queue::top is const; the entry is popped right after, so moving out is safe.
    Entry e = std::move(const_cast<Entry&>(queue_.top()));
    queue_.pop();
    if (settled_[e.seq - 1]) {
      --cancelled_in_queue_;
      continue;
    }
    settled_[e.seq - 1] = true;
    if (!background_[e.seq - 1]) --foreground_;
    now_ = e.at;
    ++events_run_;
    e.cb();
  }
}

}  // namespace fleetsim
