// One GPU time-sliced by co-located pods (separate CUDA contexts without MPS: the kernels of two
// contexts never run at once, the GPU switches between them every few milliseconds). As a fluid
// model, processor sharing: while k steps have GPU work left, each is served at 1/k of its solo
// rate, recomputed whenever a step's GPU work starts or ends, so a step that began alone slows
// down when a neighbour starts, and speeds up when the neighbour is done.
#pragma once

#include <functional>
#include <utility>

#include "sim/fleet/fair_share.h"

namespace fleetsim {

class GpuShare {
 public:
  using JobId = FairShare::JobId;  // 0: no job

  explicit GpuShare(EventLoop& loop) : time_(loop) {}

  // Starts `solo_ns` of GPU work (its duration on an idle GPU); `done` runs, as an event, once
  // it has been served.
  JobId start(TimeNs solo_ns, std::function<void()> done) {
    return time_.start({{0, 1.0}}, solo_ns, std::move(done));
  }
  // Drops an unfinished job (its pod crashed); false when it is not running.
  bool cancel(JobId id) { return time_.cancel(id); }
  // Jobs with GPU work left.
  int running() const { return time_.jobs(); }

 private:
  FairShare time_;  // one link: the GPU's time
};

}  // namespace fleetsim
