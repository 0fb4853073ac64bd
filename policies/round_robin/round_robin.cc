#include "policies/round_robin/round_robin.h"

#include <limits>

namespace fleetsim {

RoundRobinPolicy::RoundRobinPolicy(const Params& params, const PolicyContext& ctx) {
  (void)params;
  (void)ctx;
}

int RoundRobinPolicy::pick(const Request& request, std::span<const PodState> candidates,
                           const RouteContext& ctx) {
  (void)request;
  (void)ctx;
  if (candidates.empty()) return -1;
  // Smallest index >= next_ (the rotation continues), else the smallest index (wrap around).
  int at_or_after = std::numeric_limits<int>::max();
  int smallest = std::numeric_limits<int>::max();
  for (const auto& pod : candidates) {
    if (pod.index >= next_ && pod.index < at_or_after) at_or_after = pod.index;
    if (pod.index < smallest) smallest = pod.index;
  }
  const int chosen = at_or_after != std::numeric_limits<int>::max() ? at_or_after : smallest;
  next_ = chosen + 1;
  return chosen;
}

namespace {

const PolicyRegistrar kRoundRobinRegistrar(
    "round_robin",
    "Round robin: cycles through the healthy pods in pod-index order (a gateway's default rule)",
    ParamSpec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<RoundRobinPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
