#include "policies/least_outstanding/least_outstanding.h"

namespace fleetsim {

LeastOutstandingPolicy::LeastOutstandingPolicy(const Params& params, const PolicyContext& ctx)
    : tie_(parse_tie_break(params.get_string("tie_break"))),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/tie")) {}

int LeastOutstandingPolicy::pick(const Request& request, std::span<const PodState> candidates,
                                 const RouteContext& ctx) {
  (void)request;
  (void)ctx;
  if (candidates.empty()) return -1;
  const size_t i = argmin_candidate(
      candidates, [](const PodState& p) { return static_cast<double>(p.inflight_requests); }, tie_,
      rng_);
  return candidates[i].index;
}

namespace {

ParamSpec least_outstanding_spec() {
  ParamSpec spec;
  return add_tie_break_param(
      spec, "in-flight count (AIBrix least_request.go draws uniformly among them)");
}

const PolicyRegistrar kLeastOutstandingRegistrar(
    "least_outstanding",
    "Least outstanding requests: fewest in-flight requests from this gateway (AIBrix "
    "least-request, pkg/plugins/gateway/algorithms/least_request.go)",
    least_outstanding_spec(),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<LeastOutstandingPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
