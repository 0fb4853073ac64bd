// How co-located pods share their GPU (gpu_share.h): by time-slicing, a Kubernetes device
// plug-in's default, or through MPS, whose kernels of several processes run at once.
#pragma once

#include <string>
#include <vector>

namespace fleetsim {

enum class GpuSharing { kTimeSlicing, kMps };

// The names a scenario uses (time_slicing, mps), in enum order.
inline const std::vector<std::string>& gpu_sharing_names() {
  static const std::vector<std::string> kNames = {"time_slicing", "mps"};
  return kNames;
}

}  // namespace fleetsim
