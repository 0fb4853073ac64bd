#include "policies/least_kv/least_kv.h"

namespace fleetsim {

LeastKvPolicy::LeastKvPolicy(const Params& params, const PolicyContext& ctx)
    : tie_(parse_tie_break(params.get_string("tie_break"))),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/tie")) {}

int LeastKvPolicy::pick(const Request& request, std::span<const PodState> candidates,
                        const RouteContext& ctx) {
  (void)request;
  (void)ctx;
  if (candidates.empty()) return -1;
  const size_t i = argmin_candidate(
      candidates, [](const PodState& p) { return p.kv_usage; }, tie_, rng_);
  return candidates[i].index;
}

namespace {

ParamSpec least_kv_spec() {
  ParamSpec spec;
  return add_tie_break_param(spec, "KV usage (idle pods all read 0)");
}

const PolicyRegistrar kLeastKvRegistrar(
    "least_kv",
    "Least KV-cache usage: lowest fraction of KV blocks in use (AIBrix least-kv-cache, "
    "pkg/plugins/gateway/algorithms/least_kv_cache.go)",
    least_kv_spec(),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<LeastKvPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
