#include "policies/hrw/hrw.h"

#include <xxhash.h>

namespace fleetsim {

HrwPolicy::HrwPolicy(const Params& params, const PolicyContext& ctx)
    : key_(parse_request_key(params.get_string("key"))),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/nokey")) {}

std::uint64_t HrwPolicy::score(std::uint64_t key, const std::string& pod_name) {
  return XXH3_64bits_withSeed(pod_name.data(), pod_name.size(), key);
}

int HrwPolicy::choose(std::uint64_t key, std::span<const PodState> candidates) {
  if (candidates.empty()) return -1;
  const PodState* best = nullptr;
  std::uint64_t best_score = 0;
  for (const auto& pod : candidates) {
    const std::uint64_t s = score(key, pod.name);
    if (best == nullptr || s > best_score || (s == best_score && pod.index < best->index)) {
      best = &pod;
      best_score = s;
    }
  }
  return best->index;
}

int HrwPolicy::pick(const Request& request, std::span<const PodState> candidates,
                    const RouteContext& ctx) {
  (void)ctx;
  if (candidates.empty()) return -1;
  if (!has_request_key(request, key_)) {
    std::uniform_int_distribution<size_t> any(0, candidates.size() - 1);
    return candidates[any(rng_)].index;
  }
  return choose(request_key_hash(request, key_), candidates);
}

namespace {

ParamSpec hrw_spec() {
  ParamSpec spec;
  return add_request_key_param(spec);
}

const PolicyRegistrar kHrwRegistrar(
    "hrw",
    "Rendezvous (HRW) hashing on a request key: argmax over candidates of xxhash(key, pod "
    "name) (Envoy load_balancing_policies/rendezvous_hash)",
    hrw_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<HrwPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
