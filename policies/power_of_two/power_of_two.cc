#include "policies/power_of_two/power_of_two.h"

namespace fleetsim {

namespace {

PowerOfTwoPolicy::Metric parse_metric(const std::string& text) {
  if (text == "tokens") return PowerOfTwoPolicy::Metric::kTokens;
  if (text == "kv") return PowerOfTwoPolicy::Metric::kKv;
  return PowerOfTwoPolicy::Metric::kRequests;
}

}  // namespace

PowerOfTwoPolicy::PowerOfTwoPolicy(const Params& params, const PolicyContext& ctx)
    : metric_(parse_metric(params.get_string("metric"))),
      rng_(make_rng(ctx.seed, ctx.stream_name)) {}

double PowerOfTwoPolicy::load(const PodState& pod) const {
  switch (metric_) {
    case Metric::kTokens:
      return static_cast<double>(pod.inflight_tokens);
    case Metric::kKv:
      return pod.kv_usage;
    case Metric::kRequests:
      break;
  }
  return static_cast<double>(pod.inflight_requests);
}

int PowerOfTwoPolicy::pick(const Request& request, std::span<const PodState> candidates,
                           const RouteContext& ctx) {
  (void)request;
  (void)ctx;
  if (candidates.empty()) return -1;
  if (candidates.size() == 1) return candidates.front().index;
  // Two distinct positions, uniformly: the first over n, the second over the n - 1 others.
  const size_t n = candidates.size();
  const size_t first = std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  size_t second = std::uniform_int_distribution<size_t>(0, n - 2)(rng_);
  if (second >= first) ++second;
  const PodState& a = candidates[first];
  const PodState& b = candidates[second];
  return load(a) <= load(b) ? a.index : b.index;
}

namespace {

const PolicyRegistrar kPowerOfTwoRegistrar(
    "power_of_two",
    "Power of two choices: two distinct random candidates, the less loaded wins (sgl-router "
    "src/policies/power_of_two.rs)",
    ParamSpec().text("metric", "requests",
                     "load compared: 'requests' = in-flight requests (sgl-router's worker load); "
                     "'tokens' = in-flight prompt + output tokens; 'kv' = KV-cache usage",
                     {"requests", "tokens", "kv"}),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<PowerOfTwoPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
