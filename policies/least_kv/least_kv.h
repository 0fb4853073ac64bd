// Least KV-cache usage: the candidate whose KV blocks are the least used (PodState::kv_usage,
// vllm:kv_cache_usage_perc). Modelled on AIBrix pkg/plugins/gateway/algorithms/least_kv_cache.go
// (GPU KV usage plus CPU KV usage, which vLLM V1 no longer reports, lowest wins; RouteByScore
// draws among equal scores). Here the usage is read fresh at every pick: AIBrix scrapes it
// periodically, so this is the policy's best case (see docs/policies.md, stale signals).
#pragma once

#include <span>

#include "policies/common/pick.h"
#include "policies/policy.h"

namespace fleetsim {

class LeastKvPolicy : public RoutingPolicy {
 public:
  LeastKvPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;

 private:
  TieBreak tie_;
  Rng rng_;
};

}  // namespace fleetsim
