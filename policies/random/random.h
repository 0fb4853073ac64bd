// Random: each request goes to a candidate drawn uniformly, from the policy's own seeded stream.
// Modelled on sgl-project/sglang sgl-router src/policies/random.rs (uniform over the healthy
// workers).
#pragma once

#include <span>

#include "policies/policy.h"

namespace fleetsim {

class RandomPolicy : public RoutingPolicy {
 public:
  RandomPolicy(const Params& params, const PolicyContext& ctx);

  // One draw of std::uniform_int_distribution over the candidates' positions per request.
  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }

 private:
  Rng rng_;  // make_rng(seed, stream_name): the arm's own stream, so arms never share draws
};

}  // namespace fleetsim
