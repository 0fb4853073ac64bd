#include "sim/event_loop.h"

#include "sim/errors.h"

namespace fleetsim {

EventId EventLoop::schedule_at(TimeNs at, Callback cb) {
  if (at < now_) {
    throw InternalError("event scheduled in the past: " + std::to_string(at) + " < " +
                        std::to_string(now_));
  }
  const std::uint64_t seq = next_seq_++;
  queue_.push(Entry{at, seq, std::move(cb)});
  pending_ids_.insert(seq);
  return EventId{seq};
}

bool EventLoop::cancel(EventId id) {
  if (!id.valid() || pending_ids_.erase(id.seq) == 0) return false;
  cancelled_.insert(id.seq);
  return true;
}

void EventLoop::run(TimeNs until) {
  stopped_ = false;
  while (!queue_.empty() && !stopped_) {
    if (queue_.top().at > until) break;
    // priority_queue::top is const; the entry is popped right after, so moving out is safe.
    Entry e = std::move(const_cast<Entry&>(queue_.top()));
    queue_.pop();
    if (cancelled_.erase(e.seq) > 0) continue;
    pending_ids_.erase(e.seq);
    now_ = e.at;
    ++events_run_;
    e.cb();
  }
}

}  // namespace fleetsim
