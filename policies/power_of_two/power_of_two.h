// Power of two choices: draw two distinct candidates uniformly, send to the less loaded one.
// Modelled on sgl-project/sglang sgl-router src/policies/power_of_two.rs: choose_multiple(2)
// from the healthy workers, the first drawn wins when loads are equal (load1 <= load2), a single
// candidate is taken as is. Mitzenmacher, "The Power of Two Choices in Randomized Load
// Balancing" (IEEE TPDS 2001).
#pragma once

#include <span>

#include "policies/policy.h"

namespace fleetsim {

class PowerOfTwoPolicy : public RoutingPolicy {
 public:
  enum class Metric { kRequests, kTokens, kKv };

  PowerOfTwoPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return metric_ == Metric::kKv; }

  // The load compared between the two draws.
  double load(const PodState& pod) const;

 private:
  Metric metric_;
  Rng rng_;
};

}  // namespace fleetsim
