#include "policies/random/random.h"

namespace fleetsim {

RandomPolicy::RandomPolicy(const Params& params, const PolicyContext& ctx)
    : rng_(make_rng(ctx.seed, ctx.stream_name)) {
  (void)params;
}

int RandomPolicy::pick(const Request& request, std::span<const PodState> candidates,
                       const RouteContext& ctx) {
  (void)request;
  (void)ctx;
  if (candidates.empty()) return -1;
  std::uniform_int_distribution<size_t> any(0, candidates.size() - 1);
  return candidates[any(rng_)].index;
}

namespace {

const PolicyRegistrar kRandomRegistrar(
    "random", "Random: a candidate drawn uniformly per request (sgl-router src/policies/random.rs)",
    ParamSpec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<RandomPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
