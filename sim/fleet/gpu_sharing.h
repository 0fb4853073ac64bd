// How co-located pods share their GPU: by time-slicing, a Kubernetes device plug-in's default,
// or through MPS, whose kernels of several processes run at once (both gpu_share.h); or cut
// into MIG instances, a fixed slice each (models/mig.h).
#pragma once

#include <string>
#include <vector>

namespace fleetsim {

enum class GpuSharing { kTimeSlicing, kMps, kMig };

// The names a scenario uses (time_slicing, mps, mig), in enum order.
inline const std::vector<std::string>& gpu_sharing_names() {
  static const std::vector<std::string> kNames = {"time_slicing", "mps", "mig"};
  return kNames;
}

}  // namespace fleetsim
