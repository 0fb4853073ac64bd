#include "sim/fleet/gpu_share.h"

#include <algorithm>

namespace fleetsim {
namespace {

constexpr std::int64_t kSms = 0;
constexpr std::int64_t kDram = 1;

}  // namespace

GpuShare::JobId GpuShare::start(TimeNs solo_ns, GpuDemand demand, std::function<void()> done) {
  if (mode_ == GpuSharing::kTimeSlicing) {
    return time_.start({{kSms, 1.0}}, solo_ns, std::move(done));
  }
  const double compute = std::clamp(demand.compute, 0.0, 1.0);
  std::vector<FairShare::Use> uses{{kSms, compute}, {kDram, std::clamp(demand.memory, 0.0, 1.0)}};
  // The SM cap is a link of the job's own: its compute may fill sm_fraction of it, no more.
  if (sm_fraction_ < 1.0 && compute > 0) {
    uses.push_back({next_cap_link_++, compute / sm_fraction_});
  }
  return time_.start(std::move(uses), solo_ns, std::move(done));
}

}  // namespace fleetsim
