// Least outstanding requests: the candidate with the fewest requests this gateway has dispatched
// and not yet seen finish (PodState::inflight_requests). Modelled on AIBrix
// pkg/plugins/gateway/algorithms/least_request.go (selectTargetPodWithLeastRequestCount: the
// minimum of the gateway's realtime running-request count, ties drawn uniformly at random).
#pragma once

#include <span>

#include "policies/common/pick.h"
#include "policies/policy.h"

namespace fleetsim {

class LeastOutstandingPolicy : public RoutingPolicy {
 public:
  LeastOutstandingPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }

 private:
  TieBreak tie_;
  Rng rng_;
};

}  // namespace fleetsim
