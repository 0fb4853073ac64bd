// The discrete-event core: a clock and a queue of callbacks ordered by (time, sequence number).
// Two events at the same instant run in the order they were scheduled, so a run is reproducible.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/time.h"

namespace fleetsim {

struct EventId {
  std::uint64_t seq = 0;
  bool valid() const { return seq != 0; }
};

class EventLoop {
 public:
  using Callback = std::function<void()>;

  TimeNs now() const { return now_; }
  EventId schedule_at(TimeNs at, Callback cb);
  EventId schedule_in(TimeNs delay, Callback cb) {
    return schedule_at(now_ + delay, std::move(cb));
  }
  // A background event (a health probe, a metrics scrape, a scheduled fault): it runs in time
  // order like any other, but run() returns once only background events are left, so periodic
  // machinery never keeps a finished simulation alive.
  EventId schedule_background_at(TimeNs at, Callback cb);
  EventId schedule_background_in(TimeNs delay, Callback cb) {
    return schedule_background_at(now_ + delay, std::move(cb));
  }
  // Cancels a pending event; returns false when it already ran or was cancelled.
  bool cancel(EventId id);
  // Runs events until no foreground event is left or the next event lies after `until`. Throws
  // StoppedError when the thread's stop flag is raised (sim/stop.h; polled every
  // kStopPollEvents events: microseconds of a busy run, and a second or so where a policy
  // written in Python takes tens of milliseconds an event).
  void run(TimeNs until = INT64_MAX);
  static constexpr std::uint64_t kStopPollEvents = 16;
  // Stops run() after the current event.
  void stop() { stopped_ = true; }
  std::uint64_t events_run() const { return events_run_; }
  std::size_t pending() const { return queue_.size() - cancelled_in_queue_; }
  // Pending events that keep run() going (all but background ones).
  std::size_t pending_foreground() const { return foreground_; }

 private:
  EventId push(TimeNs at, Callback cb, bool background);

  struct Entry {
    TimeNs at;
    std::uint64_t seq;
    Callback cb;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, Later> queue_;
  // One bit per event ever scheduled (index seq - 1): set once it ran or was cancelled. A bit
  // vector instead of hash sets keeps the heap the only per-event cost (see bench/README.md).
  std::vector<bool> settled_;
  std::vector<bool> background_;
  std::size_t foreground_ = 0;
  std::size_t cancelled_in_queue_ = 0;
  TimeNs now_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t events_run_ = 0;
  bool stopped_ = false;
};

}  // namespace fleetsim
