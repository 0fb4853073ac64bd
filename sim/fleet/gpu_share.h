// One GPU shared by co-located pods, in one of two ways a Kubernetes device plug-in offers:
//  - time-slicing: separate CUDA contexts, whose kernels never run at once (the GPU switches
//    between contexts every few milliseconds). As a fluid, processor sharing: while k steps
//    have GPU work left, each is served at 1/k of its solo rate.
//  - MPS: one shared context, whose kernels run at once on different SMs. A step's kernels keep
//    the SMs' arithmetic and the DRAM busy for a fraction of its time each (GpuDemand), and the
//    steps under way share the two max-min fairly, so a compute-bound prefill and a
//    memory-bound decode overlap where time-slicing would take turns. Each pod may use at most
//    `sm_fraction` of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; NVIDIA's device plug-in sets
//    100 / replicas, cmd/mps-control-daemon/mps/daemon.go of NVIDIA/k8s-device-plugin), which
//    caps its compute even when its neighbours are idle.
// Rates are recomputed whenever a step's GPU work starts or ends: a step that began alone slows
// down when a neighbour starts, and speeds up when the neighbour is done. Not modelled: the
// cost of switching contexts, the SM occupancy that small kernels leave idle on their own, and
// any bandwidth lost to an SM cap.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "models/cost_model.h"
#include "sim/fleet/fair_share.h"
#include "sim/fleet/gpu_sharing.h"

namespace fleetsim {

class GpuShare {
 public:
  using JobId = FairShare::JobId;  // 0: no job

  explicit GpuShare(EventLoop& loop, GpuSharing mode = GpuSharing::kTimeSlicing,
                    double sm_fraction = 1.0)
      : time_(loop), mode_(mode), sm_fraction_(sm_fraction) {}

  // Starts `solo_ns` of GPU work (its duration on an idle GPU) keeping `demand` busy; `done`
  // runs, as an event, once it has been served.
  JobId start(TimeNs solo_ns, GpuDemand demand, std::function<void()> done);
  // Drops an unfinished job (its pod crashed); false when it is not running.
  bool cancel(JobId id) { return time_.cancel(id); }
  // Jobs with GPU work left.
  int running() const { return time_.jobs(); }
  // The fraction of its solo speed a job runs at now (0 when it is not running).
  double rate(JobId id) const { return time_.rate(id); }

 private:
  FairShare time_;
  GpuSharing mode_;
  double sm_fraction_;
  std::int64_t next_cap_link_ = 2;  // 0 and 1: the SMs and the DRAM; then one per job's SM cap
};

}  // namespace fleetsim
