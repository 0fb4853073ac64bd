// Round robin over the pods the gateway believes healthy, in pod-index order.
#pragma once

#include <span>

#include "policies/policy.h"

namespace fleetsim {

class RoundRobinPolicy : public RoutingPolicy {
 public:
  RoundRobinPolicy(const Params& params, const PolicyContext& ctx);

  // Picks the candidate with the smallest pod index at or after the counter, wrapping to the
  // smallest index; the counter then moves past the chosen pod. Keying the counter on the pod
  // index (not on a position in the candidate list) keeps the rotation fair when the list
  // shrinks or grows because a pod went down or came back.
  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }

 private:
  int next_ = 0;  // pod index the next pick starts from
};

}  // namespace fleetsim
