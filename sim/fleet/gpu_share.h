// One GPU time-sliced by co-located pods (separate CUDA contexts without MPS: the kernels of two
// contexts never run at once, the GPU switches between them every few milliseconds). As a fluid
// model, processor sharing: while k steps have GPU work left, each is served at 1/k of its solo
// rate, and the shares are recomputed whenever a step's GPU work starts or ends, so a step that
// began alone slows down when a neighbour starts, and speeds up when the neighbour is done.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/event_loop.h"
#include "sim/time.h"

namespace fleetsim {

class GpuShare {
 public:
  using JobId = std::uint64_t;  // 0: no job

  explicit GpuShare(EventLoop& loop) : loop_(loop) {}
  GpuShare(const GpuShare&) = delete;
  GpuShare& operator=(const GpuShare&) = delete;

  // Starts `solo_ns` of GPU work (its duration on an idle GPU); `done` runs, as an event, once
  // it has been served. Work of 0 ends at once, through an event as well.
  JobId start(TimeNs solo_ns, std::function<void()> done);
  // Drops an unfinished job (its pod crashed); false when it is not running.
  bool cancel(JobId id);
  // Jobs with GPU work left.
  int running() const { return static_cast<int>(jobs_.size()); }

 private:
  struct Job {
    JobId id;
    TimeNs remaining;  // solo nanoseconds of work left
    std::function<void()> done;
  };
  // Charges the time since the last change to every running job, at its share.
  void advance();
  // Schedules the next completion under the current shares.
  void reschedule();
  void complete_due();

  EventLoop& loop_;
  std::vector<Job> jobs_;  // in start order, so simultaneous completions run in that order
  TimeNs last_ = 0;
  JobId next_id_ = 1;
  EventId next_done_;
};

}  // namespace fleetsim
